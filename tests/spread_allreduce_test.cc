// SpreadAllReduce (collectives/spread_allreduce.h): each GPU folds its
// chunk, in the host's order, and every rank gets the host schedule's bits,
// in every order GPUs may choose; across nodes, the ends do the same, and
// the head stays gathered where the middle has scratch. (That the results
// are the reference, element by element, for every dtype, reduction and
// in-place rank, is checked with the other schedules by device_steps_test.cc
// within a node and staging_plan_test.cc across.)
#include "collectives/spread_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "collectives/device_steps.h"
#include "collectives/layout.h"
#include "collectives/network_split.h"
#include "collectives/spread_chunks.h"
#include "tests/gpu_orders.h"
#include "tests/schedule_parts.h"
#include "tests/schedule_simulator.h"
#include "tests/spread_memory.h"

namespace baton::test {
namespace {

// Four ranks on four GPUs: every GPU folds its quarter of the vector (the
// copy and three reductions of one chunk, fused into one step of four
// operands, rank 0's input first; the last chunk shorter) into its own
// memory, waiting for nothing on another GPU; then every rank takes in
// every chunk it did not fold in place, once, and the result is the
// reference.
TEST(SpreadAllReduce, EveryGpuFoldsItsChunkInTheHostsOrder) {
  const uint64_t count = 100003;  // 400012 bytes: chunks of 100096, the last 99724
  const uint64_t bytes = 4 * count;
  const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, count};
  Schedule schedule;
  std::vector<ScratchShare> shares;
  ASSERT_TRUE(BuildSpreadAllReduce(sig, AllRanks(4), 4, &schedule, &shares).ok());
  // Scratch for the chunks of ranks 1..3, compact, each on its owner's GPU.
  EXPECT_TRUE(SharesAreCompact(schedule, shares, {1, 2, 3}, {100096, 100096, 99724}));

  RankMemory mem = MakeRankMemory(sig, 4, false);
  GpuMemory gpus;
  std::vector<DeviceStep> steps;
  ASSERT_TRUE(PlanOnGpus(mem, 4, schedule, shares, &gpus, &steps));
  std::vector<int> folds(4, 0);
  std::vector<uint64_t> reduced(4, 0), taken_in(4, 0);
  for (const DeviceStep& s : steps) {
    if (s.kind == StepKind::kReduce) {
      ++folds[s.device];
      reduced[s.device] += s.bytes;
      EXPECT_EQ(FoldOperands(s).size(), 4u) << "GPU " << s.device;
      EXPECT_TRUE(s.from_src && Within(s.src, s.bytes, mem.sim[0].send, bytes))
          << "rank 0's input leads every chunk's fold";
      const bool in_place = s.device == 0 && Within(s.dst, s.bytes, mem.sim[0].recv, bytes);
      const bool own_piece = s.device > 0 && Within(s.dst, s.bytes, gpus.pieces[s.device - 1].data(),
                                                    gpus.pieces[s.device - 1].size());
      EXPECT_TRUE(in_place || own_piece) << "GPU " << s.device << " folds into memory that is not its own";
    }
    for (int r = 0; r < 4; ++r) {
      if (s.kind == StepKind::kCopy && Within(s.dst, s.bytes, mem.sim[r].recv, bytes)) taken_in[r] += s.bytes;
    }
  }
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(folds[g], 1) << "GPU " << g;
    EXPECT_EQ(reduced[g], g < 3 ? 100096u : 99724u) << "GPU " << g;
    EXPECT_EQ(taken_in[g], g == 0 ? bytes - 100096u : bytes) << "rank " << g;
  }
  const auto before = HappensBefore(steps);
  for (size_t j = 0; j < steps.size(); ++j) {
    if (steps[j].kind != StepKind::kReduce) continue;
    EXPECT_EQ(std::count(before[j].begin(), before[j].end(), true), 0)
        << "fold step " << j << " on GPU " << steps[j].device << " waits";
  }
  RunLikeGpus(steps, sig.dtype, sig.redop, /*order=*/1);  // the last GPU first
  for (int r = 0; r < 4; ++r) {
    const reference::Bytes want = reference::Expected(sig, 4, r, mem.inputs);
    const reference::Bytes got(mem.sim[r].recv, mem.sim[r].recv + mem.sim[r].recv_bytes);
    std::string msg;
    ASSERT_EQ(reference::FirstMismatch(sig.dtype, got, want, &msg), -1) << "rank " << r << ": " << msg;
  }
}

// The same folds in the same order as the host's schedule: every rank's
// bytes are the host path's exactly, with inputs whose rounding depends on
// the order, in place or not, in every GPU order.
TEST(SpreadAllReduce, GivesTheHostSchedulesBitsInEveryOrder) {
  const int world = 5;
  const NodeLayout layout = NodeLayout::Blocked({world});
  for (RedOp op : {RedOp::kSum, RedOp::kAvg}) {
    for (bool in_place : {false, true}) {
      const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, op, -1, 4099};
      SCOPED_TRACE(sig.ToString() + (in_place ? " in place" : ""));
      RankMemory host = MakeRankMemory(sig, world, in_place);
      FillOrderSensitive(host, sig, world);
      ASSERT_TRUE(Simulate(layout, sig, Algorithm::kAuto, host.sim, host.in_place_ranks).ok());

      Schedule schedule;
      std::vector<ScratchShare> shares;
      ASSERT_TRUE(BuildSpreadAllReduce(sig, AllRanks(world), world, &schedule, &shares).ok());
      for (int order = 0; order < kGpuOrders; ++order) {
        const RankMemory mem = RunOnGpus(sig, world, in_place, schedule, shares, order);
        for (int r = 0; r < world; ++r) {
          ASSERT_EQ(mem.sim[r].recv_bytes, host.sim[r].recv_bytes);
          EXPECT_EQ(std::memcmp(mem.sim[r].recv, host.sim[r].recv, host.sim[r].recv_bytes), 0)
              << "order " << order << " rank " << r;
        }
      }
    }
  }
}

// The leader's vector after `head` runs on the GPUs of node 1 of `layout`
// (rank r on GPU r, order-sensitive inputs).
reference::Bytes LeaderAfterHead(const OpSignature& sig, int world, int leader, bool in_place, const Schedule& head,
                                 const std::vector<ScratchShare>& shares, int order) {
  const RankMemory mem = RunOnGpus(sig, world, in_place, head, shares, order);
  return reference::Bytes(mem.sim[leader].recv, mem.sim[leader].recv + mem.sim[leader].recv_bytes);
}

// Across nodes (ranks 3..5 of two nodes of three, leader 3, a ring between
// them: no scratch in the middle), the spread head folds chunk k in a piece
// on local rank k's GPU (the leader's own chunk in its buffer) and leaves
// in the leader's buffer the gathered head's bytes exactly; the middle is
// untouched and the tail carries the division of an average.
TEST(SpreadAllReduce, TheEndsGiveTheGatheredHeadsBits) {
  const NodeLayout layout = NodeLayout::Blocked({3, 3});
  for (RedOp op : {RedOp::kSum, RedOp::kAvg}) {
    for (bool in_place : {false, true}) {
      const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, op, -1, 1 << 15};
      SCOPED_TRACE(sig.ToString() + (in_place ? " in place" : ""));
      ScheduleSplit split;
      ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, 1, sig, Algorithm::kRing), &split));
      ASSERT_EQ(split.middle.scratch_bytes, 0u);
      const Schedule gathered = split.head;
      const std::string middle = split.middle.ToString();
      std::vector<ScratchShare> shares;
      ASSERT_TRUE(SpreadAllReduceEnds(sig, {3, 4, 5}, 6, &split, &shares));
      EXPECT_EQ(split.middle.ToString(), middle);
      const SpreadChunks chunks(sig.count * 4, 3);
      ASSERT_TRUE(SharesAreCompact(split.head, shares, {4, 5}, {chunks.span(1).second, chunks.span(2).second}));
      for (const Step& st : AllSteps(split.head)) EXPECT_NE(st.kind, StepKind::kDivide);
      ASSERT_FALSE(AllSteps(split.tail).empty());
      EXPECT_EQ(AllSteps(split.tail).front().kind == StepKind::kDivide, op == RedOp::kAvg);

      const reference::Bytes want = LeaderAfterHead(sig, 6, 3, in_place, gathered, {}, 0);
      for (int order = 0; order < kGpuOrders; ++order) {
        const reference::Bytes got = LeaderAfterHead(sig, 6, 3, in_place, split.head, shares, order);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << "order " << order;
      }
    }
  }
}

// A middle with scratch (the double binary tree's, on a node with two
// children, receives the second child's chunks there): the head's pieces
// would have to share it, so the head stays as built and only the tail is
// spread.
TEST(SpreadAllReduce, AMiddleWithScratchKeepsTheHeadGathered) {
  const NodeLayout layout = NodeLayout::Blocked({3, 3, 3, 3});
  const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1 << 12};
  int checked = 0;
  for (int node = 0; node < 4; ++node) {
    ScheduleSplit split;
    ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, node, sig, Algorithm::kDoubleTree), &split));
    if (split.middle.scratch_bytes == 0) continue;
    ++checked;
    const std::vector<int>& local = layout.ranks_of_node[node];
    const int leader = local.front();
    const std::string head = split.head.ToString(), tail = split.tail.ToString();
    std::vector<ScratchShare> shares{{0, 8, 0}};
    ASSERT_TRUE(SpreadAllReduceEnds(sig, local, layout.world_size(), &split, &shares));
    EXPECT_EQ(split.head.ToString(), head) << "node " << node;
    EXPECT_TRUE(shares.empty());
    EXPECT_NE(split.tail.ToString(), tail) << "the tail is spread still";
    // The leader sends each other rank its chunk, and its own chunk to the
    // two others, 2(n-1)/n of the vector in all (not n-1 vectors); the
    // owners pass their chunks on.
    uint64_t from_leader = 0;
    for (const Step& st : AllSteps(split.tail)) {
      if (st.kind == StepKind::kCopy && st.src.rank == leader) from_leader += st.src.bytes;
    }
    const SpreadChunks chunks(sig.count * 4, 3);
    EXPECT_EQ(from_leader, chunks.span(1).second + chunks.span(2).second + 2 * chunks.span(0).second)
        << "node " << node;
  }
  EXPECT_GT(checked, 0) << "no node's middle has scratch";
}

TEST(SpreadAllReduce, RefusesWhatItIsNotFor) {
  Schedule schedule;
  std::vector<ScratchShare> shares;
  Status st = BuildSpreadAllReduce({Collective::kBroadcast, DataType::kFloat32, RedOp::kSum, 0, 8}, AllRanks(2), 2,
                                   &schedule, &shares);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("an AllReduce's, not a broadcast's"), std::string::npos) << st.ToString();
  st = BuildSpreadAllReduce({Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 8}, AllRanks(2), 4,
                            &schedule, &shares);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("(2 local of 4)"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace baton::test
