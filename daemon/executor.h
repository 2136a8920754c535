// ExecuteSchedule: runs one node's schedule of a collective against real
// memory (the local ranks' buffers and the communicator's scratch space)
// and a Mesh to the other nodes.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "collectives/schedule.h"
#include "common/worker_pool.h"
#include "transports/mesh.h"

namespace baton {

struct RankBuffers {
  uint8_t* send = nullptr;
  uint64_t send_bytes = 0;
  uint8_t* recv = nullptr;
  uint64_t recv_bytes = 0;
};

struct ExecutionContext {
  const std::vector<RankBuffers>* buffers = nullptr;  // indexed by global rank; only local ranks are filled
  std::vector<uint8_t>* scratch = nullptr;             // grown to the schedule's needs
  Mesh* mesh = nullptr;                                // null when the communicator has one node
  MessageStamp stamp;
  std::chrono::steady_clock::time_point deadline;
  WorkerPool* pool = nullptr;                          // helpers for large local steps (optional)
};

Status ExecuteSchedule(const Schedule& schedule, const ExecutionContext& ctx);

}  // namespace baton
