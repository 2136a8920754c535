// SpreadReduce (collectives/spread_reduce.h): each GPU folds its chunk, the
// root's GPU takes in (n-1)/n of a vector instead of n-1 vectors, and the
// result is the host schedule's bit for bit, in every order GPUs may
// choose. (That it is the reference, element by element, for every dtype,
// reduction and in-place root, is checked with the other single-node
// schedules by device_steps_test.cc.)
#include "collectives/spread_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "collectives/device_steps.h"
#include "collectives/layout.h"
#include "tests/gpu_orders.h"
#include "tests/schedule_parts.h"
#include "tests/schedule_simulator.h"

namespace baton::test {
namespace {

// Rank r's buffers on GPU r; the scratch of `shares` (if any) each in an
// allocation of its own, filled with a poison the result must not show,
// on its rank's GPU.
struct GpuMemory {
  std::vector<DeviceRankBuffers> buffers;
  std::vector<std::vector<uint8_t>> pieces;
  DeviceMemory memory;
};
void PlaceOnGpus(RankMemory& mem, int world, const Schedule& schedule, const std::vector<ScratchShare>& shares,
                 GpuMemory* out) {
  out->buffers.assign(world, {});
  for (int r = 0; r < world; ++r) {
    out->buffers[r] = {mem.sim[r].send, mem.sim[r].send_bytes, r, mem.sim[r].recv, mem.sim[r].recv_bytes, r};
  }
  out->pieces.clear();
  out->memory = {&out->buffers, {}};
  if (shares.empty() && schedule.scratch_bytes > 0) {
    out->pieces.emplace_back(schedule.scratch_bytes, 0x5A);
    out->memory.scratch.push_back({0, schedule.scratch_bytes, out->pieces.back().data(), 0});
  }
  out->pieces.reserve(shares.size());
  for (const ScratchShare& s : shares) {
    out->pieces.emplace_back(s.bytes, 0x5A);
    out->memory.scratch.push_back({s.offset, s.bytes, out->pieces.back().data(), s.rank});
  }
}

// Inputs whose sum depends on the order of the folds: magnitudes from 1e-4
// to 1e4, both signs.
void FillOrderSensitive(RankMemory& mem, const OpSignature& sig, int world) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-4, 4);
  for (int r = 0; r < world; ++r) {
    for (uint64_t i = 0; i < sig.count; ++i) {
      const float v = mantissa(gen) * std::pow(10.0f, static_cast<float>(exponent(gen)));
      std::memcpy(mem.sim[r].send + i * sizeof(float), &v, sizeof(float));
    }
  }
}

// Four ranks on four GPUs, root 2: every GPU runs the three folds of its
// chunk (the last chunk shorter), into its own memory, waiting for nothing
// on another GPU; the root's GPU takes in the three other chunks, once each.
TEST(SpreadReduce, EveryGpuFoldsItsChunkAndTheRootTakesInOneVectorLessItsOwnChunk) {
  const uint64_t count = 100003;  // 400012 bytes: chunks of 100096, the last 99724
  const OpSignature sig{Collective::kReduce, DataType::kFloat32, RedOp::kSum, 2, count};
  Schedule schedule;
  std::vector<ScratchShare> shares;
  ASSERT_TRUE(BuildSpreadReduce(sig, AllRanks(4), 4, &schedule, &shares).ok());
  // Scratch for the three chunks the root does not own, compact, each on
  // its owner's GPU.
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(schedule.scratch_bytes, 2 * 100096u + 99724u);
  const int owners[] = {0, 1, 3};
  uint64_t at = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    EXPECT_EQ(shares[i].rank, owners[i]);
    EXPECT_EQ(shares[i].offset, at);
    EXPECT_EQ(shares[i].bytes, owners[i] == 3 ? 99724u : 100096u);
    at += shares[i].bytes;
  }

  RankMemory mem = MakeRankMemory(sig, 4, false);
  GpuMemory gpus;
  PlaceOnGpus(mem, 4, schedule, shares, &gpus);
  std::vector<DeviceStep> steps;
  ASSERT_TRUE(PlanDeviceSteps(schedule, gpus.memory, &steps).ok());
  ASSERT_TRUE(StepsOrderedWhereTheyTouch(steps));
  std::vector<int> reductions(4, 0);
  std::vector<uint64_t> reduced(4, 0);
  uint64_t into_root_from_others = 0;
  auto in = [](const uint8_t* p, const uint8_t* buf, uint64_t bytes) { return p >= buf && p < buf + bytes; };
  for (const DeviceStep& s : steps) {
    if (s.kind == StepKind::kReduce) {
      ++reductions[s.device];
      reduced[s.device] += s.bytes;
    }
    if (s.kind == StepKind::kCopy && in(s.dst, mem.sim[2].recv, 4 * count) && !in(s.src, mem.sim[2].send, 4 * count)) {
      into_root_from_others += s.bytes;
    }
  }
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(reductions[g], 3) << "GPU " << g;
    EXPECT_EQ(reduced[g], 3 * (g < 3 ? 100096u : 99724u)) << "GPU " << g;
  }
  // Every chunk but the root's own comes in once.
  EXPECT_EQ(into_root_from_others, 4 * count - 100096u);
  const auto before = HappensBefore(steps);
  for (size_t j = 0; j < steps.size(); ++j) {
    if (steps[j].kind != StepKind::kReduce) continue;
    EXPECT_LE(std::count(before[j].begin(), before[j].end(), true), 3)
        << "fold step " << j << " on GPU " << steps[j].device << " waits for another GPU";
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
          RankMemory mem = MakeRankMemory(sig, world, in_place);
          FillOrderSensitive(mem, sig, world);
          GpuMemory gpus;
          PlaceOnGpus(mem, world, schedule, shares, &gpus);
          std::vector<DeviceStep> steps;
          ASSERT_TRUE(PlanDeviceSteps(schedule, gpus.memory, &steps).ok());
          RunLikeGpus(steps, sig.dtype, sig.redop, order);
          ASSERT_EQ(mem.sim[root].recv_bytes, want.size());
          EXPECT_EQ(std::memcmp(mem.sim[root].recv, want.data(), want.size()), 0) << "order " << order;
        }
      }
    }
  }
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
