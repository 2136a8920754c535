// SplitAtNetwork (collectives/network_split.h): a schedule cut into its
// local head, network middle and local tail, for every collective, layout
// and algorithm. The parts run one after another must be the schedule:
// checked here step by step; that they compute the same result on staged
// memory is checked in staging_plan_test.cc (DeviceEnds).
#include "collectives/network_split.h"

#include <gtest/gtest.h>

#include "collectives/layout.h"
#include "collectives/spread_allreduce.h"
#include "tests/schedule_parts.h"

namespace baton {
namespace {

bool HasNetwork(const Phase& p) {
  for (const Step& s : p.steps) {
    if (s.IsNetwork()) return true;
  }
  return false;
}

bool SameStep(const Step& a, const Step& b) {
  return a.kind == b.kind && a.src == b.src && a.dst == b.dst && a.peer == b.peer && a.divisor == b.divisor;
}

TEST(NetworkSplit, PartsInOrderAreTheSchedule) {
  const std::vector<std::vector<int>> layouts{{1, 1}, {2, 2}, {1, 3}, {3, 3}, {2, 1, 2}};
  int splits = 0;
  for (const auto& per_node : layouts) {
    const NodeLayout layout = NodeLayout::Blocked(per_node);
    for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce, Collective::kAllGather,
                         Collective::kReduceScatter, Collective::kScatter, Collective::kGather, Collective::kAllToAll,
                         Collective::kBarrier}) {
      for (Algorithm algo : {Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kHalvingDoubling,
                             Algorithm::kDoubleTree, Algorithm::kDirect}) {
        for (uint64_t count : {1ull, 1027ull, (1ull << 19) + 5}) {
          for (int node = 0; node < layout.num_nodes(); ++node) {
            PlanInput in;
            in.sig = {c, DataType::kFloat32, RedOp::kSum, HasRoot(c) ? layout.world_size() - 1 : -1,
                      c == Collective::kBarrier ? 0 : count};
            in.layout = &layout;
            in.node = node;
            in.algorithm = algo;
            Schedule schedule;
            ASSERT_TRUE(BuildSchedule(in, &schedule).ok());
            const std::string what = in.sig.ToString() + " " + AlgorithmName(algo) + " node " + std::to_string(node);
            ScheduleSplit split;
            ASSERT_TRUE(SplitAtNetwork(schedule, &split)) << what << ": every node of several talks to another";
            ++splits;
            for (const Schedule* end : {&split.head, &split.tail}) {
              for (const Phase& p : end->phases) EXPECT_FALSE(HasNetwork(p)) << what;
            }
            ASSERT_FALSE(split.middle.phases.empty()) << what;
            EXPECT_TRUE(HasNetwork(split.middle.phases.front())) << what;
            EXPECT_TRUE(HasNetwork(split.middle.phases.back())) << what;
            for (const Step& s : split.middle.phases.front().steps) {
              EXPECT_TRUE(s.IsNetwork()) << what << ": the first network phase's local steps belong to the head";
            }
            EXPECT_EQ(split.middle.scratch_bytes, schedule.scratch_bytes) << what;
            const std::vector<Step> whole = AllSteps(schedule);
            std::vector<Step> parts = AllSteps(split.head);
            for (const Schedule* part : {&split.middle, &split.tail}) {
              const std::vector<Step> more = AllSteps(*part);
              parts.insert(parts.end(), more.begin(), more.end());
            }
            ASSERT_EQ(parts.size(), whole.size()) << what;
            for (size_t i = 0; i < whole.size(); ++i) {
              ASSERT_TRUE(SameStep(parts[i], whole[i])) << what << ": step " << i << " moved";
            }
            // Phases: the first network phase's local steps became one of
            // the head's; every other phase kept its place.
            const size_t extra = split.head.phases.size() + split.middle.phases.size() + split.tail.phases.size() -
                                 schedule.phases.size();
            EXPECT_LE(extra, 1u) << what;
          }
        }
      }
    }
  }
  EXPECT_GT(splits, 1000);
}

TEST(NetworkSplit, OneNodesScheduleHasNoMiddle) {
  const NodeLayout layout = NodeLayout::Blocked({4});
  PlanInput in;
  in.sig = {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1000};
  in.layout = &layout;
  Schedule schedule;
  ASSERT_TRUE(BuildSchedule(in, &schedule).ok());
  ScheduleSplit split;
  split.head.phases.emplace_back();
  EXPECT_FALSE(SplitAtNetwork(schedule, &split));
  EXPECT_TRUE(split.head.phases.empty() && split.middle.phases.empty() && split.tail.phases.empty());
  EXPECT_FALSE(SplitForDeviceEnds(schedule, &split));
}

// A hierarchical AllReduce on a node of two ranks: the head reduces them
// into the first rank's receive buffer, the middle is the ring, the tail
// divides (an average) and copies the result out; the ends ask for no
// scratch.
TEST(NetworkSplit, AnAllReducesEndsAreItsLocalReductionAndCopyOut) {
  const NodeLayout layout = NodeLayout::Blocked({2, 2});
  PlanInput in;
  in.sig = {Collective::kAllReduce, DataType::kFloat32, RedOp::kAvg, -1, 1000};
  in.layout = &layout;
  in.node = 1;
  in.algorithm = Algorithm::kRing;
  Schedule schedule;
  ASSERT_TRUE(BuildSchedule(in, &schedule).ok());
  ScheduleSplit split;
  ASSERT_TRUE(SplitForDeviceEnds(schedule, &split));
  const std::vector<Step> head = AllSteps(split.head);
  ASSERT_EQ(head.size(), 2u) << split.head.ToString();
  EXPECT_EQ(head[0].kind, StepKind::kCopy);
  EXPECT_EQ(head[0].src, (Region{BufKind::kSend, 2, 0, 4000}));
  EXPECT_EQ(head[0].dst, (Region{BufKind::kRecv, 2, 0, 4000}));
  EXPECT_EQ(head[1].kind, StepKind::kReduce);
  EXPECT_EQ(head[1].src, (Region{BufKind::kSend, 3, 0, 4000}));
  const std::vector<Step> tail = AllSteps(split.tail);
  ASSERT_FALSE(tail.empty()) << split.tail.ToString();
  EXPECT_EQ(tail.front().kind, StepKind::kDivide);
  EXPECT_EQ(tail.back().kind, StepKind::kCopy);
  EXPECT_EQ(tail.back().dst, (Region{BufKind::kRecv, 3, 0, 4000}));
  EXPECT_EQ(split.head.scratch_bytes, 0u);
  EXPECT_EQ(split.tail.scratch_bytes, 0u);
  // The middle touches the leader's receive buffer only: nothing else of
  // the node needs staging memory.
  EXPECT_TRUE(TouchesBuffer(split.middle, BufKind::kRecv, 2));
  EXPECT_FALSE(TouchesBuffer(split.middle, BufKind::kSend, 2));
  EXPECT_FALSE(TouchesBuffer(split.middle, BufKind::kRecv, 3));
  EXPECT_FALSE(TouchesBuffer(split.middle, BufKind::kSend, 3));
  EXPECT_TRUE(TouchesBuffer(split.head, BufKind::kSend, 3));
  for (const Step& s : AllSteps(split.middle)) {
    EXPECT_TRUE(s.src.rank == 2 || s.src.rank == -1 || s.src.bytes == 0) << split.middle.ToString();
    EXPECT_EQ(s.dst.buf == BufKind::kSend, false) << split.middle.ToString();
  }
}

// Ends whose head folds several ranks into scratch are split, each asking
// for the scratch it touches; ends that use scratch otherwise are not, nor
// a middle that writes a send buffer (only receive buffers and scratch come
// back for the tail).
TEST(NetworkSplit, WhichEndsThatUseScratchOrMiddlesAreSplitForTheGpus) {
  const Step send{StepKind::kSend, {BufKind::kRecv, 0, 0, 8}, {}, 1};
  Schedule uses_scratch;
  uses_scratch.scratch_bytes = 64;
  uses_scratch.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 8}, {BufKind::kScratch, -1, 8, 8}},
                                       {StepKind::kReduce, {BufKind::kSend, 1, 0, 8}, {BufKind::kScratch, -1, 8, 8}}}});
  uses_scratch.phases.push_back(Phase{{send, {StepKind::kRecv, {}, {BufKind::kScratch, -1, 32, 32}, 1}}});
  ScheduleSplit split;
  EXPECT_TRUE(SplitAtNetwork(uses_scratch, &split));
  EXPECT_TRUE(UsesScratch(split.head));
  EXPECT_FALSE(UsesScratch(split.tail));
  ASSERT_TRUE(SplitForDeviceEnds(uses_scratch, &split));
  EXPECT_EQ(split.head.scratch_bytes, 16u) << "up to the end of what it touches";
  EXPECT_EQ(split.middle.scratch_bytes, 64u);
  EXPECT_EQ(split.tail.scratch_bytes, 0u);

  // Scratch in the tail alone (folding what arrived): staged whole.
  Schedule tail_scratch;
  tail_scratch.scratch_bytes = 8;
  tail_scratch.phases.push_back(Phase{{send, {StepKind::kRecv, {}, {BufKind::kScratch, -1, 0, 8}, 1}}});
  tail_scratch.phases.push_back(Phase{{{StepKind::kReduce, {BufKind::kScratch, -1, 0, 8}, {BufKind::kRecv, 0, 0, 8}}}});
  EXPECT_TRUE(SplitAtNetwork(tail_scratch, &split));
  EXPECT_TRUE(UsesScratch(split.tail));
  EXPECT_FALSE(SplitForDeviceEnds(tail_scratch, &split));
  // Nor one rank's input copied into scratch.
  Schedule one_rank = uses_scratch;
  one_rank.phases[0].steps.pop_back();
  EXPECT_FALSE(SplitForDeviceEnds(one_rank, &split));

  Schedule writes_send;
  writes_send.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 8}, {BufKind::kRecv, 0, 0, 8}}}});
  writes_send.phases.push_back(Phase{{send, {StepKind::kRecv, {}, {BufKind::kSend, 0, 0, 8}, 1}}});
  EXPECT_TRUE(WritesSendBuffer(writes_send));
  EXPECT_FALSE(SplitForDeviceEnds(writes_send, &split));

  Schedule fine;
  fine.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 8}, {BufKind::kRecv, 0, 0, 8}}, send}});
  fine.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kRecv, 0, 0, 8}, {BufKind::kRecv, 1, 0, 8}}}});
  ASSERT_TRUE(SplitForDeviceEnds(fine, &split));
  EXPECT_EQ(split.head.phases.size(), 1u);
  EXPECT_EQ(split.middle.phases.size(), 1u);
  EXPECT_EQ(split.tail.phases.size(), 1u);
}

}  // namespace
// What the leader's GPU moves through its links in a node's ends: bytes
// its buffers take in from other ranks' (the head's copies and the reads of
// its folds) and give out to them (the tail's copies).
struct LeaderTraffic {
  uint64_t in = 0, out = 0;
};

LeaderTraffic LeadersTraffic(const ScheduleSplit& split, int leader) {
  LeaderTraffic t;
  for (const Step& s : AllSteps(split.head)) {
    if ((s.kind == StepKind::kCopy || s.kind == StepKind::kReduce) && s.dst.rank == leader && s.src.rank != leader) {
      t.in += s.src.bytes;
    }
  }
  for (const Step& s : AllSteps(split.tail)) {
    if (s.kind == StepKind::kCopy && s.src.rank == leader && s.dst.rank != leader) t.out += s.src.bytes;
  }
  return t;
}

// Spread over four GPUs (collectives/spread_allreduce.h), an AllReduce's
// ends give every local rank a quarter of the folds, and the leader's links
// carry one and a half vectors in and out instead of three (in: its own
// chunk's fold reads the others' inputs, and the other chunks' pieces come
// in once; out: the tail's copies of the other chunks, once each, and their
// owners pass them on); the middle is untouched.
// Results are checked in staging_plan_test.cc (the matrix's spread runs).
TEST(NetworkSplit, SpreadAllReduceEndsShareTheLeadersTraffic) {
  const NodeLayout layout = NodeLayout::Blocked({4, 4});
  const uint64_t count = 1 << 16;  // 256 KiB: four chunks of 64 KiB
  const uint64_t bytes = 4 * count;
  for (RedOp op : {RedOp::kSum, RedOp::kAvg}) {
    PlanInput in;
    in.sig = {Collective::kAllReduce, DataType::kFloat32, op, -1, count};
    in.layout = &layout;
    in.node = 1;  // ranks 4..7, leader 4
    in.algorithm = Algorithm::kRing;
    Schedule schedule;
    ASSERT_TRUE(BuildSchedule(in, &schedule).ok());
    ScheduleSplit split;
    ASSERT_TRUE(SplitForDeviceEnds(schedule, &split));
    const LeaderTraffic gathered = LeadersTraffic(split, 4);
    EXPECT_EQ(gathered.in, 3 * bytes);
    EXPECT_EQ(gathered.out, 3 * bytes);
    const Schedule middle = split.middle;
    std::vector<ScratchShare> shares;
    ASSERT_TRUE(SpreadAllReduceEnds(in.sig, {4, 5, 6, 7}, 8, &split, &shares));
    ASSERT_EQ(AllSteps(split.middle).size(), AllSteps(middle).size());
    // Each chunk folded from the four inputs: the leader's in its buffer,
    // the others' in pieces on ranks 5, 6 and 7.
    ASSERT_EQ(shares.size(), 3u);
    for (size_t i = 0; i < shares.size(); ++i) EXPECT_EQ(shares[i].rank, static_cast<int>(5 + i));
    int into_leader = 0, into_scratch = 0;
    for (const Step& s : AllSteps(split.head)) {
      ASSERT_NE(s.kind, StepKind::kDivide);
      if (s.kind == StepKind::kReduce) {
        EXPECT_EQ(s.src.bytes, bytes / 4);
        ++(s.dst.buf == BufKind::kScratch ? into_scratch : into_leader);
      }
    }
    EXPECT_EQ(into_leader, 3);
    EXPECT_EQ(into_scratch, 9);
    const std::vector<Step> tail = AllSteps(split.tail);
    ASSERT_FALSE(tail.empty());
    EXPECT_EQ(tail.front().kind == StepKind::kDivide, op == RedOp::kAvg);
    for (const Step& s : tail) {
      if (s.kind == StepKind::kCopy) {
        EXPECT_NE(s.dst.rank, 4) << "the leader holds the result already";
      }
    }
    const LeaderTraffic spread = LeadersTraffic(split, 4);
    EXPECT_EQ(spread.in, 6 * bytes / 4);
    EXPECT_EQ(spread.out, 6 * bytes / 4);
  }
}

// Only the hierarchical AllReduce's ends are spread; anything else is left
// as it was.
TEST(NetworkSplit, SpreadAllReduceEndsLeaveOtherEndsAlone) {
  const NodeLayout layout = NodeLayout::Blocked({2, 2});
  for (Collective c : {Collective::kReduce, Collective::kAllGather, Collective::kAllReduce}) {
    PlanInput in;
    in.sig = {c, DataType::kFloat32, RedOp::kSum, c == Collective::kReduce ? 0 : -1, 1000};
    in.layout = &layout;
    in.node = 0;
    in.algorithm = Algorithm::kRing;
    Schedule schedule;
    ASSERT_TRUE(BuildSchedule(in, &schedule).ok());
    ScheduleSplit split;
    if (!SplitForDeviceEnds(schedule, &split)) continue;
    const std::string before = split.head.ToString() + split.tail.ToString();
    // An AllReduce named with ranks that are not this node's is not recognised.
    const std::vector<int> local = c == Collective::kAllReduce ? std::vector<int>{1, 2} : std::vector<int>{0, 1};
    std::vector<ScratchShare> shares;
    EXPECT_FALSE(SpreadAllReduceEnds(in.sig, local, 4, &split, &shares)) << CollectiveName(c);
    EXPECT_EQ(split.head.ToString() + split.tail.ToString(), before) << CollectiveName(c);
  }
  ScheduleSplit empty;
  std::vector<ScratchShare> shares;
  EXPECT_FALSE(
      SpreadAllReduceEnds({Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 10}, {0}, 2, &empty, &shares));
}

}  // namespace baton
