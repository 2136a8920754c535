#include "daemon/fast_path_region.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "common/futex.h"
#include "common/types.h"

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
  r->nranks_ = nranks;
  *out = std::move(r);
  return Status::Ok();
}

uint32_t FastPathRegion::OpsEveryRankReached() const {
  uint32_t oldest = 0;
  for (int r = 0; r < nranks_; ++r) {
    const uint32_t at = view_.slot(r).arrived.load(std::memory_order_acquire);
    if (r == 0 || static_cast<int32_t>(at - oldest) < 0) oldest = at;
  }
  return oldest;
}

std::optional<FastPathRegion::Pending> FastPathRegion::Waiting() const {
  // Ranks are at most one op apart: the newest op some rank published is
  // waiting for the ranks still at the one before. Everything read here
  // was written by the ranks: it is only reported, never trusted.
  std::vector<uint32_t> at(nranks_);
  uint32_t newest = 0;
  for (int r = 0; r < nranks_; ++r) {
    at[r] = view_.slot(r).arrived.load(std::memory_order_acquire);
    if (r == 0 || static_cast<int32_t>(at[r] - newest) > 0) newest = at[r];
  }
  Pending p;
  p.seq = newest;
  int64_t first_us = INT64_MAX;
  for (int r = 0; r < nranks_; ++r) {
    if (at[r] != newest) {
      p.missing.push_back(r);
      continue;
    }
    const ipc::FastPathRankSlot& s = view_.slot(r);
    p.arrived.push_back(r);
    p.arrival_unix_us.push_back(s.arrived_unix_us);
    first_us = std::min(first_us, s.arrived_unix_us);
    if (p.op.empty()) {
      const ipc::FastPathSignature f = s.sig[newest & 1];
      if (IsValidCollective(f.collective) && IsValidDataType(f.dtype) && IsValidRedOp(f.redop)) {
        p.op = OpSignature{static_cast<Collective>(f.collective), static_cast<DataType>(f.dtype),
                           static_cast<RedOp>(f.redop), f.root, f.count}
                   .ToString();
      }
    }
  }
  if (p.missing.empty()) return std::nullopt;
  p.op = (p.op.empty() ? "an unknown operation" : p.op) + " (fast path op #" + std::to_string(newest) +
         ", in shared memory among the ranks)";
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  // (A rank could have written any time there: only a plausible one counts.)
  if (first_us > 0 && first_us < now_us) p.waiting_seconds = static_cast<double>(now_us - first_us) / 1e6;
  return p;
}

void FastPathRegion::Fail(const Status& reason) {
  ipc::FastPathHeader* h = view_.header;
  if (failed_) return;  // our own flag: the header's is writable by the ranks
  failed_ = true;
  h->code = static_cast<int32_t>(reason.code());
  std::strncpy(h->message, reason.message().c_str(), sizeof h->message - 1);
  h->failed.store(1, std::memory_order_seq_cst);
  // Waiters sleep on the arrival word of a rank they wait for.
  for (int r = 0; r < nranks_; ++r) FutexWakeAll(&view_.slot(r).arrived);
}

}  // namespace baton
