// The local steps of a schedule phase (copy, reduce, divide), with their
// regions resolved to memory, and how they run: in order, but block by
// block and on several threads when that gives the same result.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/schedule.h"
#include "common/types.h"
#include "common/worker_pool.h"

namespace baton {

struct LocalStep {
  StepKind kind = StepKind::kCopy;  // kCopy, kReduce or kDivide
  const uint8_t* src = nullptr;     // null for kDivide
  uint8_t* dst = nullptr;
  uint64_t bytes = 0;               // of src and of dst
  uint64_t divisor = 0;             // kDivide
};

// Runs `steps` with the effect of running them one after another. `pool`
// (optional) shares large ones among its threads.
void RunLocalSteps(const std::vector<LocalStep>& steps, DataType dtype, RedOp redop, WorkerPool* pool);

}  // namespace baton
