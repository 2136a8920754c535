#include "collectives/local_steps.h"

#include <algorithm>
#include <cstring>

#include "collectives/reduce.h"
#include "collectives/stream_copy.h"

namespace baton {
namespace {

bool Disjoint(const uint8_t* a, uint64_t a_bytes, const uint8_t* b, uint64_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x + a_bytes <= y || y + b_bytes <= x;
}

bool Disjoint(const uint8_t* a, const uint8_t* b, uint64_t bytes) { return Disjoint(a, bytes, b, bytes); }

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

// Runs steps on bytes [off, off + len) of each; step i's copy goes through
// StreamCopy when bit i of `stream` is set (steps past the 64th never do).
void RunSlice(const std::vector<LocalStep>& steps, uint64_t off, uint64_t len, DataType dtype, RedOp redop,
              uint64_t stream = 0) {
  const uint64_t esize = DataTypeSize(dtype);
  for (size_t i = 0; i < steps.size(); ++i) {
    const LocalStep& s = steps[i];
    switch (s.kind) {
      case StepKind::kCopy:
        if (s.src == s.dst) break;
        if (i < 64 && (stream & (uint64_t{1} << i)) != 0) {
          StreamCopy(s.dst + off, s.src + off, len);
        } else {
          std::memmove(s.dst + off, s.src + off, len);
        }
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

uint64_t StreamableCopies(const std::vector<LocalStep>& steps) {
  if (steps.size() > 64) return 0;
  uint64_t mask = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const LocalStep& w = steps[i];
    if (w.kind != StepKind::kCopy || w.bytes < kStreamMinBytes || !Disjoint(w.src, w.bytes, w.dst, w.bytes)) continue;
    bool read_later = false;
    for (size_t k = i + 1; k < steps.size() && !read_later; ++k) {
      const LocalStep& o = steps[k];
      read_later = (o.src != nullptr && !Disjoint(o.src, o.bytes, w.dst, w.bytes)) ||
                   (o.kind != StepKind::kCopy && !Disjoint(o.dst, o.bytes, w.dst, w.bytes));
    }
    if (!read_later) mask |= uint64_t{1} << i;
  }
  return mask;
}

void RunLocalSteps(const std::vector<LocalStep>& steps, DataType dtype, RedOp redop, WorkerPool* pool) {
  if (steps.empty()) return;
  const uint64_t streamable = StreamableCopies(steps);
  auto run_blocked = [&](const std::vector<LocalStep>& group, uint64_t len, uint64_t stream) {
    const uint64_t blocks = (len + kBlockBytes - 1) / kBlockBytes;
    auto block = [&](size_t b) {
      const uint64_t off = b * kBlockBytes;
      RunSlice(group, off, std::min(kBlockBytes, len - off), dtype, redop, stream);
      if (stream != 0) StreamFence();  // before the pool (or the caller) reports the block done
    };
    if (pool != nullptr && len >= kParallelMinBytes) {
      pool->Run(blocks, block);
    } else {
      for (uint64_t b = 0; b < blocks; ++b) block(b);
    }
  };
  if (steps.front().bytes > 0 && Elementwise(steps)) {
    run_blocked(steps, steps.front().bytes, streamable);
    return;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const LocalStep& s = steps[i];
    const std::vector<LocalStep> one{s};
    if (s.bytes > 0 && Elementwise(one)) {
      run_blocked(one, s.bytes, (streamable >> i) & 1);
    } else if (s.kind == StepKind::kCopy) {
      if (s.src != s.dst) std::memmove(s.dst, s.src, s.bytes);  // overlapping regions: memmove's order
    } else {
      RunSlice(one, 0, s.bytes, dtype, redop);
    }
  }
}

}  // namespace baton
