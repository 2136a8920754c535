// The plan that runs a single-node schedule on GPUs (collectives/
// device_steps.h), checked without a GPU: every single-node schedule, with
// the ranks' buffers spread over one, two or one GPU each, is planned, then
// run on host memory in orders a set of GPUs may choose (each GPU's steps
// in order, a step after the steps it waits for, otherwise any
// interleaving), and every rank's result is compared with the reference
// element by element. Separately, every pair of steps that touch the same
// memory must be ordered by the plan (the property the runs sample).
#include "collectives/device_steps.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "collectives/reference.h"
#include "collectives/spread_allreduce.h"
#include "collectives/spread_copy_out.h"
#include "collectives/spread_reduce.h"
#include "tests/gpu_orders.h"
#include "tests/schedule_parts.h"
#include "tests/schedule_simulator.h"

namespace baton::test {
namespace {
using namespace baton::reference;

struct DeviceCase {
  const char* name;
  int ranks;
  int ranks_per_gpu;  // rank r on GPU r / ranks_per_gpu
};

const DeviceCase kDeviceCases[] = {
    {"4ranks_1gpu", 4, 4}, {"2ranks_2gpus", 2, 1}, {"3ranks_3gpus", 3, 1},
    {"4ranks_2gpus", 4, 2}, {"4ranks_4gpus", 4, 1}, {"8ranks_8gpus", 8, 1},
};

const Collective kCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                                   Collective::kAllGather, Collective::kReduceScatter, Collective::kScatter,
                                   Collective::kGather, Collective::kAllToAll};

// Plans `sig` on one node of dc.ranks ranks (BuildSchedule's shape, or with
// `spread` the spread AllReduce's or Reduce's, or the spread copy-out of a
// Broadcast's, the spread AllReduce's or Reduce's scratch pieces each in an allocation of
// its own on its owner's GPU), checks the ordering property, runs the plan
// in three orders and checks every rank's result.
void PlanRunAndCheck(const DeviceCase& dc, const OpSignature& sig, bool in_place, bool spread = false) {
  const NodeLayout layout = NodeLayout::Blocked({dc.ranks});
  const int world = dc.ranks;
  PlanInput in{sig, &layout, 0, Algorithm::kAuto, {}};
  {
    RankMemory probe = MakeRankMemory(sig, world, in_place);
    in.in_place_ranks = probe.in_place_ranks;
  }
  Schedule schedule;
  std::vector<ScratchShare> shares;
  if (spread && sig.collective == Collective::kAllReduce) {
    ASSERT_TRUE(BuildSpreadAllReduce(sig, AllRanks(world), world, &schedule, &shares).ok());
  } else if (spread && sig.collective == Collective::kReduce) {
    ASSERT_TRUE(BuildSpreadReduce(sig, AllRanks(world), world, &schedule, &shares).ok());
  } else {
    ASSERT_TRUE(BuildSchedule(in, &schedule).ok());
  }
  if (spread && sig.collective == Collective::kBroadcast) {
    ASSERT_TRUE(SpreadCopyOut(AllRanks(world), &schedule)) << sig.ToString();
  }
  // Three runs, each from fresh buffers: GPU order as queued, last GPU
  // first, and alternating.
  for (int order = 0; order < kGpuOrders; ++order) {
    RankMemory mem = MakeRankMemory(sig, world, in_place);
    std::vector<DeviceRankBuffers> buffers(world);
    for (int r = 0; r < world; ++r) {
      const int gpu = r / dc.ranks_per_gpu;
      buffers[r] = {mem.sim[r].send, mem.sim[r].send_bytes, gpu, mem.sim[r].recv, mem.sim[r].recv_bytes, gpu};
    }
    std::vector<std::vector<uint8_t>> scratch;
    DeviceMemory memory{&buffers, {}};
    if (shares.empty()) shares.push_back({0, schedule.scratch_bytes, 0});
    scratch.reserve(shares.size());
    for (const ScratchShare& share : shares) {
      scratch.emplace_back(share.bytes, 0x5A);
      memory.scratch.push_back({share.offset, share.bytes, scratch.back().data(), share.rank / dc.ranks_per_gpu});
    }
    std::vector<DeviceStep> steps;
    const Status st = PlanDeviceSteps(schedule, memory, &steps);
    ASSERT_TRUE(st.ok()) << sig.ToString() << ": " << st.ToString();
    if (order == 0) {
      ASSERT_TRUE(StepsOrderedWhereTheyTouch(steps)) << sig.ToString() << (in_place ? " in place" : "");
    }
    RunLikeGpus(steps, sig.dtype, sig.redop, order);
    if (::testing::Test::HasFatalFailure()) return;
    for (int r = 0; r < world; ++r) {
      Bytes want = Expected(sig, world, r, mem.inputs);
      Bytes got(mem.sim[r].recv, mem.sim[r].recv + mem.sim[r].recv_bytes);
      if (want.empty() && got.empty()) continue;
      std::string msg;
      ASSERT_EQ(FirstMismatch(sig.dtype, got, want, &msg), -1)
          << sig.ToString() << (in_place ? " in place" : "") << " order " << order << " rank " << r << ": " << msg;
    }
  }
}

class DeviceStepsMatrix : public ::testing::TestWithParam<std::tuple<size_t, Collective>> {};

TEST_P(DeviceStepsMatrix, AnyOrderTheGpusMayChooseGivesTheReference) {
  const DeviceCase& dc = kDeviceCases[std::get<0>(GetParam())];
  const Collective coll = std::get<1>(GetParam());
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16, DataType::kInt32}) {
    for (RedOp o : {RedOp::kSum, RedOp::kMax, RedOp::kAvg}) {
      if (!IsReduction(coll) && o != RedOp::kSum) continue;
      for (uint64_t count : {1ull, 7ull, 1027ull}) {
        for (bool in_place : {false, true}) {
          const OpSignature sig{coll, t, o, HasRoot(coll) ? dc.ranks - 1 : -1, count};
          PlanRunAndCheck(dc, sig, in_place);
          if (HasFailure()) return;
          // What the daemon runs for an AllReduce or a Reduce over several
          // GPUs, and for a Broadcast over three or more.
          if ((coll == Collective::kAllReduce || coll == Collective::kReduce ||
               (coll == Collective::kBroadcast && dc.ranks > 2)) &&
              dc.ranks_per_gpu < dc.ranks) {
            PlanRunAndCheck(dc, sig, in_place, /*spread=*/true);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    OneNode, DeviceStepsMatrix,
    ::testing::Combine(::testing::Range<size_t>(0, std::size(kDeviceCases)), ::testing::ValuesIn(kCollectives)),
    [](const auto& info) {
      return std::string(kDeviceCases[std::get<0>(info.param)].name) + "_" + CollectiveName(std::get<1>(info.param));
    });

// The point of one stream per GPU: steps on different GPUs that share no
// memory do not wait for each other. With four GPUs the longest chain of
// ordered steps must be shorter than the whole list.
TEST(DeviceSteps, GpusWorkAtOnceWhereStepsShareNoMemory) {
  const NodeLayout layout = NodeLayout::Blocked({4});
  for (Collective coll : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    const OpSignature sig{coll, DataType::kFloat32, RedOp::kSum, -1, 1 << 16};
    Schedule schedule;
    ASSERT_TRUE(BuildSchedule(PlanInput{sig, &layout, 0, Algorithm::kAuto, {}}, &schedule).ok());
    RankMemory mem = MakeRankMemory(sig, 4, false);
    std::vector<DeviceRankBuffers> buffers(4);
    for (int r = 0; r < 4; ++r) {
      buffers[r] = {mem.sim[r].send, mem.sim[r].send_bytes, r, mem.sim[r].recv, mem.sim[r].recv_bytes, r};
    }
    std::vector<uint8_t> scratch(schedule.scratch_bytes);
    std::vector<DeviceStep> steps;
    ASSERT_TRUE(PlanDeviceSteps(schedule, {&buffers, {{0, scratch.size(), scratch.data(), 0}}}, &steps).ok());
    const auto before = HappensBefore(steps);
    size_t longest = 0;
    for (size_t j = 0; j < steps.size(); ++j) {
      longest = std::max<size_t>(longest, 1 + std::count(before[j].begin(), before[j].end(), true));
    }
    EXPECT_EQ(DevicesOf(steps).size(), 4u) << CollectiveName(coll);
    EXPECT_LT(longest, steps.size()) << CollectiveName(coll) << ": the plan runs its " << steps.size()
                                     << " steps one after another";
  }
}

// What the plan refuses, so that the host path runs the collective instead.
TEST(DeviceSteps, RefusesWhatItCannotRunExactlyAsTheHostWould) {
  std::vector<uint8_t> mem(256);
  std::vector<DeviceRankBuffers> buffers(1);
  // The rank's send buffer starts 16 bytes into its receive buffer.
  buffers[0] = {mem.data() + 16, 64, 0, mem.data(), 128, 0};
  const DeviceMemory memory{&buffers, {}};
  std::vector<DeviceStep> steps;
  auto plan = [&](Step step) {
    Schedule s;
    s.phases.push_back(Phase{{step}});
    return PlanDeviceSteps(s, memory, &steps);
  };
  Status st = plan({StepKind::kCopy, {BufKind::kSend, 0, 0, 64}, {BufKind::kRecv, 0, 0, 64}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("partly overlap"), std::string::npos) << st.ToString();
  st = plan({StepKind::kReduce, {BufKind::kSend, 0, 0, 64}, {BufKind::kRecv, 0, 32, 64}});
  EXPECT_NE(st.message().find("partly overlap"), std::string::npos) << st.ToString();
  st = plan({StepKind::kCopy, {BufKind::kSend, 0, 0, 64}, {BufKind::kRecv, 0, 96, 64}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("outside its GPU buffer (rank 0, offset 96, bytes 64, buffer 128)"), std::string::npos)
      << st.ToString();
  st = plan({StepKind::kSend, {BufKind::kSend, 0, 0, 64}, {}, 1});
  EXPECT_NE(st.message().find("network steps"), std::string::npos) << st.ToString();
  st = plan({StepKind::kCopy, {BufKind::kScratch, -1, 0, 8}, {BufKind::kRecv, 0, 0, 8}});
  EXPECT_NE(st.message().find("region in scratch (offset 0) outside the GPU scratch"), std::string::npos)
      << st.ToString();
  // A copy of a region onto itself is no step at all; a disjoint one is.
  EXPECT_TRUE(plan({StepKind::kCopy, {BufKind::kRecv, 0, 8, 8}, {BufKind::kRecv, 0, 8, 8}}).ok());
  EXPECT_TRUE(steps.empty());
  EXPECT_TRUE(plan({StepKind::kCopy, {BufKind::kSend, 0, 48, 16}, {BufKind::kRecv, 0, 96, 16}}).ok());
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].src, mem.data() + 64);
  EXPECT_EQ(steps[0].dst, mem.data() + 96);
}

// Scratch in pieces on two GPUs (a spread fold, spread_scratch_fold.h): a
// region resolves into the piece that holds it, on that piece's GPU, and
// one across two pieces is refused (a step runs on one GPU's memory).
TEST(DeviceSteps, AScratchRegionLiesInOnePieceOnItsGpu) {
  std::vector<uint8_t> gpu0(64), gpu1(64), recv(64);
  std::vector<DeviceRankBuffers> buffers(1);
  buffers[0] = {nullptr, 0, -1, recv.data(), 64, 0};
  const DeviceMemory memory{&buffers, {{0, 64, gpu0.data(), 0}, {64, 64, gpu1.data(), 1}}};
  std::vector<DeviceStep> steps;
  auto plan = [&](Step step) {
    Schedule s;
    s.scratch_bytes = 128;
    s.phases.push_back(Phase{{step}});
    return PlanDeviceSteps(s, memory, &steps);
  };
  ASSERT_TRUE(plan({StepKind::kCopy, {BufKind::kRecv, 0, 0, 16}, {BufKind::kScratch, -1, 80, 16}}).ok());
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].dst, gpu1.data() + 16);
  EXPECT_EQ(steps[0].device, 1) << "a step runs on the GPU that holds its destination";
  ASSERT_TRUE(plan({StepKind::kCopy, {BufKind::kScratch, -1, 48, 16}, {BufKind::kRecv, 0, 0, 16}}).ok());
  EXPECT_EQ(steps[0].src, gpu0.data() + 48);
  EXPECT_EQ(steps[0].device, 0);
  const Status st = plan({StepKind::kCopy, {BufKind::kScratch, -1, 56, 16}, {BufKind::kRecv, 0, 0, 16}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("region in scratch (offset 56, bytes 16) outside its GPU's piece (offset 0, bytes 64)"),
            std::string::npos)
      << st.ToString();
  // Pieces that leave a gap cover only what comes before it.
  EXPECT_EQ(ScratchCovered({{0, 64, gpu0.data(), 0}, {96, 32, gpu1.data(), 1}}), 64u);
  EXPECT_EQ(ScratchCovered(memory.scratch), 128u);
}

}  // namespace
}  // namespace baton::test

namespace baton::test {
namespace {

// Fusing (PlanDeviceSteps): a copy then folds into one region become one
// step whose operands are the chain's, in order; a fold whose source is the
// destination ends the chain (and leads no other: it reads what it
// writes); a chain of more than kMaxFusedOperands operands takes several
// steps; a step of another GPU that waits for any step of a chain waits for
// the fused one. Run as GPUs may order them, the steps give the chain's
// result, computed here one fold after another.
TEST(DeviceSteps, AChainOfFoldsIntoOneRegionIsOneStep) {
  constexpr int kInputs = 21;  // ranks 0..20 on GPU 0, rank 21 on GPU 1
  constexpr uint64_t kCount = 67;  // int32: 268 bytes, not a multiple of 16
  constexpr uint64_t kBytes = kCount * 4;
  std::vector<std::vector<int32_t>> send(kInputs + 1, std::vector<int32_t>(kCount));
  for (int r = 0; r <= kInputs; ++r) {
    for (uint64_t i = 0; i < kCount; ++i) send[r][i] = static_cast<int32_t>(r * 1000 + i);
  }
  std::vector<int32_t> recv0(kCount, -1), recv_other(kCount, -1);
  std::vector<DeviceRankBuffers> buffers(kInputs + 1);
  for (int r = 0; r <= kInputs; ++r) {
    buffers[r] = {reinterpret_cast<uint8_t*>(send[r].data()), kBytes, r == kInputs ? 1 : 0, nullptr, 0, -1};
  }
  buffers[0].recv = reinterpret_cast<uint8_t*>(recv0.data());
  buffers[0].recv_bytes = kBytes;
  buffers[0].recv_device = 0;
  buffers[kInputs].recv = reinterpret_cast<uint8_t*>(recv_other.data());
  buffers[kInputs].recv_bytes = kBytes;
  buffers[kInputs].recv_device = 1;
  const Region d{BufKind::kRecv, 0, 0, kBytes};
  auto in = [](int r) { return Region{BufKind::kSend, r, 0, kBytes}; };

  // Copy 0, fold 1 and 2, fold d into itself, fold 3; then GPU 1 copies d
  // into rank 21's buffer; then copy 4, fold 5..20 into d (17 operands).
  Schedule schedule;
  std::vector<Step> steps{{StepKind::kCopy, in(0), d},   {StepKind::kReduce, in(1), d}, {StepKind::kReduce, in(2), d},
                          {StepKind::kReduce, d, d},     {StepKind::kReduce, in(3), d},
                          {StepKind::kCopy, d, {BufKind::kRecv, kInputs, 0, kBytes}}};
  steps.push_back({StepKind::kCopy, in(4), d});
  for (int r = 5; r < kInputs; ++r) steps.push_back({StepKind::kReduce, in(r), d});
  schedule.phases.push_back(Phase{steps});

  std::vector<DeviceStep> planned;
  ASSERT_TRUE(PlanDeviceSteps(schedule, {&buffers, {}}, &planned).ok());
  ASSERT_EQ(planned.size(), 6u);
  auto ptr = [&](int r) { return reinterpret_cast<const uint8_t*>(send[r].data()); };
  EXPECT_EQ(FoldOperands(planned[0]), (std::vector<const uint8_t*>{ptr(0), ptr(1), ptr(2)}));
  EXPECT_TRUE(planned[0].from_src);
  EXPECT_TRUE(planned[1].more.empty() && !planned[1].from_src) << "d folded into itself stays a step of its own";
  EXPECT_EQ(planned[1].src, planned[1].dst);
  EXPECT_TRUE(planned[2].more.empty() && !planned[2].from_src) << "the fold of 3 has nothing after it to fuse";
  EXPECT_EQ(planned[3].device, 1);
  EXPECT_EQ(planned[3].waits, std::vector<uint32_t>{2}) << "GPU 1's copy waits for the last step writing d";
  std::vector<const uint8_t*> first16{ptr(4)}, rest{planned[5].dst};
  for (int r = 5; r < 4 + static_cast<int>(kMaxFusedOperands); ++r) first16.push_back(ptr(r));
  for (int r = 4 + static_cast<int>(kMaxFusedOperands); r < kInputs; ++r) rest.push_back(ptr(r));
  EXPECT_EQ(FoldOperands(planned[4]), first16);
  EXPECT_EQ(FoldOperands(planned[5]), rest);
  EXPECT_EQ(planned[4].waits, std::vector<uint32_t>{3}) << "d is rewritten after GPU 1 read it";
  ASSERT_TRUE(StepsOrderedWhereTheyTouch(planned));

  for (int order = 0; order < kGpuOrders; ++order) {
    std::fill(recv0.begin(), recv0.end(), -1);
    std::fill(recv_other.begin(), recv_other.end(), -1);
    RunLikeGpus(planned, DataType::kInt32, RedOp::kSum, order);
    for (uint64_t i = 0; i < kCount; ++i) {
      const int32_t first = (send[0][i] + send[1][i] + send[2][i]) * 2 + send[3][i];
      int32_t last = 0;
      for (int r = 4; r < kInputs; ++r) last += send[r][i];
      ASSERT_EQ(recv_other[i], first) << "order " << order << " element " << i;
      ASSERT_EQ(recv0[i], last) << "order " << order << " element " << i;
    }
  }
}

}  // namespace
}  // namespace baton::test
