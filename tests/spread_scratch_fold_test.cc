// SpreadScratchFold (collectives/spread_scratch_fold.h): which folds it
// spreads, where the pieces fall, and what each GPU folds. That the spread
// ends still give the reference, element by element and in every order
// GPUs may choose, is checked by the staging matrix (staging_plan_test.cc).
#include "collectives/spread_scratch_fold.h"

#include <gtest/gtest.h>

#include "collectives/layout.h"
#include "tests/schedule_parts.h"

namespace baton {
namespace {

ScheduleSplit SplitOf(const NodeLayout& layout, int node, const OpSignature& sig) {
  ScheduleSplit split;
  EXPECT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, node, sig), &split)) << sig.ToString();
  return split;
}

// A ReduceScatter on node 1 of two nodes of four ranks (ranks 4..7): the
// work vector of 8 blocks of 4000 bytes is cut near its quarters, but never
// inside a block the tail reads (this node's: blocks 4..7); each rank's GPU
// folds its piece in the host's order (rank 4's input, then 5, 6, 7).
TEST(SpreadScratchFold, EachGpuFoldsThePieceItHoldsInTheHostsOrder) {
  const NodeLayout layout = NodeLayout::Blocked({4, 4});
  ScheduleSplit split = SplitOf(layout, 1, {Collective::kReduceScatter, DataType::kFloat32, RedOp::kAvg, -1, 1000});
  const std::string middle = split.middle.ToString(), tail = split.tail.ToString();
  std::vector<ScratchShare> shares;
  ASSERT_TRUE(SpreadScratchFold({4, 5, 6, 7}, &split, &shares));
  EXPECT_EQ(split.middle.ToString(), middle);
  EXPECT_EQ(split.tail.ToString(), tail);
  // Even cuts at 8192, 16384 and 24576; the last two fall inside blocks 4
  // (16000..20000) and 6 (24000..28000) and move to their ends.
  ASSERT_EQ(shares.size(), 4u);
  const uint64_t want[][3] = {{0, 8192, 4}, {8192, 11808, 5}, {20000, 8000, 6}, {28000, 4000, 7}};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(shares[k].offset, want[k][0]) << "piece " << k;
    EXPECT_EQ(shares[k].bytes, want[k][1]) << "piece " << k;
    EXPECT_EQ(shares[k].rank, static_cast<int>(want[k][2])) << "piece " << k;
  }
  // Per piece: a copy of rank 4's input, then folds of 5, 6 and 7.
  ASSERT_EQ(split.head.phases.size(), 1u);
  const std::vector<Step>& steps = split.head.phases[0].steps;
  ASSERT_EQ(steps.size(), 16u);
  for (size_t k = 0; k < 4; ++k) {
    const Region piece{BufKind::kScratch, -1, shares[k].offset, shares[k].bytes};
    for (int i = 0; i < 4; ++i) {
      const Step& s = steps[k * 4 + i];
      EXPECT_EQ(s.kind, i == 0 ? StepKind::kCopy : StepKind::kReduce) << "piece " << k << " step " << i;
      EXPECT_EQ(s.src, (Region{BufKind::kSend, 4 + i, shares[k].offset, shares[k].bytes})) << "piece " << k;
      EXPECT_EQ(s.dst, piece) << "piece " << k;
    }
  }
  EXPECT_EQ(split.head.scratch_bytes, 32000u);
}

// A non-root node's Reduce folds into scratch too, and reads nothing of it
// in a tail: the cuts stay even.
TEST(SpreadScratchFold, ANonRootReduceIsCutEvenly) {
  const NodeLayout layout = NodeLayout::Blocked({3, 3});
  ScheduleSplit split = SplitOf(layout, 1, {Collective::kReduce, DataType::kBfloat16, RedOp::kSum, 0, 3000});
  std::vector<ScratchShare> shares;
  ASSERT_TRUE(SpreadScratchFold({3, 4, 5}, &split, &shares));
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares[0].offset, 0u);
  EXPECT_EQ(shares[1].offset, 2048u);  // 6000 / 3 = 2000, rounded up to 256 bytes
  EXPECT_EQ(shares[2].offset, 4096u);
  EXPECT_EQ(shares[2].bytes, 6000u - 4096u);
}

TEST(SpreadScratchFold, LeavesOtherHeadsAlone) {
  auto unchanged = [](const std::vector<int>& local, ScheduleSplit split, const char* what) {
    const std::string before = split.head.ToString();
    std::vector<ScratchShare> shares;
    EXPECT_FALSE(SpreadScratchFold(local, &split, &shares)) << what;
    EXPECT_EQ(split.head.ToString(), before) << what;
    EXPECT_TRUE(shares.empty()) << what;
  };
  const NodeLayout layout = NodeLayout::Blocked({4, 4});
  // An AllReduce folds into the leader's receive buffer, not scratch; the
  // Reduce's root node into the root's.
  unchanged({4, 5, 6, 7}, SplitOf(layout, 1, {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1000}),
            "allreduce");
  unchanged({4, 5, 6, 7}, SplitOf(layout, 1, {Collective::kReduce, DataType::kFloat32, RedOp::kSum, 5, 1000}),
            "reduce on the root's node");
  const ScheduleSplit rs = SplitOf(layout, 1, {Collective::kReduceScatter, DataType::kFloat32, RedOp::kSum, -1, 100});
  unchanged({4, 5, 6}, rs, "a rank of the fold not named");
  unchanged({5, 4, 6, 7}, rs, "ranks out of the fold's order");
  ScheduleSplit wider = rs;
  wider.tail.phases[0].steps.push_back(
      {StepKind::kCopy, {BufKind::kScratch, -1, 3200, 8}, {BufKind::kRecv, 4, 0, 8}});
  unchanged({4, 5, 6, 7}, wider, "a tail reading scratch beyond the work vector");
  unchanged({4}, rs, "one rank");
}

}  // namespace
}  // namespace baton
