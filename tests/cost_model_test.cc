// The alpha-beta cost model: exact figures for hand-built schedules, and
// the algorithm it ranks first at the two ends of the latency/bandwidth
// trade-off.
#include <gtest/gtest.h>

#include "collectives/cost_model.h"

#include <cmath>

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
  // ring, halving-doubling, recursive doubling, direct (4 nodes: a power
  // of two), double tree (an AllReduce)
  ASSERT_EQ(ranked.size(), 5u);
  // The algorithms that cut the vector into chunks pay several phases of
  // alpha (ring, halving-doubling, tree) and lose.
  for (size_t i = 2; i < 5; ++i) {
    EXPECT_TRUE(ranked[i].algorithm == Algorithm::kRing || ranked[i].algorithm == Algorithm::kHalvingDoubling ||
                ranked[i].algorithm == Algorithm::kDoubleTree)
        << AlgorithmName(ranked[i].algorithm);
  }
  EXPECT_EQ(ranked.front().cost.network_phases, ranked.front().algorithm == Algorithm::kDirect ? 1 : 2);

  LinkParams fast_start;  // low latency, slow wire
  fast_start.alpha_us = 1;
  fast_start.link_gbps = 0.1;
  PlanInput large = tiny;
  large.sig.count = 16 << 20;
  ranked = RankAlgorithms(large, fast_start);
  ASSERT_FALSE(ranked.empty());
  // Halving-doubling moves the ring's bytes, 2(n-1)/n of the data (the
  // least), in 4 phases instead of 6; the whole-vector algorithms lose.
  ASSERT_EQ(ranked.size(), 5u);
  EXPECT_EQ(ranked[0].algorithm, Algorithm::kHalvingDoubling);
  EXPECT_EQ(ranked[0].cost.network_phases, 4);
  EXPECT_EQ(ranked[1].algorithm, Algorithm::kRing);
  EXPECT_EQ(ranked[1].cost.network_phases, 6);
  // Same bytes: the difference is two phases' latency and messages.
  EXPECT_NEAR(ranked[1].cost.total_us - ranked[0].cost.total_us, 2 * (1 + 2 * 2), 1e-6);
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_LE(ranked[i - 1].cost.total_us, ranked[i].cost.total_us);
}

// With two nodes, halving-doubling and the ring are the same exchange: the
// ring wins the tie. With three, halving-doubling pairs two nodes up, which
// costs two more whole-vector phases for them.
TEST(CostModel, HalvingDoublingTiesTheRingOnTwoNodesAndPaysForPairingOnThree) {
  LinkParams link;
  link.alpha_us = 1;
  link.link_gbps = 0.1;
  const NodeLayout two = NodeLayout::Blocked({1, 1});
  PlanInput in{{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1 << 20}, &two, 0, Algorithm::kAuto, {}};
  auto ranked = RankAlgorithms(in, link);
  ASSERT_GE(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].algorithm, Algorithm::kRing);
  EXPECT_EQ(ranked[1].algorithm, Algorithm::kHalvingDoubling);
  EXPECT_DOUBLE_EQ(ranked[0].cost.total_us, ranked[1].cost.total_us);

  const NodeLayout three = NodeLayout::Blocked({1, 1, 1});
  in.layout = &three;
  ranked = RankAlgorithms(in, link);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked[0].algorithm, Algorithm::kRing);
  bool offered = false;
  for (const AlgorithmCost& c : ranked) offered |= c.algorithm == Algorithm::kHalvingDoubling;
  EXPECT_TRUE(offered);
}

// A chain 0 -> 1 -> 2 of 1000 B: node 2's own schedule is one phase, but
// it waits for node 1, which waits for node 0: two phases of time.
TEST(CostModel, ACollectiveCostsItsLongestChainOfMessages) {
  LinkParams link;
  link.alpha_us = 10;
  link.link_gbps = 1;
  std::vector<Schedule> nodes(3);
  nodes[0].phases = {Phase{{{StepKind::kSend, Scratch(0, 1000), {}, 1}}}};
  nodes[1].phases = {Phase{{{StepKind::kRecv, {}, Scratch(0, 1000), 0}}},
                     Phase{{{StepKind::kSend, Scratch(0, 1000), {}, 2}}}};
  nodes[2].phases = {Phase{{{StepKind::kRecv, {}, Scratch(0, 1000), 1}}}};
  const double hop = 10 + 2 + 1000 * 1.0 / 1e3;  // alpha + 1 message + 1000 B
  EXPECT_DOUBLE_EQ(PredictCost(nodes[2], link).total_us, hop);
  const CostEstimate c = PredictCollectiveCost(nodes, link);
  EXPECT_DOUBLE_EQ(c.total_us, 2 * hop);
  // A receive whose send never comes: no estimate.
  nodes[0].phases.clear();
  EXPECT_TRUE(std::isinf(PredictCollectiveCost(nodes, link).total_us));
}

// Node 0's schedule alone hides how long a tiny vector takes around a ring
// of 32 nodes (most chunks are empty there); all schedules together show
// the hops.
TEST(CostModel, ARingOfManyNodesPaysForEveryHop) {
  std::vector<int> per_node(32, 1);
  const NodeLayout layout = NodeLayout::Blocked(per_node);
  LinkParams link;
  link.alpha_us = 40;
  PlanInput in{{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 2}, &layout, 0, Algorithm::kAuto, {}};
  for (const AlgorithmCost& c : RankAlgorithms(in, link)) {
    if (c.algorithm == Algorithm::kRing) {
      EXPECT_GE(c.cost.total_us, 31 * link.alpha_us);
    }
  }
  EXPECT_NE(RankAlgorithms(in, link).front().algorithm, Algorithm::kRing);
}

// AllToAll, Gather, Scatter and Barrier have one schedule whatever the
// algorithm: priced once, not once per candidate.
TEST(CostModel, CollectivesOfOneShapeArePricedOnce) {
  const NodeLayout layout = NodeLayout::Blocked({2, 2, 2, 2});
  for (Collective c : {Collective::kAllToAll, Collective::kGather, Collective::kScatter, Collective::kBarrier}) {
    PlanInput in{{c, DataType::kFloat32, RedOp::kSum, HasRoot(c) ? 0 : -1, 1024}, &layout, 0, Algorithm::kAuto, {}};
    EXPECT_EQ(RankAlgorithms(in, LinkParams{}).size(), 1u) << CollectiveName(c);
  }
  PlanInput all_reduce{{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1024}, &layout, 0,
                       Algorithm::kAuto, {}};
  EXPECT_EQ(RankAlgorithms(all_reduce, LinkParams{}).size(), 5u);
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
