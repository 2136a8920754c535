// An in-memory executor for schedules: runs every node's schedule of one
// collective against plain byte vectors, passing messages through FIFO queues.
// It checks every region against its buffer's bounds and reports a deadlock
// (a phase waiting for a message nobody sends) instead of hanging.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/reference.h"
#include "collectives/schedule.h"

namespace baton::test {

struct SimRank {
  uint8_t* send = nullptr;
  uint64_t send_bytes = 0;
  uint8_t* recv = nullptr;
  uint64_t recv_bytes = 0;
};

// Every rank's buffers for a checked run of `sig`. With in_place, each
// rank's input sits where NCCL's in-place convention puts it inside its
// output (or its output inside its input), and `in_place_ranks` lists the
// ranks whose send and receive buffers coincide.
struct RankMemory {
  RankMemory() = default;
  RankMemory(const RankMemory&) = delete;  // `sim` points into the vectors
  RankMemory& operator=(const RankMemory&) = delete;
  RankMemory(RankMemory&&) = default;
  RankMemory& operator=(RankMemory&&) = default;

  std::vector<reference::Bytes> inputs;  // pristine copy of every rank's input, for the reference
  std::vector<reference::Bytes> sends;
  std::vector<reference::Bytes> recvs;
  std::vector<SimRank> sim;
  std::vector<int> in_place_ranks;
};
RankMemory MakeRankMemory(const OpSignature& sig, int world, bool in_place);

// Called with a node's schedule just before each of its phases starts and
// just after it ends (each may be empty); an error ends the simulation.
struct PhaseHooks {
  std::function<Status(int node, const Schedule& schedule, size_t phase)> before;
  std::function<Status(int node, const Schedule& schedule, size_t phase)> after;
  // Called once for each node's schedule before anything runs; it may
  // replace the schedule with the one to run (the middle of a split).
  std::function<Status(int node, Schedule* schedule)> rewrite;
  // Called once for each node, after `rewrite`, with the scratch space its
  // schedule runs on (sized to the schedule's scratch_bytes; valid for
  // the whole run).
  std::function<Status(int node, std::vector<uint8_t>* scratch)> scratch_ready;
};

// Runs the collective `sig` on all nodes of `layout`. `ranks[r]` gives rank r's buffers.
Status Simulate(const NodeLayout& layout, const OpSignature& sig, Algorithm algo, const std::vector<SimRank>& ranks,
                const std::vector<int>& in_place_ranks = {}, const PhaseHooks& hooks = {});

}  // namespace baton::test
