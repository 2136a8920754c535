// SpreadReduce (collectives/spread_reduce.h): each GPU folds its chunk, the
// root's GPU takes in (n-1)/n of a vector instead of n-1 vectors, and the
// result is the host schedule's bit for bit, in every order GPUs may
// choose; across nodes, where the root node's head puts its pieces. (That
// the results are the reference, element by element, for every dtype,
// reduction and in-place root, is checked with the other schedules by
// device_steps_test.cc within a node and staging_plan_test.cc across.)
#include "collectives/spread_reduce.h"

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

// Four ranks on four GPUs, root 2: every GPU folds its chunk (the last
// chunk shorter) from the four inputs (a copy and three folds, fused into
// one step) into its own memory, waiting for nothing; the root's GPU takes
// in the three other chunks, once each.
TEST(SpreadReduce, EveryGpuFoldsItsChunkAndTheRootTakesInOneVectorLessItsOwnChunk) {
  const uint64_t count = 100003;  // 400012 bytes: chunks of 100096, the last 99724
  const OpSignature sig{Collective::kReduce, DataType::kFloat32, RedOp::kSum, 2, count};
  Schedule schedule;
  std::vector<ScratchShare> shares;
  ASSERT_TRUE(BuildSpreadReduce(sig, AllRanks(4), 4, &schedule, &shares).ok());
  // Scratch for the three chunks the root does not own, compact, each on
  // its owner's GPU.
  EXPECT_TRUE(SharesAreCompact(schedule, shares, {0, 1, 3}, {100096, 100096, 99724}));

  RankMemory mem = MakeRankMemory(sig, 4, false);
  GpuMemory gpus;
  std::vector<DeviceStep> steps;
  ASSERT_TRUE(PlanOnGpus(mem, 4, schedule, shares, &gpus, &steps));
  std::vector<int> folds(4, 0);
  std::vector<uint64_t> reduced(4, 0);
  uint64_t into_root_from_others = 0;
  for (const DeviceStep& s : steps) {
    if (s.kind == StepKind::kReduce) {
      ++folds[s.device];
      EXPECT_EQ(FoldOperands(s).size(), 4u) << "GPU " << s.device;
      EXPECT_TRUE(s.from_src && Within(s.src, s.bytes, mem.sim[2].send, 4 * count))
          << "the root's input leads every chunk's fold";
      reduced[s.device] += s.bytes;
    }
    if (s.kind == StepKind::kCopy && Within(s.dst, s.bytes, mem.sim[2].recv, 4 * count) &&
        !Within(s.src, s.bytes, mem.sim[2].send, 4 * count)) {
      into_root_from_others += s.bytes;
    }
  }
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(folds[g], 1) << "GPU " << g;
    EXPECT_EQ(reduced[g], g < 3 ? 100096u : 99724u) << "GPU " << g;
  }
  // Every chunk but the root's own comes in once.
  EXPECT_EQ(into_root_from_others, 4 * count - 100096u);
  const auto before = HappensBefore(steps);
  for (size_t j = 0; j < steps.size(); ++j) {
    if (steps[j].kind != StepKind::kReduce) continue;
    EXPECT_EQ(std::count(before[j].begin(), before[j].end(), true), 0)
        << "fold step " << j << " on GPU " << steps[j].device << " waits";
  }
  RunLikeGpus(steps, sig.dtype, sig.redop, /*order=*/1);
  const reference::Bytes want = reference::Expected(sig, 4, 2, mem.inputs);
  const reference::Bytes got(mem.sim[2].recv, mem.sim[2].recv + mem.sim[2].recv_bytes);
  std::string msg;
  ASSERT_EQ(reference::FirstMismatch(sig.dtype, got, want, &msg), -1) << msg;
}

// The same folds in the same order as the host's schedule: the root's
// bytes are the host path's exactly, with inputs whose rounding depends on
// the order, for every root, in place or not, in every GPU order.
TEST(SpreadReduce, GivesTheHostSchedulesBitsInEveryOrder) {
  const int world = 5;
  const NodeLayout layout = NodeLayout::Blocked({world});
  for (RedOp op : {RedOp::kSum, RedOp::kAvg}) {
    for (int root = 0; root < world; ++root) {
      for (bool in_place : {false, true}) {
        const OpSignature sig{Collective::kReduce, DataType::kFloat32, op, root, 4099};
        SCOPED_TRACE(sig.ToString() + (in_place ? " in place" : ""));
        // The host's schedule, run as the host runs it.
        RankMemory host = MakeRankMemory(sig, world, in_place);
        FillOrderSensitive(host, sig, world);
        ASSERT_TRUE(Simulate(layout, sig, Algorithm::kAuto, host.sim, host.in_place_ranks).ok());
        const reference::Bytes want(host.sim[root].recv, host.sim[root].recv + host.sim[root].recv_bytes);

        Schedule schedule;
        std::vector<ScratchShare> shares;
        ASSERT_TRUE(BuildSpreadReduce(sig, AllRanks(world), world, &schedule, &shares).ok());
        for (int order = 0; order < kGpuOrders; ++order) {
          const RankMemory mem = RunOnGpus(sig, world, in_place, schedule, shares, order);
          ASSERT_EQ(mem.sim[root].recv_bytes, want.size());
          EXPECT_EQ(std::memcmp(mem.sim[root].recv, want.data(), want.size()), 0) << "order " << order;
        }
      }
    }
  }
}

// Across nodes, on the root's node (ranks 3..5 of two nodes of three, root
// 4): the head folds chunk k on local rank k's GPU, in scratch of its own
// (the middle has none), and copies it into the root's buffer; the middle
// and the tail are left as they were.
TEST(SpreadReduce, TheRootNodesHeadFoldsOnEveryGpu) {
  const NodeLayout layout = NodeLayout::Blocked({3, 3});
  for (auto [count, algo] : {std::pair{uint64_t{1} << 16, Algorithm::kRing}, std::pair{uint64_t{16}, Algorithm::kRing},
                             std::pair{uint64_t{1} << 16, Algorithm::kHalvingDoubling}}) {
    const OpSignature sig{Collective::kReduce, DataType::kFloat32, RedOp::kAvg, 4, count};
    SCOPED_TRACE(sig.ToString() + " " + AlgorithmName(algo));
    ScheduleSplit split;
    ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, 1, sig, algo), &split));
    const std::string middle = split.middle.ToString(), tail = split.tail.ToString();
    ASSERT_EQ(split.middle.scratch_bytes, 0u);
    std::vector<ScratchShare> shares;
    ASSERT_TRUE(SpreadReduceHead(sig, {3, 4, 5}, &split, &shares));
    EXPECT_EQ(split.middle.ToString(), middle);
    EXPECT_EQ(split.tail.ToString(), tail) << "the average's division stays in the tail";
    // The pieces: chunk 0 on rank 3's GPU, chunk 2 on rank 5's (chunk 1 is
    // the root's, folded in its buffer); a short vector has no chunk 2.
    const SpreadChunks chunks(count * 4, 3);
    std::vector<int> owners;
    std::vector<uint64_t> lengths;
    for (uint64_t k : {0u, 2u}) {
      if (chunks.span(k).second == 0) continue;
      owners.push_back(static_cast<int>(3 + k));
      lengths.push_back(chunks.span(k).second);
    }
    EXPECT_TRUE(SharesAreCompact(split.head, shares, owners, lengths));
    // No division in the head; the root's buffer written whole, chunk by
    // chunk, each chunk folded from the root's input and the two others'.
    uint64_t into_root = 0, folded = 0;
    for (const Step& st : AllSteps(split.head)) {
      EXPECT_NE(st.kind, StepKind::kDivide);
      if (st.dst.buf == BufKind::kRecv && st.dst.rank == 4 && st.kind == StepKind::kCopy) into_root += st.src.bytes;
      if (st.kind == StepKind::kReduce) folded += st.src.bytes;
    }
    EXPECT_EQ(into_root, count * 4);
    EXPECT_EQ(folded, 2 * count * 4);
  }
}

TEST(SpreadReduce, TheHeadIsLeftAloneWhereItIsNotTheRootsFoldAlone) {
  const NodeLayout layout = NodeLayout::Blocked({3, 3});
  const OpSignature sig{Collective::kReduce, DataType::kFloat32, RedOp::kSum, 4, 1 << 16};
  ScheduleSplit split;
  ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, 0, sig), &split));
  const std::string head = split.head.ToString();
  std::vector<ScratchShare> shares{{0, 8, 0}};
  EXPECT_FALSE(SpreadReduceHead(sig, {0, 1, 2}, &split, &shares)) << "node 0 folds into scratch: not the root's";
  EXPECT_EQ(split.head.ToString(), head);
  EXPECT_EQ(shares.size(), 1u);
  const OpSignature allreduce{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1 << 16};
  ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, 1, allreduce), &split));
  EXPECT_FALSE(SpreadReduceHead(allreduce, {3, 4, 5}, &split, &shares));
  // A middle with scratch: the head's would have to share it.
  ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, 1, sig), &split));
  split.middle.scratch_bytes = 64;
  EXPECT_FALSE(SpreadReduceHead(sig, {3, 4, 5}, &split, &shares));
  // One local rank: nothing to spread.
  EXPECT_FALSE(SpreadReduceHead(sig, {4}, &split, &shares));
  EXPECT_EQ(shares.size(), 1u);
}

TEST(SpreadReduce, RefusesWhatItIsNotFor) {
  Schedule schedule;
  std::vector<ScratchShare> shares;
  Status st = BuildSpreadReduce({Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 8}, AllRanks(2), 2,
                                &schedule, &shares);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("is for a Reduce, not allreduce"), std::string::npos) << st.ToString();
  st = BuildSpreadReduce({Collective::kReduce, DataType::kFloat32, RedOp::kSum, 0, 8}, AllRanks(2), 4, &schedule,
                         &shares);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("(2 local of 4)"), std::string::npos) << st.ToString();
  st = BuildSpreadReduce({Collective::kReduce, DataType::kFloat32, RedOp::kSum, 3, 8}, AllRanks(3), 3, &schedule,
                         &shares);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("root 3 is not one of its 3 ranks"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace baton::test
