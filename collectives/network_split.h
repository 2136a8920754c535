// SplitAtNetwork: one node's schedule cut into the local work before its
// first network step (the head), the phases that talk to other nodes (the
// middle) and the local work after the last of them (the tail).
//
// Why: across nodes the network needs host memory, so GPU buffers are
// staged (daemon/staging_plan.h). But a hierarchical schedule (plan.cc)
// begins by reducing or gathering the node's ranks into one work region and
// ends by copying the result out to every rank: local steps that need no
// host memory at all. Run on the GPUs (daemon/device_ends.h), they leave
// only what the network touches to cross to the host and back: on a node of
// k GPUs, an AllReduce stages one buffer each way instead of k, and the CPU
// reduces none of the k inputs.
//
// Running head, middle and tail one after another is running the schedule:
// the head is every phase before the first one with a network step, plus
// that phase's local steps (which the execution rule of schedule.h runs
// before its network steps anyway); the tail is every phase after the last
// one with a network step. Steps keep their order.
#pragma once

#include "collectives/schedule.h"

namespace baton {

struct ScheduleSplit {
  Schedule head;    // local steps only
  Schedule middle;  // starts and ends with a phase that has network steps
  Schedule tail;    // local steps only
};

// False, leaving `out` empty, for a schedule without network steps (one
// node's): it is all head. Each part keeps the schedule's scratch_bytes.
bool SplitAtNetwork(const Schedule& schedule, ScheduleSplit* out);

// SplitAtNetwork for running the ends on GPU memory and the middle on host
// memory (daemon/device_ends.h), true when that is worth doing and exact:
// the head or the tail has steps, and the middle writes no send buffer
// (only receive buffers and the scratch space go back to the GPUs for the
// tail). Ends that use the scratch space (a ReduceScatter's work vector)
// run on scratch of their own on a GPU, staged to and from the middle's
// like a buffer: each end's scratch_bytes is then what it touches
// (ScratchExtent), and 0 for an end that touches none. That only when the
// head folds or gathers several ranks' inputs into scratch: ends that use
// scratch otherwise (a direct AllReduce's, copying one rank's input into its
// slot and folding what arrived) are not split, which would cost launches
// and copies and save no staging.
bool SplitForDeviceEnds(const Schedule& schedule, ScheduleSplit* out);

// The end of the last scratch byte any step of `schedule` reads or writes
// (0: it touches none).
uint64_t ScratchExtent(const Schedule& schedule);

// Whether any step of `schedule` reads or writes the scratch space.
bool UsesScratch(const Schedule& schedule);
// Whether any step of `schedule` writes a rank's send buffer.
bool WritesSendBuffer(const Schedule& schedule);
// Whether any step of `schedule` reads or writes `rank`'s buffer `buf`
// (kSend or kRecv): with the ends on the GPUs, a buffer the middle never
// touches needs no staging memory.
bool TouchesBuffer(const Schedule& schedule, BufKind buf, int rank);

}  // namespace baton
