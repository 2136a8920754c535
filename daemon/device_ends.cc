#include "daemon/device_ends.h"

#include <algorithm>

#include "collectives/spread_copy_out.h"
#include "collectives/spread_reduce.h"
#include "collectives/spread_scratch_fold.h"
#include "common/logging.h"
#include "daemon/device_execution.h"
#include "gpu/step_runner.h"

namespace baton {

Status DeviceEnds::RunHead(const Schedule& schedule, const std::vector<LocalOp>& ops, int world,
                           GpuAllReduceShape shape, const Schedule** host_part) {
  active_ = false;
  *host_part = &schedule;
  host_scratch_ = gpu::PinnedLease();  // back to the pool: the last collective is over
  host_scratch_bytes_ = 0;
  if (!LocalRanksOnDevices(ops, world, &buffers_, &devices_)) return Status::Ok();
  const OpSignature& sig = ops[0].sig;
  if (!SplitForDeviceEnds(schedule, &split_)) {
    BATON_DEBUG(kColl, "{}: its local steps need host memory or are none; staging every buffer", sig.ToString());
    return Status::Ok();
  }
  // Ranks on several GPUs: an AllReduce's ends spread over them, as within
  // a node (device_execution.cc), and so do another collective's copy-out
  // of one vector to every rank (an AllGather's, a Broadcast's) and its
  // fold of the node into scratch (a ReduceScatter's), or into the root's
  // buffer on a Reduce's root node; on one GPU the gathered ends need
  // fewer launches.
  std::vector<ScratchShare> shares;  // empty: all scratch on the first local GPU
  if (shape == GpuAllReduceShape::kSpread || (shape == GpuAllReduceShape::kAuto && devices_.size() > 1)) {
    local_ranks_.clear();
    for (const LocalOp& op : ops) local_ranks_.push_back(op.rank);
    std::sort(local_ranks_.begin(), local_ranks_.end());
    // Each false: ends of another shape, left as they are.
    if (!SpreadAllReduceEnds(sig, local_ranks_, world, &split_, &shares)) {
      SpreadCopyOut(local_ranks_, &split_.tail);
      if (!SpreadReduceHead(sig, local_ranks_, &split_, &shares)) SpreadScratchFold(local_ranks_, &split_, &shares);
    }
  }
  // Ends that use the scratch space (a ReduceScatter's work vector) get
  // scratch of their own on the GPUs, staged to and from the middle's
  // (AddHeadOutputs).
  scratch_bytes_ = std::max(split_.head.scratch_bytes, split_.tail.scratch_bytes);
  if (scratch_bytes_ > 0) {
    if (shares.empty()) shares.push_back({0, scratch_bytes_, -1});
    if (Status got = AllocateScratchPieces(shares, buffers_, devices_.front(), &scratch_); !got.ok()) {
      BATON_DEBUG(kColl, "{}: no GPU scratch for its local steps ({}); staging every buffer", sig.ToString(),
                  got.ToString());
      return Status::Ok();
    }
  } else {
    scratch_.clear();
  }
  const DeviceMemory memory{&buffers_, scratch_};
  for (auto [part, steps] : {std::pair{&split_.head, &head_steps_}, std::pair{&split_.tail, &tail_steps_}}) {
    if (Status planned = PlanDeviceSteps(*part, memory, steps); !planned.ok()) {
      BATON_DEBUG(kColl, "{}: its local steps cannot run on the GPUs ({}); staging every buffer", sig.ToString(),
                  planned.ToString());
      return Status::Ok();
    }
  }
  dtype_ = sig.dtype;
  redop_ = sig.redop;
  active_ = true;
  *host_part = &split_.middle;
  if (head_steps_.empty()) return Status::Ok();
  return gpu::RunDeviceSteps(head_steps_, dtype_, redop_);
}

Status DeviceEnds::AddHeadOutputs(const std::vector<RankBuffers>& host, gpu::PinnedPool& pinned,
                                  std::vector<StagedSpan>* spans) {
  if (!active_) return Status::Ok();
  BATON_RETURN_IF_ERROR(AppendHeadOutputs(split_.head, buffers_, host, spans));
  // Ends whose scratch is their own, the middle having none (a spread
  // Reduce head's pieces): nothing to stage.
  if (scratch_bytes_ == 0 || split_.middle.scratch_bytes == 0) return Status::Ok();
  if (split_.middle.scratch_bytes < scratch_bytes_) {
    return Status::Internal("ends that use more scratch than their schedule");
  }
  BATON_RETURN_IF_ERROR(pinned.Acquire(split_.middle.scratch_bytes, &host_scratch_));
  host_scratch_bytes_ = split_.middle.scratch_bytes;
  return AppendScratchSpans(split_.head, split_.tail, scratch_, host_scratch_.data(), spans);
}

Status DeviceEnds::RunTail() const {
  if (!active_ || tail_steps_.empty()) return Status::Ok();
  return gpu::RunDeviceSteps(tail_steps_, dtype_, redop_);
}

}  // namespace baton
