// StagingPlan: when the copies between ranks' GPU buffers and the host
// memory a collective runs on happen, so that they overlap the collective.
//
// A collective that cannot run on the GPUs (across nodes, or with a host
// rank among GPU ones) runs on host memory: each device input is staged in
// pinned host memory and each result copied back. Done whole, every input
// crosses to the host before the first message leaves and every result
// crosses back after the last arrives: the copies and the network take
// turns. But each phase of a schedule touches only part of the buffers (a
// ring's step s sends one partition and folds another), so an input byte
// is needed first by some phase, and an output byte is final after the
// last phase that writes it. The plan lists, per phase, the input ranges
// that must be in host memory before the phase starts (the pipeline queues
// all of them at once, in that order, so later ones copy while earlier
// phases run) and the output ranges that may go back once it ends (copying
// while later phases run).
//
// Input that no phase touches is never copied in, and output that no phase
// writes is never copied back: the device buffer keeps what it held, as on
// the GPU path. A byte both input and output (an in-place call: one host
// buffer stands for both) is copied in before its first touch and back
// after its last write, which comes no earlier; copies of one device run
// in the order queued, so the copy back never overtakes the copy in.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/device_steps.h"
#include "collectives/schedule.h"
#include "common/status.h"
#include "daemon/executor.h"

namespace baton {

// A range of host memory the schedule runs on that stands for GPU memory.
struct StagedSpan {
  uint8_t* host = nullptr;
  uint8_t* device = nullptr;
  uint64_t bytes = 0;
  int device_id = -1;
  bool input = false;  // true: copied to the host before use; false: an output, copied back after its last write
};

struct StagingCopy {
  uint32_t span = 0;  // index into the spans
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct StagingPlan {
  std::vector<std::vector<StagingCopy>> in_before;  // [phase]: input to have in host memory before it starts
  std::vector<std::vector<StagingCopy>> out_after;  // [phase]: output to copy back once it ended
};

// Plans the copies of `spans` for `schedule` run on `buffers` (the host
// memory, indexed by global rank, that the spans lie in) and `scratch` (the
// scratch space it runs on, at least the schedule's scratch_bytes; null: no
// span lies in scratch, whose touches are then not looked at). Regions
// outside their buffers are an Internal error, as in ExecuteSchedule.
Status PlanStaging(const Schedule& schedule, const std::vector<RankBuffers>& buffers,
                   const std::vector<StagedSpan>& spans, StagingPlan* out, const ScratchView* scratch = nullptr);

// Across nodes with the local ends on the GPUs (daemon/device_ends.h), the
// head of the split schedule wrote some of the receive buffers on the
// device before the middle runs on host memory: those bytes are input to the
// middle, like a send buffer. Appends one input span for each range of a
// local rank's receive buffer that `head` writes (ranges merged where they
// overlap or touch), with `device` and `host` (both indexed by global rank)
// giving the rank's buffers on the GPU and in staging memory (a null host
// receive buffer: not staged, as the middle never touches it; skipped). The
// plan then copies each in before the middle first touches it, and not at
// all if it never does. A region outside its buffer is an Internal error.
Status AppendHeadOutputs(const Schedule& head, const std::vector<DeviceRankBuffers>& device,
                         const std::vector<RankBuffers>& host, std::vector<StagedSpan>* spans);

// Ends that use the scratch space (a ReduceScatter's work vector, into
// which the head folds the node's ranks and out of which the tail copies
// their blocks) run on GPU scratch (`device`: pieces in offset order, one
// per GPU that holds part of it, collectives/device_steps.h), the middle on
// host scratch (`host`), the same offsets in both. Appends an input span
// for each range of scratch `head` writes and an output span for each
// range `tail` reads (merged where they overlap or touch, then cut where
// pieces meet, each on its piece's GPU), so that the plan copies the head's
// work to the host before the middle first touches it and the middle's
// results back after their last write. A range outside what the pieces
// cover is an Internal error.
Status AppendScratchSpans(const Schedule& head, const Schedule& tail, const std::vector<ScratchPiece>& device,
                          uint8_t* host, std::vector<StagedSpan>* spans);

}  // namespace baton
