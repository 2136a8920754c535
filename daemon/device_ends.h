// DeviceEnds: a collective across nodes on GPU buffers, with its local ends
// run on the GPUs.
//
// Across nodes the network needs host memory, so GPU buffers are staged
// (daemon/staging_plan.h). Staged whole, every local rank's buffers cross
// to the host and back, and the CPU reduces the node's ranks into one work
// region before the first message leaves: on a node of k GPUs, k buffers
// each way over PCIe and k-1 passes of the CPU over host memory. But that
// reduction (the head of the schedule, collectives/network_split.h) and the
// copies of the result out to every rank (the tail) need no host memory: on
// the GPUs, with peer access, they leave only the work region for the
// network part (the middle) to stage.
//
// So, per collective (on the communicator's worker):
//   1. RunHead: if the conditions below hold, runs the head on the GPUs
//      (gpu/step_runner.h; it returns when they finished) and hands back the
//      middle to run on host memory; otherwise hands back the whole
//      schedule, touching nothing, and everything is staged as before;
//   2. the caller stages the buffers for the middle (StageLater), adding
//      what the head wrote as input (AddHeadOutputs), in the ranks'
//      receive buffers or the scratch space: the staging plan copies in
//      only what the middle touches, before it does;
//   3. the middle runs, its results copied back as its phases end, and the
//      caller waits for the last copy (StagingPipeline::Finish);
//   4. RunTail runs the tail on the GPUs.
// Every step runs in the schedule's order on the same bytes as the host
// path (the kernels have the host kernels' semantics), so the result is the
// host path's, bit for bit. On several GPUs the ends are spread over them,
// and that changes no byte either: an AllReduce's (spread_allreduce.h: the
// head's fold cut into one chunk per GPU instead of all on the leader's,
// in the host's order), another collective's copy-out of one vector to
// every rank (spread_copy_out.h: an AllGather's, a Broadcast's; the
// leader's GPU sends the vector out once, the others pass its chunks on),
// and a fold of the node into a work vector in scratch (a ReduceScatter's,
// a non-root Reduce's), each GPU folding the piece of it that lies in its
// memory (spread_scratch_fold.h).
//
// Conditions, else step 1 leaves everything to staging:
//   * every local rank's non-empty buffers are GPU memory, not staged yet,
//     on GPUs that reach one another or on one GPU (LocalRanksOnDevices);
//   * the schedule has network steps, and its head or tail has steps;
//   * the middle writes no send buffer (only receive buffers and the
//     scratch space are copied back for the tail to read); ends that use
//     the scratch space (a ReduceScatter's work vector) run on GPU scratch
//     of their own (gpu::ThreadScratch, on the first local GPU, or spread
//     over the GPUs with the fold: collectives/spread_scratch_fold.h),
//     staged like a buffer: the head's work in, the middle's results back;
//   * both ends can run on the GPUs exactly as on the host (PlanDeviceSteps).
#pragma once

#include <vector>

#include "collectives/device_steps.h"
#include "collectives/network_split.h"
#include "collectives/spread_allreduce.h"
#include "collectives/spread_scratch_fold.h"
#include "common/status.h"
#include "daemon/local_op.h"
#include "daemon/staging_plan.h"
#include "gpu/pinned_pool.h"

namespace baton {

class DeviceEnds {
 public:
  // Step 1 for `schedule` (this node's, for `ops`, the local ranks' parts
  // of a communicator of `world` ranks): *host_part is the schedule to run
  // on host memory, valid until the next call. The ends are spread over
  // the GPUs as `shape` says (kAuto: over several GPUs). An error is the
  // head's.
  Status RunHead(const Schedule& schedule, const std::vector<LocalOp>& ops, int world, GpuAllReduceShape shape,
                 const Schedule** host_part);
  // Whether the last RunHead ran the head on the GPUs.
  bool active() const { return active_; }
  // Whether, doing so, its ends share the scratch space with the middle:
  // the middle then runs on host_scratch(), and staging copies between it
  // and the ends' GPU scratch (both set up by AddHeadOutputs).
  bool uses_scratch() const { return active_ && host_scratch_bytes_ > 0; }
  // The middle's scratch space when uses_scratch(): pinned memory from the
  // pool given to AddHeadOutputs, the middle's scratch_bytes, held until
  // the next RunHead.
  ScratchView host_scratch() const { return {host_scratch_.data(), host_scratch_bytes_}; }
  // Step 2: the input spans of what the head wrote, `host` being the local
  // ranks' buffers once staged (indexed by global rank); and, for ends that
  // use the scratch space, the spans between their GPU scratch and the
  // middle's, host_scratch(), taken here from `pinned` (so that its copies
  // run as fast as the buffers' and overlap the phases as theirs do).
  Status AddHeadOutputs(const std::vector<RankBuffers>& host, gpu::PinnedPool& pinned,
                        std::vector<StagedSpan>* spans);
  // Step 4, once the middle's results are back on the GPUs.
  Status RunTail() const;

  // The parts of the last active split (for the traffic counters).
  const Schedule& head() const { return split_.head; }
  const Schedule& tail() const { return split_.tail; }

 private:
  bool active_ = false;
  // Reused from call to call (one object per communicator's worker).
  ScheduleSplit split_;
  std::vector<DeviceRankBuffers> buffers_;
  std::vector<int> devices_;
  std::vector<int> local_ranks_;
  std::vector<DeviceStep> head_steps_;
  std::vector<DeviceStep> tail_steps_;
  // The ends' GPU scratch (gpu::ThreadScratch), of scratch_bytes_: one
  // piece on the first local GPU, or one per GPU for a spread fold.
  std::vector<ScratchPiece> scratch_;
  uint64_t scratch_bytes_ = 0;
  gpu::PinnedLease host_scratch_;  // the middle's, of host_scratch_bytes_
  uint64_t host_scratch_bytes_ = 0;
  DataType dtype_ = DataType::kFloat32;
  RedOp redop_ = RedOp::kSum;
};

}  // namespace baton
