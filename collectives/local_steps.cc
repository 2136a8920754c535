#include "collectives/local_steps.h"

#include <algorithm>
#include <cstring>

#include "collectives/reduce.h"

namespace baton {
namespace {

bool Disjoint(const uint8_t* a, const uint8_t* b, uint64_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x + bytes <= y || y + bytes <= x;
}

// True if bytes [off, off + len) of every step may be computed without the
// other bytes: all steps have one length, and any two regions of the group
// (where one is written) are either the same region or do not overlap. Then
// byte j of every step depends only on byte j of earlier steps.
bool Elementwise(const std::vector<LocalStep>& steps) {
  const uint64_t len = steps.front().bytes;
  auto compatible = [len](const uint8_t* a, const uint8_t* b) { return a == b || Disjoint(a, b, len); };
  for (size_t i = 0; i < steps.size(); ++i) {
    const LocalStep& w = steps[i];
    if (w.bytes != len) return false;
    if (w.src != nullptr && !compatible(w.src, w.dst)) return false;
    for (size_t k = i + 1; k < steps.size(); ++k) {
      const LocalStep& o = steps[k];
      if (!compatible(w.dst, o.dst) || (o.src != nullptr && !compatible(w.dst, o.src)) ||
          (w.src != nullptr && !compatible(w.src, o.dst))) {
        return false;
      }
    }
  }
  return true;
}

// Runs steps on bytes [off, off + len) of each.
void RunSlice(const std::vector<LocalStep>& steps, uint64_t off, uint64_t len, DataType dtype, RedOp redop) {
  const uint64_t esize = DataTypeSize(dtype);
  for (const LocalStep& s : steps) {
    switch (s.kind) {
      case StepKind::kCopy:
        if (s.src != s.dst) std::memmove(s.dst + off, s.src + off, len);
        break;
      case StepKind::kReduce:
        ReduceInto(dtype, redop, s.dst + off, s.src + off, len / esize);
        break;
      case StepKind::kDivide:
        DivideBy(dtype, s.dst + off, len / esize, s.divisor);
        break;
      default:
        break;
    }
  }
}

// Why blocks: a 4-rank AllReduce inside one node is a copy, three reductions
// and four copies of the same vector. Run one after another, each streams
// the whole vector through memory (17 passes); run block by block, a block
// stays in cache through all eight steps and memory sees each buffer once
// (8 passes). Blocks are independent, so the pool's threads share them.
constexpr uint64_t kBlockBytes = 64 << 10;        // a multiple of every element size
constexpr uint64_t kParallelMinBytes = 1 << 20;   // below this, waking helpers costs more than it saves

}  // namespace

void RunLocalSteps(const std::vector<LocalStep>& steps, DataType dtype, RedOp redop, WorkerPool* pool) {
  if (steps.empty()) return;
  auto run_blocked = [&](const std::vector<LocalStep>& group, uint64_t len) {
    const uint64_t blocks = (len + kBlockBytes - 1) / kBlockBytes;
    auto block = [&](size_t b) {
      const uint64_t off = b * kBlockBytes;
      RunSlice(group, off, std::min(kBlockBytes, len - off), dtype, redop);
    };
    if (pool != nullptr && len >= kParallelMinBytes) {
      pool->Run(blocks, block);
    } else {
      for (uint64_t b = 0; b < blocks; ++b) block(b);
    }
  };
  if (steps.front().bytes > 0 && Elementwise(steps)) {
    run_blocked(steps, steps.front().bytes);
    return;
  }
  for (const LocalStep& s : steps) {
    const std::vector<LocalStep> one{s};
    if (s.bytes > 0 && Elementwise(one)) {
      run_blocked(one, s.bytes);
    } else if (s.kind == StepKind::kCopy) {
      if (s.src != s.dst) std::memmove(s.dst, s.src, s.bytes);  // overlapping regions: memmove's order
    } else {
      RunSlice(one, 0, s.bytes, dtype, redop);
    }
  }
}

}  // namespace baton
