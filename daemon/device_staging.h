// DeviceStaging: what batond does around one rank's operation whose buffers
// are (partly) in GPU memory, or that is ordered on the client's CUDA
// stream.
//
// Before the collective (Prepare, on the session's StreamGate thread):
//   1. stream-ordered: wait until the client's stream reached the operation
//      (Completion::stream_ready), so that kernels the client queued before
//      it have written the input;
//   2. device input: copy it into pinned host memory from the daemon's pool;
//      the collective then runs on host memory, like any other, on every
//      transport (this is the staging path: docs/gpu.md);
// after it (Conclude, from LocalOp::Finish): copy the host result into the
// device receive buffer. Completion::stream_done is written by
// Session::Complete after that, which releases the client's stream.
//
// For a collective (not Send or Recv) step 2 waits for the communicator's
// worker, which sees every rank's buffers: within one node it runs the
// collective on the GPUs when all of them are device memory
// (daemon/device_execution.h), and no staging is needed; otherwise it
// stages with StageLater, and its StagingPipeline copies the input in and
// the result back around the schedule's phases, overlapping the collective
// (daemon/staging_pipeline.h); Conclude then has nothing left to copy.
//
// A rank's send and receive buffers that overlap in one allocation (in-place
// calls) share one staging buffer, so in-place stays in-place.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "common/status.h"
#include "daemon/executor.h"
#include "daemon/staging_plan.h"
#include "gpu/device_segment.h"
#include "gpu/pinned_pool.h"

namespace baton {

class DeviceStaging {
 public:
  struct Side {
    std::shared_ptr<gpu::DeviceSegment> segment;  // null: this side is host memory (or absent)
    uint8_t* device_ptr = nullptr;
  };

  // `ready`: the Completion word the client's stream sets; null when the
  // operation is not stream-ordered.
  DeviceStaging(Side send, Side recv, std::atomic<uint32_t>* ready) : send_(std::move(send)), recv_(std::move(recv)),
                                                                      ready_(ready) {}

  // Step 1 above, then step 2 unless `defer_staging`. Timeout when the
  // stream does not get there by `deadline`; Aborted once `cancel` is set.
  Status Prepare(gpu::PinnedPool& pool, RankBuffers* bufs, std::chrono::steady_clock::time_point deadline,
                 const std::atomic<bool>& cancel, bool defer_staging);
  // Step 2: copies device input into staging memory from `pool` and points
  // `bufs` at it. Only once per operation (this or StageLater).
  Status Stage(gpu::PinnedPool& pool, RankBuffers* bufs);
  // Step 2 for the worker's StagingPipeline: points `bufs` at staging
  // memory without copying and appends what is to be copied in and back to
  // `spans`; the pipeline copies them around the collective's phases, and
  // Conclude then copies nothing. A side the schedule on host memory never
  // touches (`send_used` or `recv_used` false: the GPUs run the steps that
  // do, daemon/device_ends.h) gets no staging memory: its pointer in `bufs`
  // becomes null, so that a step that did touch it fails as out of bounds.
  Status StageLater(gpu::PinnedPool& pool, RankBuffers* bufs, std::vector<StagedSpan>* spans, bool send_used = true,
                    bool recv_used = true);
  // If the operation was staged by Stage, copies the result (bufs.recv)
  // back to the device receive buffer; a collective that ran on the GPUs
  // left it there.
  Status Conclude(const RankBuffers& bufs) const;

  bool stream_ordered() const { return ready_ != nullptr; }
  bool staged() const { return staged_; }
  bool has_device_buffers() const { return send_.segment || recv_.segment; }
  // Where the rank's buffers are in GPU memory (segment null: host memory).
  const Side& send_side() const { return send_; }
  const Side& recv_side() const { return recv_; }

 private:
  Status WaitForStream(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& cancel) const;
  // Staging memory for the device sides that are used, `bufs` pointed at it
  // (null for an unused one); nothing copied.
  Status PointAtHostMemory(gpu::PinnedPool& pool, RankBuffers* bufs, bool send_used = true, bool recv_used = true);

  Side send_;
  Side recv_;
  std::atomic<uint32_t>* ready_;
  gpu::PinnedLease send_host_;
  gpu::PinnedLease recv_host_;
  bool staged_ = false;
  bool copied_back_by_pipeline_ = false;
};

}  // namespace baton
