#include "client/src/fast_path.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <vector>

#include "collectives/reduce.h"
#include "common/cpus.h"
#include "common/futex.h"
#include "common/poll_pause.h"

namespace baton::client {

namespace {

// Spinning catches a rank that arrives microseconds later (the common case
// in a training loop's small collectives); after that, sleep on a futex so
// that a rank computing for seconds before its call gets the core.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr int64_t kSleepSliceNs = 100'000'000;

bool HasArrived(const ipc::FastPathRankSlot& s, uint32_t seq) {
  return static_cast<int32_t>(s.arrived.load(std::memory_order_acquire) - seq) >= 0;
}

ipc::FastPathSignature Flatten(const OpSignature& s) {
  return {static_cast<uint32_t>(s.collective), static_cast<uint32_t>(s.dtype), static_cast<uint32_t>(s.redop), s.root,
          s.count};
}

bool SameSignature(const ipc::FastPathSignature& a, const ipc::FastPathSignature& b) {
  return a.collective == b.collective && a.dtype == b.dtype && a.redop == b.redop && a.root == b.root &&
         a.count == b.count;
}

// Another rank's signature, for a message: it is untrusted memory.
std::string Describe(const ipc::FastPathSignature& f) {
  if (!IsValidCollective(f.collective) || !IsValidDataType(f.dtype) || !IsValidRedOp(f.redop)) {
    return "an unknown operation";
  }
  return OpSignature{static_cast<Collective>(f.collective), static_cast<DataType>(f.dtype),
                     static_cast<RedOp>(f.redop), f.root, f.count}
      .ToString();
}

// The failure batond recorded in the header (which the ranks could also
// have written: keep the code a valid one).
Status HeaderFailure(const ipc::FastPathHeader& h) {
  const Code code = h.code > 0 && h.code <= static_cast<int32_t>(Code::kPermissionDenied) ? static_cast<Code>(h.code)
                                                                                        : Code::kAborted;
  return Status(code, std::string(h.message, strnlen(h.message, sizeof h.message)));
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

Status FastPath::Map(UniqueFd fd, int nranks, int rank, std::unique_ptr<FastPath>* out) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::Errno("fstat of the fast path region", errno);
  const auto size = static_cast<size_t>(st.st_size);
  if (size < ipc::kFastPathHeaderBytes) return Status::Internal("batond sent a malformed fast path region");
  std::unique_ptr<FastPath> fp(new FastPath);
  BATON_RETURN_IF_ERROR(Mapping::MapShared(fd.get(), size, &fp->mapping_));
  fp->view_ = ipc::FastPathView::At(fp->mapping_.data());
  const ipc::FastPathHeader& h = *fp->view_.header;
  if (h.magic != ipc::kFastPathMagic || h.nranks != static_cast<uint32_t>(nranks) || h.slot_bytes == 0 ||
      h.slot_bytes > (1u << 20) || ipc::FastPathRegionBytes(nranks, h.slot_bytes) != size) {
    return Status::Internal("batond sent a fast path region that does not fit this communicator");
  }
  fp->nranks_ = nranks;
  fp->rank_ = rank;
  fp->own_cores_ = UsableCpus() >= nranks;
  // A rank that joins late still starts where the others do: at op 0.
  fp->seq_ = fp->view_.slot(rank).arrived.load(std::memory_order_acquire);
  *out = std::move(fp);
  return Status::Ok();
}

bool FastPath::Accepts(const OpSignature& sig) const {
  if (sig.collective == Collective::kSend || sig.collective == Collective::kRecv ||
      sig.collective == Collective::kSplit) {
    return false;
  }
  // The largest input of any rank (the root's, for Scatter and Broadcast),
  // so that every rank decides alike.
  const int who = sig.root >= 0 ? sig.root : 0;
  BufferExtents ext;
  uint64_t bytes = 0;
  return ComputeExtents(sig.collective, sig.count, nranks_, who, sig.root, &ext) &&
         !__builtin_mul_overflow(ext.send_elems, DataTypeSize(sig.dtype), &bytes) && bytes <= view_.slot_bytes;
}

void FastPath::NoteDaemonOps(uint64_t submitted) {
  view_.slot(rank_).daemon_ops.store(submitted, std::memory_order_release);
}

Status FastPath::Run(const OpSignature& sig, const void* send, void* recv, uint64_t daemon_ops,
                     const std::string& where, const Check& check) {
  const ipc::FastPathHeader& h = *view_.header;
  if (h.failed.load(std::memory_order_acquire) != 0) {
    return HeaderFailure(h);
  }
  BufferExtents ext;
  ComputeExtents(sig.collective, sig.count, nranks_, rank_, sig.root, &ext);  // Accepts checked the sizes
  const uint64_t send_bytes = ext.send_elems * DataTypeSize(sig.dtype);

  const uint32_t seq = seq_ + 1;
  ipc::FastPathRankSlot& mine = view_.slot(rank_);
  if (send_bytes > 0) std::memcpy(view_.buffer(rank_, seq), send, send_bytes);
  mine.sig[seq & 1] = Flatten(sig);
  mine.arrived_unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  // seq_cst with the load of `sleepers`: either a sleeping rank sees this
  // store before it sleeps, or we see it asleep and wake it.
  mine.arrived.store(seq, std::memory_order_seq_cst);
  seq_ = seq;
  if (view_.header->sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&mine.arrived);

  BATON_RETURN_IF_ERROR(WaitForAll(seq, sig, daemon_ops, where, check));
  BATON_RETURN_IF_ERROR(CheckSignatures(seq, sig, where));
  ComputeOutput(seq, sig, recv);
  return Status::Ok();
}

Status FastPath::WaitForAll(uint32_t seq, const OpSignature& sig, uint64_t daemon_ops, const std::string& where,
                            const Check& check) {
  ipc::FastPathHeader& h = *view_.header;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto timeout = std::chrono::milliseconds(h.timeout_ms);
  int waiting_for = 0;
  for (;;) {
    while (waiting_for < nranks_ && HasArrived(view_.slot(waiting_for), seq)) ++waiting_for;
    if (waiting_for == nranks_) return Status::Ok();
    ipc::FastPathRankSlot& peer = view_.slot(waiting_for);
    if (h.failed.load(std::memory_order_acquire) != 0) {
      return HeaderFailure(h);
    }
    // Every rank runs the same operations in the same order. A peer that
    // has already given batond more collectives than we had when we got
    // here sent this one (or a different one) to batond instead.
    // (The peer publishes its arrival before its next submission, so a
    // second look tells a peer that moved on from one that never came.)
    if (peer.daemon_ops.load(std::memory_order_acquire) > daemon_ops && !HasArrived(peer, seq)) {
      return Status::Mismatch(
          "rank " + std::to_string(waiting_for) + " sent a collective to batond where rank " + std::to_string(rank_) +
          " called " + sig.ToString() + " on " + where +
          " as a blocking call, which ranks on one node run among themselves; call the same collective the same "
          "way on every rank (a blocking call matches only blocking calls, not requests, groups or CUDA streams)");
    }
    const auto now = Clock::now();
    if (now - start >= timeout) {
      std::vector<int> late;
      for (int r = 0; r < nranks_; ++r) {
        if (!HasArrived(view_.slot(r), seq)) late.push_back(r);
      }
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f s", h.timeout_ms / 1000.0);
      return Status::Timeout(sig.ToString() + " on " + where + ": " + RankList(late) + " did not call it within " +
                             seconds + " (a small collective the ranks of one node run among themselves)");
    }
    if (now - start < kSpin) {
      PollPause(own_cores_);  // yields when the rank we wait for may need this core
      continue;
    }
    const int64_t left_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout - (now - start)).count();
    h.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = peer.arrived.load(std::memory_order_seq_cst);
    if (static_cast<int32_t>(seen - seq) < 0 && h.failed.load(std::memory_order_seq_cst) == 0) {
      FutexWait(&peer.arrived, seen, std::min(left_ns, kSleepSliceNs));
    }
    h.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    BATON_RETURN_IF_ERROR(check());
  }
}

Status FastPath::CheckSignatures(uint32_t seq, const OpSignature& mine, const std::string& where) const {
  const ipc::FastPathSignature me = Flatten(mine);
  bool same = true;
  for (int r = 0; r < nranks_ && same; ++r) same = SameSignature(view_.slot(r).sig[seq & 1], me);
  if (same) return Status::Ok();  // the common case: no copies, no allocation
  // Copy them once for the message: other ranks' memory may change under a second look.
  std::vector<ipc::FastPathSignature> sigs(nranks_);
  for (int r = 0; r < nranks_; ++r) sigs[r] = view_.slot(r).sig[seq & 1];
  std::vector<std::pair<ipc::FastPathSignature, std::vector<int>>> groups;
  for (int r = 0; r < nranks_; ++r) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return SameSignature(g.first, sigs[r]); });
    if (it == groups.end()) {
      groups.push_back({sigs[r], {r}});
    } else {
      it->second.push_back(r);
    }
  }
  std::string msg = "mismatched collectives on " + where + ": ";
  for (size_t i = 0; i < groups.size(); ++i) {
    msg += (i ? "; " : "") + RankList(groups[i].second) + " called " + Describe(groups[i].first);
  }
  return Status::Mismatch(msg);
}

// Every rank computes its own output from all inputs, reducing in rank
// order, so that all ranks get bitwise the same result.
void FastPath::ComputeOutput(uint32_t seq, const OpSignature& sig, void* recv) const {
  const uint64_t esize = DataTypeSize(sig.dtype);
  const uint64_t block = sig.count * esize;  // one rank's share
  auto* out = static_cast<uint8_t*>(recv);
  auto input = [&](int r) -> const uint8_t* { return view_.buffer(r, seq); };
  auto reduce_block = [&](uint64_t offset) {
    std::memmove(out, input(0) + offset, block);
    for (int r = 1; r < nranks_; ++r) ReduceInto(sig.dtype, sig.redop, out, input(r) + offset, sig.count);
    if (sig.redop == RedOp::kAvg) DivideBy(sig.dtype, out, sig.count, static_cast<uint64_t>(nranks_));
  };
  if (block == 0) return;  // Barrier, or an empty collective: arriving was all of it
  const bool root = rank_ == sig.root;
  switch (sig.collective) {
    case Collective::kAllReduce: reduce_block(0); break;
    case Collective::kReduce:
      if (root) reduce_block(0);
      break;
    case Collective::kReduceScatter: reduce_block(rank_ * block); break;
    case Collective::kBroadcast: std::memmove(out, input(sig.root), block); break;
    case Collective::kScatter: std::memmove(out, input(sig.root) + rank_ * block, block); break;
    case Collective::kAllGather:
    case Collective::kGather:
      if (sig.collective == Collective::kGather && !root) break;
      for (int r = 0; r < nranks_; ++r) std::memmove(out + r * block, input(r), block);
      break;
    case Collective::kAllToAll:
      for (int r = 0; r < nranks_; ++r) std::memmove(out + r * block, input(r) + rank_ * block, block);
      break;
    default: break;
  }
}

}  // namespace baton::client
