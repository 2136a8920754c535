#include "daemon/executor.h"

#include <cstring>
#include <string>

#include "collectives/local_steps.h"
#include "collectives/reduce.h"

namespace baton {

Status ResolveRegion(const Region& r, const std::vector<RankBuffers>& buffers, const ScratchView* scratch,
                     uint8_t** out) {
  uint8_t* base = nullptr;
  uint64_t size = 0;
  if (r.buf == BufKind::kScratch) {
    if (scratch == nullptr) {
      *out = nullptr;
      return Status::Ok();
    }
    base = scratch->data;
    size = scratch->size;
  } else {
    if (r.rank < 0 || static_cast<size_t>(r.rank) >= buffers.size()) {
      return Status::Internal("schedule names rank " + std::to_string(r.rank) + " outside the communicator");
    }
    const RankBuffers& b = buffers[r.rank];
    base = r.buf == BufKind::kSend ? b.send : b.recv;
    size = r.buf == BufKind::kSend ? b.send_bytes : b.recv_bytes;
  }
  if (r.bytes == 0) {
    *out = base;
    return Status::Ok();
  }
  if (base == nullptr || r.offset > size || r.bytes > size - r.offset) {
    return Status::Internal("schedule region outside its buffer (rank " + std::to_string(r.rank) + ", offset " +
                            std::to_string(r.offset) + ", bytes " + std::to_string(r.bytes) + ", buffer " +
                            std::to_string(size) + ")");
  }
  *out = base + r.offset;
  return Status::Ok();
}

Status ExecuteSchedule(const Schedule& schedule, const ExecutionContext& ctx) {
  ScratchView scratch = ctx.fixed_scratch;
  if (scratch.data == nullptr) {
    if (ctx.scratch->size() < schedule.scratch_bytes) ctx.scratch->resize(schedule.scratch_bytes);
    scratch = {ctx.scratch->data(), ctx.scratch->size()};
  } else if (scratch.size < schedule.scratch_bytes) {
    return Status::Internal("a schedule needing " + std::to_string(schedule.scratch_bytes) +
                            " bytes of scratch given " + std::to_string(scratch.size));
  }
  const OpSignature& sig = ctx.stamp.sig;
  const uint64_t esize = DataTypeSize(sig.dtype);
  auto resolve = [&ctx, &scratch](const Region& r, uint8_t** out) {
    return ResolveRegion(r, *ctx.buffers, &scratch, out);
  };
  const ReduceFn reduce = [&sig, esize](uint8_t* dst, const uint8_t* a, const uint8_t* incoming, uint64_t bytes) {
    CombineInto(sig.dtype, sig.redop, dst, a, incoming, bytes / esize);
  };
  // Reused from call to call on this thread: a small collective should not
  // cost allocations here.
  thread_local std::vector<uint32_t> sent;      // messages sent to each peer node so far
  thread_local std::vector<uint32_t> received;  // messages received from each peer node so far
  thread_local std::vector<NetOp> net;
  thread_local std::vector<LocalStep> local;
  sent.clear();
  received.clear();
  auto next = [](std::vector<uint32_t>& count, int peer) -> uint32_t {
    if (static_cast<size_t>(peer) >= count.size()) count.resize(static_cast<size_t>(peer) + 1, 0);
    return count[peer]++;
  };
  for (size_t p = 0; p < schedule.phases.size(); ++p) {
    const Phase& phase = schedule.phases[p];
    if (ctx.observer != nullptr) BATON_RETURN_IF_ERROR(ctx.observer->BeforePhase(p));
    net.clear();
    local.clear();
    for (const Step& s : phase.steps) {
      uint8_t* src = nullptr;
      uint8_t* dst = nullptr;
      switch (s.kind) {
        case StepKind::kCopy:
        case StepKind::kReduce:
          BATON_RETURN_IF_ERROR(resolve(s.src, &src));
          BATON_RETURN_IF_ERROR(resolve(s.dst, &dst));
          if (s.src.bytes != s.dst.bytes) return Status::Internal("schedule step with regions of different sizes");
          local.push_back({s.kind, src, dst, s.src.bytes, 0});
          break;
        case StepKind::kDivide:
          BATON_RETURN_IF_ERROR(resolve(s.dst, &dst));
          local.push_back({s.kind, nullptr, dst, s.dst.bytes, s.divisor});
          break;
        case StepKind::kSend:
          BATON_RETURN_IF_ERROR(resolve(s.src, &src));
          if (s.peer < 0) return Status::Internal("schedule sends to a negative node");
          net.push_back({NetOp::kSend, s.peer, src, s.src.bytes, next(sent, s.peer)});
          break;
        case StepKind::kRecv:
        case StepKind::kRecvReduce:
          BATON_RETURN_IF_ERROR(resolve(s.dst, &dst));
          if (s.kind == StepKind::kRecvReduce && s.src.bytes > 0) {
            if (s.src.bytes != s.dst.bytes) return Status::Internal("recv-reduce with regions of different sizes");
            BATON_RETURN_IF_ERROR(resolve(s.src, &src));
          }
          if (s.peer < 0) return Status::Internal("schedule receives from a negative node");
          net.push_back({s.kind == StepKind::kRecv ? NetOp::kRecv : NetOp::kRecvReduce, s.peer, dst, s.dst.bytes,
                         next(received, s.peer), src});
          break;
      }
    }
    // Local steps run first, in order (the schedule's execution rule).
    RunLocalSteps(local, sig.dtype, sig.redop, ctx.pool);
    if (!net.empty()) {
      if (ctx.mesh == nullptr) return Status::Internal("network step in a single-node communicator");
      BATON_RETURN_IF_ERROR(ctx.mesh->Exchange(net, ctx.stamp, reduce, ctx.deadline));
    }
    if (ctx.observer != nullptr) BATON_RETURN_IF_ERROR(ctx.observer->AfterPhase(p));
  }
  return Status::Ok();
}

}  // namespace baton
