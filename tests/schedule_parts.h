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
