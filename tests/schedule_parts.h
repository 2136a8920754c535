// Small helpers for tests that look inside one node's schedule.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "collectives/schedule.h"

namespace baton {

// Every step of `s`, phase after phase.
inline std::vector<Step> AllSteps(const Schedule& s) {
  std::vector<Step> out;
  for (const Phase& p : s.phases) out.insert(out.end(), p.steps.begin(), p.steps.end());
  return out;
}

// Ranks 0..world-1, in rank order: one node's local ranks when it holds
// them all.
inline std::vector<int> AllRanks(int world) {
  std::vector<int> ranks(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) ranks[r] = r;
  return ranks;
}

// Node `node`'s schedule for `sig` over `layout` (a failure to build fails
// the test).
inline Schedule NodeSchedule(const NodeLayout& layout, int node, const OpSignature& sig,
                             Algorithm algo = Algorithm::kRing) {
  PlanInput in;
  in.sig = sig;
  in.layout = &layout;
  in.node = node;
  in.algorithm = algo;
  Schedule schedule;
  EXPECT_TRUE(BuildSchedule(in, &schedule).ok()) << sig.ToString();
  return schedule;
}

}  // namespace baton
