// ExecuteSchedule: runs one node's schedule of a collective against real
// memory (the local ranks' buffers and the communicator's scratch space)
// and a Mesh to the other nodes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/schedule.h"
#include "common/status.h"
#include "common/worker_pool.h"
#include "transports/mesh.h"

namespace baton {

struct RankBuffers {
  uint8_t* send = nullptr;
  uint64_t send_bytes = 0;
  uint8_t* recv = nullptr;
  uint64_t recv_bytes = 0;
};

// Told when each phase of a schedule starts and ends (the staging pipeline
// copies GPU buffers around them: daemon/staging_pipeline.h). An error from
// either ends the collective with it.
class PhaseObserver {
 public:
  virtual ~PhaseObserver() = default;
  virtual Status BeforePhase(size_t phase) = 0;
  virtual Status AfterPhase(size_t phase) = 0;
};

// A scratch space of fixed size (memory someone else owns).
struct ScratchView {
  uint8_t* data = nullptr;
  uint64_t size = 0;
};

struct ExecutionContext {
  const std::vector<RankBuffers>* buffers = nullptr;  // indexed by global rank; only local ranks are filled
  std::vector<uint8_t>* scratch = nullptr;             // grown to the schedule's needs
  Mesh* mesh = nullptr;                                // null when the communicator has one node
  MessageStamp stamp;
  std::chrono::steady_clock::time_point deadline;
  WorkerPool* pool = nullptr;                          // helpers for large local steps (optional)
  PhaseObserver* observer = nullptr;                   // optional
  // When set, the scratch space instead of `scratch` (at least the
  // schedule's scratch_bytes): pinned memory the staging pipeline copies
  // into and out of (daemon/device_ends.h).
  ScratchView fixed_scratch;
};

Status ExecuteSchedule(const Schedule& schedule, const ExecutionContext& ctx);

// Where region `r` lies: in a local rank's buffer from `buffers`, or in
// `scratch` (null: a scratch region resolves to null). An Internal error for
// a region outside its buffer: regions come from our own planner, but a
// bounds check turns a planner bug into an error instead of memory
// corruption.
Status ResolveRegion(const Region& r, const std::vector<RankBuffers>& buffers, const ScratchView* scratch,
                     uint8_t** out);

}  // namespace baton
