#include "tests/spread_memory.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "tests/gpu_orders.h"

namespace baton::test {

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

bool Within(const uint8_t* p, uint64_t bytes, const uint8_t* buf, uint64_t buf_bytes) {
  return p >= buf && p + bytes <= buf + buf_bytes;
}

::testing::AssertionResult SharesAreCompact(const Schedule& schedule, const std::vector<ScratchShare>& shares,
                                            const std::vector<int>& owners, const std::vector<uint64_t>& bytes) {
  if (shares.size() != owners.size()) {
    return ::testing::AssertionFailure() << shares.size() << " pieces, not " << owners.size();
  }
  uint64_t at = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const ScratchShare& s = shares[i];
    if (s.rank != owners[i] || s.offset != at || s.bytes != bytes[i]) {
      return ::testing::AssertionFailure() << "piece " << i << " is " << s.bytes << " bytes at " << s.offset
                                           << " on rank " << s.rank << "'s GPU, not " << bytes[i] << " at " << at
                                           << " on rank " << owners[i] << "'s";
    }
    at += s.bytes;
  }
  if (schedule.scratch_bytes != at) {
    return ::testing::AssertionFailure() << "the schedule has " << schedule.scratch_bytes << " bytes of scratch, the pieces "
                                         << at;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult PlanOnGpus(RankMemory& mem, int world, const Schedule& schedule,
                                      const std::vector<ScratchShare>& shares, GpuMemory* gpus,
                                      std::vector<DeviceStep>* steps) {
  PlaceOnGpus(mem, world, schedule, shares, gpus);
  const Status planned = PlanDeviceSteps(schedule, gpus->memory, steps);
  if (!planned.ok()) return ::testing::AssertionFailure() << planned.ToString();
  return StepsOrderedWhereTheyTouch(*steps);
}

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

RankMemory RunOnGpus(const OpSignature& sig, int world, bool in_place, const Schedule& schedule,
                     const std::vector<ScratchShare>& shares, int order) {
  RankMemory mem = MakeRankMemory(sig, world, in_place);
  FillOrderSensitive(mem, sig, world);
  GpuMemory gpus;
  std::vector<DeviceStep> steps;
  const ::testing::AssertionResult planned = PlanOnGpus(mem, world, schedule, shares, &gpus, &steps);
  EXPECT_TRUE(planned);
  if (planned) RunLikeGpus(steps, sig.dtype, sig.redop, order);
  return mem;
}

}  // namespace baton::test
