// RunLocalSteps must equal running the steps one after another, whatever
// the pool does: checked element by element against a plain sequential
// reference, for groups that are elementwise (run blocked and in parallel)
// and groups that are not (overlapping, shifted regions).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>

#include "collectives/local_steps.h"
#include "collectives/reduce.h"
#include "common/worker_pool.h"

namespace baton {
namespace {

// The obvious implementation: each step over its whole length, in order.
void Sequential(const std::vector<LocalStep>& steps, DataType dtype, RedOp op) {
  for (const LocalStep& s : steps) {
    const uint64_t n = s.bytes / DataTypeSize(dtype);
    if (s.kind == StepKind::kCopy) std::memmove(s.dst, s.src, s.bytes);
    if (s.kind == StepKind::kReduce) ReduceInto(dtype, op, s.dst, s.src, n);
    if (s.kind == StepKind::kDivide) DivideBy(dtype, s.dst, n, s.divisor);
  }
}

// One arena holds every buffer, so steps can name overlapping regions.
struct Arena {
  explicit Arena(size_t floats) : data(floats) {
    for (size_t i = 0; i < floats; ++i) data[i] = static_cast<float>((i * 37) % 101);
  }
  uint8_t* at(size_t float_index) { return reinterpret_cast<uint8_t*>(data.data() + float_index); }
  std::vector<float> data;
};

// Rewrites `steps` (built against `base`) to point into `other` at the same offsets.
std::vector<LocalStep> Rebase(const std::vector<LocalStep>& steps, Arena& base, Arena& other) {
  auto move = [&](const uint8_t* p) -> uint8_t* {
    return p == nullptr ? nullptr : other.at((p - base.at(0)) / sizeof(float));
  };
  std::vector<LocalStep> out = steps;
  for (LocalStep& s : out) {
    s.src = move(s.src);
    s.dst = move(s.dst);
  }
  return out;
}

void ExpectSameAsSequential(size_t arena_floats, const std::function<std::vector<LocalStep>(Arena&)>& build,
                            RedOp op = RedOp::kSum) {
  WorkerPool pool(3);
  Arena want(arena_floats), got(arena_floats);
  const std::vector<LocalStep> steps = build(want);
  Sequential(steps, DataType::kFloat32, op);
  RunLocalSteps(Rebase(steps, want, got), DataType::kFloat32, op, &pool);
  for (size_t i = 0; i < arena_floats; ++i) {
    ASSERT_EQ(got.data[i], want.data[i]) << "float " << i;
  }
}

constexpr size_t kBig = (3 << 20) / 4 + 5;  // 3 MiB and a bit: several blocks, not a multiple of one

TEST(LocalSteps, FourRankAllReduceShapeIsElementwise) {
  // Copy s0 -> w, reduce s1..s3 into w, divide (avg), copy w -> r1..r3.
  ExpectSameAsSequential(8 * kBig, [](Arena& a) {
    const uint64_t bytes = kBig * sizeof(float);
    auto buf = [&](int k) { return a.at(static_cast<size_t>(k) * kBig); };
    std::vector<LocalStep> steps{{StepKind::kCopy, buf(0), buf(4), bytes, 0}};
    for (int k = 1; k < 4; ++k) steps.push_back({StepKind::kReduce, buf(k), buf(4), bytes, 0});
    steps.push_back({StepKind::kDivide, nullptr, buf(4), bytes, 4});
    for (int k = 5; k < 8; ++k) steps.push_back({StepKind::kCopy, buf(4), buf(k), bytes, 0});
    return steps;
  });
}

TEST(LocalSteps, InPlaceReductionIntoAnInputIsElementwise) {
  ExpectSameAsSequential(3 * kBig, [](Arena& a) {
    const uint64_t bytes = kBig * sizeof(float);
    return std::vector<LocalStep>{{StepKind::kReduce, a.at(kBig), a.at(0), bytes, 0},
                                  {StepKind::kReduce, a.at(2 * kBig), a.at(0), bytes, 0},
                                  {StepKind::kCopy, a.at(0), a.at(kBig), bytes, 0}};
  }, RedOp::kMax);
}

TEST(LocalSteps, ShiftedRegionsFallBackToStepOrder) {
  // The second step reads what the first wrote, one element later: blocking
  // the pair would read elements the first step has not written yet.
  ExpectSameAsSequential(3 * kBig, [](Arena& a) {
    const uint64_t bytes = kBig * sizeof(float);
    return std::vector<LocalStep>{{StepKind::kCopy, a.at(0), a.at(kBig), bytes, 0},
                                  {StepKind::kReduce, a.at(kBig + 1), a.at(2 * kBig - 7), bytes - 4, 0}};
  });
}

TEST(LocalSteps, OverlappingCopyKeepsMemmoveSemantics) {
  ExpectSameAsSequential(2 * kBig, [](Arena& a) {
    return std::vector<LocalStep>{{StepKind::kCopy, a.at(0), a.at(3), kBig * sizeof(float), 0}};
  });
  ExpectSameAsSequential(2 * kBig, [](Arena& a) {
    return std::vector<LocalStep>{{StepKind::kCopy, a.at(3), a.at(0), kBig * sizeof(float), 0}};
  });
}

TEST(LocalSteps, StepsOfDifferentLengthsRunInOrder) {
  // AllGather-like copies into one output at different offsets and sizes.
  ExpectSameAsSequential(4 * kBig, [](Arena& a) {
    return std::vector<LocalStep>{{StepKind::kCopy, a.at(0), a.at(2 * kBig), kBig * sizeof(float), 0},
                                  {StepKind::kCopy, a.at(2 * kBig + 10), a.at(kBig), 1000 * sizeof(float), 0},
                                  {StepKind::kReduce, a.at(kBig), a.at(2 * kBig), kBig * sizeof(float), 0}};
  });
}

// Large enough for the copies at the end to stream (stream_copy.h), and
// not a multiple of a block or of a cache line.
constexpr size_t kHuge = kStreamMinBytes / sizeof(float) + 5;

TEST(LocalSteps, StreamedCopiesGiveTheSameResultsInEveryShape) {
  const uint64_t bytes = kHuge * sizeof(float);
  // 4-rank AllReduce: the copies out of the work buffer stream.
  ExpectSameAsSequential(8 * kHuge, [&](Arena& a) {
    auto buf = [&](int k) { return a.at(static_cast<size_t>(k) * kHuge); };
    std::vector<LocalStep> steps{{StepKind::kCopy, buf(0), buf(4), bytes, 0}};
    for (int k = 1; k < 4; ++k) steps.push_back({StepKind::kReduce, buf(k), buf(4), bytes, 0});
    for (int k = 5; k < 8; ++k) steps.push_back({StepKind::kCopy, buf(4), buf(k), bytes, 0});
    EXPECT_EQ(StreamableCopies(steps), 0b1110000u);
    return steps;
  });
  // ReduceScatter: a copy into scratch that the reductions then read (must
  // not stream), then quarter-size copies out (too small to stream).
  ExpectSameAsSequential(6 * kHuge, [&](Arena& a) {
    std::vector<LocalStep> steps{{StepKind::kCopy, a.at(0), a.at(4 * kHuge), bytes, 0},
                                 {StepKind::kReduce, a.at(kHuge), a.at(4 * kHuge), bytes, 0},
                                 {StepKind::kReduce, a.at(2 * kHuge), a.at(4 * kHuge), bytes, 0},
                                 {StepKind::kCopy, a.at(4 * kHuge), a.at(3 * kHuge), bytes / 2, 0},
                                 {StepKind::kCopy, a.at(4 * kHuge + kHuge / 2), a.at(5 * kHuge), bytes - bytes / 2, 0}};
    EXPECT_EQ(StreamableCopies(steps), 0u);
    return steps;
  });
  // AllGather: halves gathered into one output (later copied from: no
  // stream), then that output copied to two more (streamed).
  ExpectSameAsSequential(5 * kHuge + 1, [&](Arena& a) {
    const size_t half = kHuge / 2;
    std::vector<LocalStep> steps{{StepKind::kCopy, a.at(0), a.at(2 * kHuge), half * sizeof(float), 0},
                                 {StepKind::kCopy, a.at(kHuge), a.at(2 * kHuge + half), (kHuge - half) * sizeof(float), 0},
                                 {StepKind::kCopy, a.at(2 * kHuge), a.at(3 * kHuge), bytes, 0},
                                 {StepKind::kCopy, a.at(2 * kHuge), a.at(4 * kHuge + 1), bytes, 0}};
    EXPECT_EQ(StreamableCopies(steps), 0b1100u);
    return steps;
  });
}

TEST(LocalSteps, OnlyLargeDisjointCopiesWhoseDestinationIsNotReadAgainStream) {
  Arena a(3 * kHuge);
  const uint64_t bytes = kHuge * sizeof(float);
  // Too small.
  EXPECT_EQ(StreamableCopies({{StepKind::kCopy, a.at(0), a.at(kHuge), kStreamMinBytes - 4, 0}}), 0u);
  EXPECT_EQ(StreamableCopies({{StepKind::kCopy, a.at(0), a.at(kHuge), bytes, 0}}), 1u);
  // Overlapping source and destination: memmove's order, not a stream.
  EXPECT_EQ(StreamableCopies({{StepKind::kCopy, a.at(0), a.at(3), bytes, 0}}), 0u);
  // Read later: by a copy (as its source), by a reduction (its destination),
  // by a divide; overwriting it later is not reading it.
  const LocalStep copy{StepKind::kCopy, a.at(0), a.at(kHuge), bytes, 0};
  EXPECT_EQ(StreamableCopies({copy, {StepKind::kCopy, a.at(kHuge + 8), a.at(2 * kHuge), 64, 0}}), 0u);
  EXPECT_EQ(StreamableCopies({copy, {StepKind::kReduce, a.at(0), a.at(kHuge), bytes, 0}}), 0u);
  EXPECT_EQ(StreamableCopies({copy, {StepKind::kDivide, nullptr, a.at(kHuge), bytes, 2}}), 0u);
  EXPECT_EQ(StreamableCopies({copy, {StepKind::kCopy, a.at(2 * kHuge), a.at(kHuge), bytes, 0}}), 0b11u);
}

TEST(WorkerPool, RunsEveryTaskExactlyOnce) {
  WorkerPool pool(4);
  for (size_t n : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(n);
    pool.Run(n, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i << " of " << n;
  }
}

TEST(WorkerPool, ConcurrentCallersEachCompleteTheirOwnTasks) {
  // A caller that finds the pool busy runs its tasks itself.
  WorkerPool pool(3);
  std::vector<std::thread> callers;
  std::vector<uint64_t> sums(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        std::vector<std::atomic<uint64_t>> parts(64);
        pool.Run(parts.size(), [&](size_t i) { parts[i] = i + 1; });
        for (auto& p : parts) sums[c] += p.load();
      }
    });
  }
  for (auto& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(sums[c], 50u * (64 * 65 / 2)) << "caller " << c;
}

}  // namespace
}  // namespace baton
