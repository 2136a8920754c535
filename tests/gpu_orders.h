// Running a plan of device steps (collectives/device_steps.h) on host
// memory in orders a set of GPUs may choose, for tests without a GPU: each
// GPU's steps in order, a step after the steps it waits for, otherwise any
// interleaving. A plan that leaves two steps touching the same memory
// unordered can give another result in some order; StepsOrderedWhereTheyTouch
// checks that property for every pair, and the runs sample it.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "collectives/device_steps.h"

namespace baton::test {

// before[j][i]: step i finishes before step j starts, by stream order (one
// GPU's steps in order) and waits, transitively.
std::vector<std::vector<bool>> HappensBefore(const std::vector<DeviceStep>& steps);

// Every pair of steps that touch the same memory (one writes what the other
// reads or writes) ordered by stream order and waits; every wait on an
// earlier step of another GPU that records an event.
::testing::AssertionResult StepsOrderedWhereTheyTouch(const std::vector<DeviceStep>& steps);

// The orders RunLikeGpus takes: at every turn, among the GPUs whose next step
// has nothing left to wait for, the first, the last, or each in turn.
inline constexpr int kGpuOrders = 3;

// Runs `steps` (memcpy, the host kernels) in order number `order`; a plan
// that deadlocks fails the test.
void RunLikeGpus(const std::vector<DeviceStep>& steps, DataType dtype, RedOp redop, int order);

}  // namespace baton::test
