// Collectives within one node on GPU memory: when every local rank's
// buffers are GPU memory that batond opened (CUDA IPC), the communicator's
// worker runs the schedule's steps on the GPUs (collectives/device_steps.h,
// gpu/step_runner.h) instead of staging every buffer through host memory,
// reducing on the CPU and copying the result back.
//
// Conditions, all checked here; when one fails the caller stages
// (DeviceStaging::Stage) and runs on host memory as before, with the same
// result:
//   * the communicator has one node (across nodes the network needs host
//     memory: staging, docs/gpu.md);
//   * every local rank's non-empty send and receive buffers are GPU memory,
//     not staged yet;
//   * the GPUs involved reach one another (peer access), or are one GPU;
//   * the schedule can run on GPUs exactly as on the host (PlanDeviceSteps).
//
// Ranks on one GPU run the host's schedule, so the GPU result is the host
// path's bit for bit; over several GPUs an AllReduce, a Reduce and a
// copy-out run spread shapes that give the host's bits too
// (spread_allreduce.h, spread_reduce.h, spread_copy_out.h).
#pragma once

#include <vector>

#include "collectives/device_steps.h"
#include "collectives/schedule.h"
#include "collectives/spread_allreduce.h"
#include "collectives/spread_scratch_fold.h"
#include "common/status.h"
#include "daemon/local_op.h"

namespace baton {

// Whether the StreamGate leaves `op`'s staging to the communicator's worker
// (which then runs it here, on one node, or stages it around the schedule's
// phases: Communicator::StageDeferred): a collective with GPU buffers. Send
// and Recv are matched outside schedules, on host memory: they are staged
// at once.
bool WorkerDecidesStaging(const LocalOp& op);

// Whether every local rank's non-empty buffers (`ops`, of a communicator of
// `world` ranks) are GPU memory batond opened and not staged yet, on GPUs
// that reach one another (peer access, enabled here) or on one GPU; if so
// fills `buffers` (indexed by global rank) and `devices` (each GPU once).
// False, with nothing allocated, for the host-memory collectives.
bool LocalRanksOnDevices(const std::vector<LocalOp>& ops, int world, std::vector<DeviceRankBuffers>* buffers,
                         std::vector<int>* devices);

// Sets `pieces` to GPU scratch for `shares` (scratch offsets and the local
// rank whose GPU holds each, as spread_scratch_fold.h gives them), each on
// the GPU of that rank's buffers in `buffers` (rank -1: `first_device`); a
// GPU's pieces lie one after another in its one allocation, this thread's
// (gpu::ThreadScratch: valid until this thread asks for that GPU's again).
Status AllocateScratchPieces(const std::vector<ScratchShare>& shares, const std::vector<DeviceRankBuffers>& buffers,
                             int first_device, std::vector<ScratchPiece>* pieces);

// Runs `schedule` (one node's, for `ops`, the local ranks' parts, of a
// communicator of `world` ranks) on the GPUs if the conditions above hold,
// and returns its status with *ran = the schedule that ran: `schedule`, or
// when `shape` asks for it the spread one of an AllReduce
// (collectives/spread_allreduce.h), of a Reduce (spread_reduce.h) or of a
// copy-out such as a Broadcast's (spread_copy_out.h), valid until this thread's next call.
// Otherwise returns OK with *ran = null and touches nothing.
Status RunOnDevices(const Schedule& schedule, const std::vector<LocalOp>& ops, int world, GpuAllReduceShape shape,
                    const Schedule** ran);

}  // namespace baton
