// Every collective x data type x reduction x count x layout x algorithm, run
// through the in-memory simulator and checked element by element.
#include <gtest/gtest.h>

#include <cstring>

#include "collectives/reference.h"
#include "tests/schedule_simulator.h"

namespace baton::test {
namespace {
using namespace baton::reference;

struct LayoutCase {
  const char* name;
  std::vector<int> node_of_rank;
};

const std::vector<LayoutCase>& Layouts() {
  static const std::vector<LayoutCase> kLayouts = {
      {"1x4", {0, 0, 0, 0}},
      {"2x2", {0, 0, 1, 1}},
      {"3x1", {0, 1, 2}},
      {"3x123", {0, 1, 1, 2, 2, 2}},
      {"4x2_interleaved", {0, 1, 2, 3, 0, 1, 2, 3}},
      {"5x1", {0, 1, 2, 3, 4}},
  };
  return kLayouts;
}

const Collective kCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                                   Collective::kAllGather, Collective::kReduceScatter, Collective::kScatter,
                                   Collective::kGather, Collective::kAllToAll};

// Runs `sig` on `layout`; with in_place, each rank's input sits where NCCL's
// in-place convention puts it inside its output (or vice versa).
void RunAndCheck(const NodeLayout& layout, const OpSignature& sig, Algorithm algo, bool in_place) {
  const int world = layout.world_size();
  RankMemory mem = MakeRankMemory(sig, world, in_place);
  const std::vector<SimRank>& sim = mem.sim;
  // Reference from pristine copies of the inputs.
  const std::vector<Bytes>& inputs = mem.inputs;
  Status st = Simulate(layout, sig, algo, sim, mem.in_place_ranks);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int r = 0; r < world; ++r) {
    Bytes want = Expected(sig, world, r, inputs);
    Bytes got(sim[r].recv, sim[r].recv + sim[r].recv_bytes);
    if (want.empty() && got.empty()) continue;
    std::string msg;
    ASSERT_EQ(FirstMismatch(sig.dtype, got, want, &msg), -1)
        << sig.ToString() << " rank " << r << " algo " << AlgorithmName(algo) << (in_place ? " in-place" : "")
        << ": " << msg;
  }
}

class ScheduleMatrix : public ::testing::TestWithParam<std::tuple<size_t, Collective>> {};

TEST_P(ScheduleMatrix, EveryTypeOpCountAndAlgorithm) {
  const auto& lc = Layouts()[std::get<0>(GetParam())];
  NodeLayout layout;
  ASSERT_TRUE(NodeLayout::FromNodeOfRank(lc.node_of_rank, &layout).ok());
  const Collective coll = std::get<1>(GetParam());
  const uint64_t counts[] = {0, 1, 7, 1024 + 3};
  for (uint32_t t = 0; t < kNumDataTypes; ++t) {
    for (uint32_t o = 0; o < kNumRedOps; ++o) {
      if (!IsReduction(coll) && o > 0) break;
      for (uint64_t count : counts) {
        for (Algorithm algo : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kDirect,
                               Algorithm::kHalvingDoubling, Algorithm::kDoubleTree}) {
          for (bool in_place : {false, true}) {
            OpSignature sig{coll, static_cast<DataType>(t), static_cast<RedOp>(o), -1, count};
            sig.root = HasRoot(coll) ? layout.world_size() - 1 : -1;
            RunAndCheck(layout, sig, algo, in_place);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

// Within one node, AllGather and ReduceScatter copy and fold straight
// between the ranks' buffers up to 8 ranks, and go through one vector
// beyond (plan.cc, kDirectLocalMaxRanks): both sides of that line.
TEST(Schedule, AllGatherAndReduceScatterWithinOneNodeEitherSideOfEightRanks) {
  for (int ranks : {8, 9, 12}) {
    const NodeLayout layout = NodeLayout::Blocked({ranks});
    for (Collective coll : {Collective::kAllGather, Collective::kReduceScatter}) {
      for (RedOp op : {RedOp::kSum, RedOp::kAvg, RedOp::kMax}) {
        if (coll == Collective::kAllGather && op != RedOp::kSum) continue;
        for (bool in_place : {false, true}) {
          const OpSignature sig{coll, DataType::kFloat32, op, -1, 1024 + 3};
          RunAndCheck(layout, sig, Algorithm::kAuto, in_place);
          if (HasFailure()) return;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllLayouts, ScheduleMatrix,
    ::testing::Combine(::testing::Range<size_t>(0, 6), ::testing::ValuesIn(kCollectives)),
    [](const auto& info) {
      return std::string(Layouts()[std::get<0>(info.param)].name) + "_" + CollectiveName(std::get<1>(info.param));
    });

// Large vectors exercise the pipelined chain broadcast and uneven ring chunks.
TEST(ScheduleLarge, MillionElementsEveryCollective) {
  NodeLayout layout;
  ASSERT_TRUE(NodeLayout::FromNodeOfRank({0, 1, 1, 2, 2, 2}, &layout).ok());
  for (Collective c : kCollectives) {
    OpSignature sig{c, DataType::kFloat32, RedOp::kSum, HasRoot(c) ? 2 : -1, (1u << 20) + 1};
    RunAndCheck(layout, sig, Algorithm::kAuto, false);
  }
}

// Halving-doubling and the double tree on vectors of several pipeline
// chunks per tree, on a power-of-two and an uneven node count.
TEST(ScheduleLarge, HalvingDoublingAndTreesOverManyChunks) {
  for (const std::vector<int>& node_of_rank : {std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}, {0, 1, 1, 2, 2, 2}}) {
    NodeLayout layout;
    ASSERT_TRUE(NodeLayout::FromNodeOfRank(node_of_rank, &layout).ok());
    for (Algorithm algo : {Algorithm::kHalvingDoubling, Algorithm::kDoubleTree}) {
      for (RedOp op : {RedOp::kSum, RedOp::kMax}) {
        const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, op, -1, (3u << 20) + 5};
        RunAndCheck(layout, sig, algo, false);
        if (HasFailure()) return;
      }
    }
  }
}

// The full matrix at 2^20 elements: every collective x type x reduction on
// the uneven 3-node layout (chunk boundaries, pipelined broadcast chunks).
class ScheduleLargeMatrix : public ::testing::TestWithParam<Collective> {};

TEST_P(ScheduleLargeMatrix, MillionElementsEveryTypeAndReduction) {
  NodeLayout layout;
  ASSERT_TRUE(NodeLayout::FromNodeOfRank({0, 1, 1, 2, 2, 2}, &layout).ok());
  const Collective c = GetParam();
  for (uint32_t t = 0; t < kNumDataTypes; ++t) {
    for (uint32_t o = 0; o < kNumRedOps; ++o) {
      if (!IsReduction(c) && o > 0) break;
      OpSignature sig{c, static_cast<DataType>(t), static_cast<RedOp>(o), HasRoot(c) ? 1 : -1, 1u << 20};
      RunAndCheck(layout, sig, Algorithm::kAuto, false);
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCollective, ScheduleLargeMatrix, ::testing::ValuesIn(kCollectives),
                         [](const auto& info) { return std::string(CollectiveName(info.param)); });

TEST(ScheduleShape, RingAllReduceMovesTwoTimesNMinusOneOverNOfTheData) {
  NodeLayout layout = NodeLayout::Blocked({1, 1, 1, 1});
  OpSignature sig{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 4000};
  PlanInput in{sig, &layout, 0, Algorithm::kRing, {}};
  Schedule s;
  ASSERT_TRUE(BuildSchedule(in, &s).ok());
  uint64_t sent = 0;
  for (const auto& p : s.phases)
    for (const auto& st : p.steps)
      if (st.kind == StepKind::kSend) sent += st.src.bytes;
  EXPECT_EQ(sent, 2u * 3u * 4000u * 4u / 4u);
  EXPECT_EQ(s.phases.size(), 6u);  // N-1 reduce-scatter + N-1 all-gather steps
}

TEST(ScheduleShape, RootOutsideTheCommunicatorIsRejected) {
  NodeLayout layout = NodeLayout::Blocked({2});
  OpSignature sig{Collective::kBroadcast, DataType::kInt32, RedOp::kSum, 5, 10};
  Schedule s;
  Status st = BuildSchedule({sig, &layout, 0, Algorithm::kAuto, {}}, &s);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("root 5"), std::string::npos) << st.message();
}

TEST(ScheduleShape, AutoPicksRecursiveDoublingForSmallAndRingForLarge) {
  OpSignature small{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 16};
  OpSignature large{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1 << 22};
  EXPECT_EQ(ChooseAlgorithm(small, 4, Algorithm::kAuto), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(ChooseAlgorithm(small, 3, Algorithm::kAuto), Algorithm::kDirect);
  EXPECT_EQ(ChooseAlgorithm(large, 4, Algorithm::kAuto), Algorithm::kRing);
  EXPECT_EQ(ChooseAlgorithm(small, 3, Algorithm::kRecursiveDoubling), Algorithm::kDirect);
}

}  // namespace
}  // namespace baton::test
