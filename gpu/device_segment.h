// DeviceSegment: a client's GPU allocation opened in batond, closed on
// destruction. Two ways in (gpu/device_memory.h, Sharing): a legacy CUDA
// IPC handle (cudaMalloc memory), or a POSIX fd of a cuMemCreate
// allocation, which batond maps itself (gpu/vmm_mapping.h). Opening is
// expensive (it maps the memory into this process), so a session opens each
// allocation once and keeps it until the client frees it or disconnects.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "gpu/device_memory.h"
#include "gpu/vmm_mapping.h"

namespace baton::gpu {

class DeviceSegment {
 public:
  // Opens the allocation `handle` on the device named `uuid`. `claimed_size`
  // is what the client says the allocation holds; it must not exceed what
  // the driver reports after opening.
  static Status Open(const IpcHandle& handle, const DeviceUuid& uuid, uint64_t claimed_size,
                     std::unique_ptr<DeviceSegment>* out);
  // Maps the cuMemCreate allocations the client passed as `fds`, side by
  // side, the first `sizes[i]` bytes of each, on the device named `uuid`.
  static Status Import(const std::vector<int>& fds, const std::vector<uint64_t>& sizes, const DeviceUuid& uuid,
                       std::unique_ptr<DeviceSegment>* out);
  ~DeviceSegment();
  DeviceSegment(const DeviceSegment&) = delete;
  DeviceSegment& operator=(const DeviceSegment&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  int device() const { return device_; }

 private:
  DeviceSegment(uint8_t* data, uint64_t size, int device) : data_(data), size_(size), device_(device) {}

  uint8_t* data_;
  uint64_t size_;
  int device_;
  std::unique_ptr<VmmMapping> mapping_;  // Import; null for a CUDA IPC handle
};

// This process's ordinal of the device named `uuid`.
Status FindDevice(const DeviceUuid& uuid, int* device);

}  // namespace baton::gpu
