// An in-memory executor for schedules: runs every node's schedule of one
// collective against plain byte vectors, passing messages through FIFO queues.
// It checks every region against its buffer's bounds and reports a deadlock
// (a phase waiting for a message nobody sends) instead of hanging.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/schedule.h"

namespace baton::test {

struct SimRank {
  uint8_t* send = nullptr;
  uint64_t send_bytes = 0;
  uint8_t* recv = nullptr;
  uint64_t recv_bytes = 0;
};

// Runs the collective `sig` on all nodes of `layout`. `ranks[r]` gives rank r's buffers.
Status Simulate(const NodeLayout& layout, const OpSignature& sig, Algorithm algo, const std::vector<SimRank>& ranks,
                const std::vector<int>& in_place_ranks = {});

}  // namespace baton::test
