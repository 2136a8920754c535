#include "daemon/fast_path_region.h"

#include <algorithm>
#include <cstring>

#include "common/futex.h"

namespace baton {

Status FastPathRegion::Create(int nranks, uint64_t slot_bytes, std::chrono::milliseconds timeout,
                              std::unique_ptr<FastPathRegion>* out) {
  if (nranks < 1 || nranks > ipc::kFastPathMaxRanks || slot_bytes == 0) {
    return Status::InvalidArgument("fast path region for " + std::to_string(nranks) + " ranks of " +
                                   std::to_string(slot_bytes) + " bytes");
  }
  std::unique_ptr<FastPathRegion> r(new FastPathRegion);
  const size_t bytes = ipc::FastPathRegionBytes(nranks, slot_bytes);
  int fd = -1;
  BATON_RETURN_IF_ERROR(CreateMemfd("baton-fast-path", bytes, &fd));
  r->fd_.reset(fd);
  BATON_RETURN_IF_ERROR(Mapping::MapShared(fd, bytes, &r->mapping_));
  // A fresh memfd is zero: every slot has arrived at op 0 and nobody failed.
  auto* h = reinterpret_cast<ipc::FastPathHeader*>(r->mapping_.data());
  h->magic = ipc::kFastPathMagic;
  h->nranks = static_cast<uint32_t>(nranks);
  h->slot_bytes = slot_bytes;
  h->timeout_ms = static_cast<uint32_t>(std::clamp<int64_t>(timeout.count(), 1, UINT32_MAX));
  r->view_ = ipc::FastPathView::At(r->mapping_.data());
  *out = std::move(r);
  return Status::Ok();
}

void FastPathRegion::Fail(const Status& reason) {
  ipc::FastPathHeader* h = view_.header;
  if (h->failed.load(std::memory_order_acquire) != 0) return;
  h->code = static_cast<int32_t>(reason.code());
  std::strncpy(h->message, reason.message().c_str(), sizeof h->message - 1);
  h->failed.store(1, std::memory_order_seq_cst);
  // Waiters sleep on the arrival word of a rank they wait for.
  for (uint32_t r = 0; r < h->nranks; ++r) FutexWakeAll(&view_.slot(static_cast<int>(r)).arrived);
}

}  // namespace baton
