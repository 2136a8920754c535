// The alpha-beta cost model: exact figures for hand-built schedules, and
// the algorithm it ranks first at the two ends of the latency/bandwidth
// trade-off.
#include <gtest/gtest.h>

#include "collectives/cost_model.h"

namespace baton {
namespace {

Region Scratch(uint64_t off, uint64_t bytes) { return {BufKind::kScratch, -1, off, bytes}; }

TEST(CostModel, PhaseCostsAlphaPerMessageAndTheBusierDirection) {
  // Phase 1: copy 1000 B locally, send 4000 B to node 1 and receive-reduce
  // 2000 B from node 2. Phase 2: local only.
  Schedule s;
  Phase p1;
  p1.steps.push_back({StepKind::kCopy, Scratch(0, 1000), Scratch(1000, 1000)});
  p1.steps.push_back({StepKind::kSend, Scratch(0, 4000), {}, 1});
  p1.steps.push_back({StepKind::kRecvReduce, {}, Scratch(0, 2000), 2});
  Phase p2;
  p2.steps.push_back({StepKind::kReduce, Scratch(0, 500), Scratch(500, 500)});
  s.phases = {p1, p2};
  LinkParams link;
  link.alpha_us = 10;
  link.link_gbps = 1;   // 1 ns per byte
  link.local_gbps = 2;  // 0.5 ns per byte
  const CostEstimate c = PredictCost(s, link);
  EXPECT_EQ(c.network_phases, 1);
  EXPECT_DOUBLE_EQ(c.network_us, 10 + 2 * 2 + 4000 * 1.0 / 1e3);      // alpha + 2 messages + 4000 B out
  EXPECT_DOUBLE_EQ(c.local_us, (1000 + 2000 + 500) * 0.5 / 1e3);      // copy, reduce on receipt, reduce
  EXPECT_DOUBLE_EQ(c.total_us, c.network_us + c.local_us);
}

TEST(CostModel, FewPhasesWinForTinyMessagesAndRingWinsForLargeOnes) {
  const NodeLayout layout = NodeLayout::Blocked({1, 1, 1, 1});
  LinkParams slow_start;  // high latency, fast wire
  slow_start.alpha_us = 100;
  slow_start.link_gbps = 10;
  PlanInput tiny{{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 2}, &layout, 0, Algorithm::kAuto, {}};
  auto ranked = RankAlgorithms(tiny, slow_start);
  ASSERT_EQ(ranked.size(), 3u);  // ring, recursive doubling, direct (4 nodes: a power of two)
  EXPECT_NE(ranked.front().algorithm, Algorithm::kRing);
  EXPECT_EQ(ranked.back().algorithm, Algorithm::kRing);  // 6 phases of alpha
  EXPECT_EQ(ranked.front().cost.network_phases, ranked.front().algorithm == Algorithm::kDirect ? 1 : 2);

  LinkParams fast_start;  // low latency, slow wire
  fast_start.alpha_us = 1;
  fast_start.link_gbps = 0.1;
  PlanInput large = tiny;
  large.sig.count = 16 << 20;
  ranked = RankAlgorithms(large, fast_start);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked.front().algorithm, Algorithm::kRing);  // moves 2(n-1)/n of the data, the least
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_LE(ranked[i - 1].cost.total_us, ranked[i].cost.total_us);
}

TEST(CostModel, RecursiveDoublingIsOnlyOfferedForPowersOfTwo) {
  const NodeLayout layout = NodeLayout::Blocked({1, 1, 1});
  PlanInput in{{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 64}, &layout, 0, Algorithm::kAuto, {}};
  for (const AlgorithmCost& c : RankAlgorithms(in, LinkParams{})) {
    EXPECT_NE(c.algorithm, Algorithm::kRecursiveDoubling);
  }
}

}  // namespace
}  // namespace baton
