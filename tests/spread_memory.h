// Memory for the spread shapes' tests (collectives/spread_*.h), without a
// GPU: every rank's buffers stand for GPU memory on GPU r, and inputs whose
// fold depends on its order, to tell the host's order from another.
#pragma once

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "collectives/device_steps.h"
#include "collectives/spread_scratch_fold.h"
#include "tests/schedule_simulator.h"

namespace baton::test {

// Rank r's buffers on GPU r; the scratch of `shares` (if any; else the
// schedule's, whole, on GPU 0) each in an allocation of its own, filled
// with a poison the result must not show, on its rank's GPU.
struct GpuMemory {
  std::vector<DeviceRankBuffers> buffers;
  std::vector<std::vector<uint8_t>> pieces;
  DeviceMemory memory;
};
void PlaceOnGpus(RankMemory& mem, int world, const Schedule& schedule, const std::vector<ScratchShare>& shares,
                 GpuMemory* out);

// That `shares` are compact pieces of `schedule`'s scratch, in order from
// offset 0: piece i of `bytes[i]` bytes on the GPU of rank `owners[i]`.
::testing::AssertionResult SharesAreCompact(const Schedule& schedule, const std::vector<ScratchShare>& shares,
                                            const std::vector<int>& owners, const std::vector<uint64_t>& bytes);

// That the `bytes` at `p` lie wholly inside the `buf_bytes` at `buf`.
bool Within(const uint8_t* p, uint64_t bytes, const uint8_t* buf, uint64_t buf_bytes);

// PlaceOnGpus, then `schedule` planned there into `steps`, which must be
// ordered wherever two of them touch the same bytes.
::testing::AssertionResult PlanOnGpus(RankMemory& mem, int world, const Schedule& schedule,
                                      const std::vector<ScratchShare>& shares, GpuMemory* gpus,
                                      std::vector<DeviceStep>* steps);

// float32 inputs whose sum depends on the order of the folds: magnitudes
// from 1e-4 to 1e4, both signs, the same for the same `sig` and `world`.
void FillOrderSensitive(RankMemory& mem, const OpSignature& sig, int world);

// Fresh order-sensitive memory for `sig` over `world` ranks, with
// `schedule` (of scratch pieces `shares`) planned on their GPUs and run in
// GPU order `order` (tests/gpu_orders.h): the ranks' buffers afterwards. A
// plan that fails fails the test.
RankMemory RunOnGpus(const OpSignature& sig, int world, bool in_place, const Schedule& schedule,
                     const std::vector<ScratchShare>& shares, int order);

}  // namespace baton::test
