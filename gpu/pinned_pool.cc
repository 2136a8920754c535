#include "gpu/pinned_pool.h"

#include <algorithm>
#include <bit>

namespace baton::gpu {

PinnedLease::~PinnedLease() {
  if (pool_ && region_) pool_->Return(std::move(region_));
}

PinnedLease& PinnedLease::operator=(PinnedLease&& other) noexcept {
  if (this != &other) {
    if (pool_ && region_) pool_->Return(std::move(region_));
    pool_ = std::move(other.pool_);
    region_ = std::move(other.region_);
  }
  return *this;
}

Status PinnedPool::Acquire(uint64_t bytes, PinnedLease* out) {
  const uint64_t size = std::bit_ceil(std::max<uint64_t>(bytes, 4096));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end()) {
      std::unique_ptr<PinnedRegion> region = std::move(it->second);
      free_.erase(it);
      cached_ -= size;
      *out = PinnedLease(shared_from_this(), std::move(region));
      return Status::Ok();
    }
  }
  std::unique_ptr<PinnedRegion> region;
  BATON_RETURN_IF_ERROR(PinnedRegion::Create(size, &region));
  *out = PinnedLease(shared_from_this(), std::move(region));
  return Status::Ok();
}

void PinnedPool::Return(std::unique_ptr<PinnedRegion> region) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ + region->size() > max_cached_) return;  // unpinned and unmapped here
  cached_ += region->size();
  free_.emplace(region->size(), std::move(region));
}

uint64_t PinnedPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace baton::gpu
