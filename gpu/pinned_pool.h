// PinnedPool: page-locked host memory for staging GPU buffers (copies from
// and to pinned memory run at full PCIe/NVLink speed and need no bounce
// buffer in the driver). Pinning is slow (milliseconds per call), so
// buffers are kept and reused: sizes are rounded up to a power of two and
// free buffers wait in per-size lists, up to `max_cached_bytes`.
//
// Memory is mmap'ed and registered with cudaHostRegister (portable, so
// every device and context can use it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace baton::gpu {

class PinnedPool;

// One registered region; unregistered and unmapped on destruction.
class PinnedRegion {
 public:
  static Status Create(uint64_t bytes, std::unique_ptr<PinnedRegion>* out);
  ~PinnedRegion();
  PinnedRegion(const PinnedRegion&) = delete;
  PinnedRegion& operator=(const PinnedRegion&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  PinnedRegion(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  uint64_t size_;
};

// A region on loan from the pool; goes back to it on destruction.
class PinnedLease {
 public:
  PinnedLease() = default;
  PinnedLease(std::shared_ptr<PinnedPool> pool, std::unique_ptr<PinnedRegion> region)
      : pool_(std::move(pool)), region_(std::move(region)) {}
  ~PinnedLease();
  PinnedLease(PinnedLease&&) = default;
  PinnedLease& operator=(PinnedLease&& other) noexcept;

  uint8_t* data() const { return region_ ? region_->data() : nullptr; }

 private:
  std::shared_ptr<PinnedPool> pool_;  // outlives every lease
  std::unique_ptr<PinnedRegion> region_;
};

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  static std::shared_ptr<PinnedPool> Create(uint64_t max_cached_bytes) {
    return std::shared_ptr<PinnedPool>(new PinnedPool(max_cached_bytes));
  }

  // A pinned buffer of at least `bytes` bytes.
  Status Acquire(uint64_t bytes, PinnedLease* out);
  uint64_t cached_bytes() const;

 private:
  friend class PinnedLease;
  explicit PinnedPool(uint64_t max_cached_bytes) : max_cached_(max_cached_bytes) {}
  void Return(std::unique_ptr<PinnedRegion> region);

  const uint64_t max_cached_;
  mutable std::mutex mu_;
  std::multimap<uint64_t, std::unique_ptr<PinnedRegion>> free_;  // by size
  uint64_t cached_ = 0;
};

}  // namespace baton::gpu
