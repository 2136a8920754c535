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

// Copies of at least this many bytes whose destination no later step reads
// (a rank's output at the end of a collective) bypass the cache
// (stream_copy.h): that large, the destination would not stay in cache for
// its reader anyway, and skipping the read for ownership saves a third of
// the copy's memory traffic. Smaller ones measured slower streamed (their
// reader finds them in cache otherwise): docs/benchmarks.md, "Non-temporal
// copies".
inline constexpr uint64_t kStreamMinBytes = 16 << 20;

// Bit i set: steps[i] is a copy that RunLocalSteps streams (at least
// kStreamMinBytes, and no later step reads its destination: as a source, or
// as the destination of a reduce or divide). Lists of over 64 steps: none.
uint64_t StreamableCopies(const std::vector<LocalStep>& steps);

}  // namespace baton
