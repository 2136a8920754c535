#include "tests/gpu_orders.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "collectives/reduce.h"

namespace baton::test {
namespace {

bool Overlap(const uint8_t* a, uint64_t a_bytes, const uint8_t* b, uint64_t b_bytes) {
  return a_bytes > 0 && b_bytes > 0 && a < b + b_bytes && b < a + a_bytes;
}

// Whether `s` reads (a fused step's every source) anything of [p, p+bytes).
bool ReadsFrom(const DeviceStep& s, const uint8_t* p, uint64_t bytes) {
  if (s.src != nullptr && Overlap(s.src, s.bytes, p, bytes)) return true;
  return std::any_of(s.more.begin(), s.more.end(), [&](const uint8_t* m) { return Overlap(m, s.bytes, p, bytes); });
}

// Whether running `j` before `i` could change the result.
bool Touch(const DeviceStep& i, const DeviceStep& j) {
  return Overlap(i.dst, i.bytes, j.dst, j.bytes) || ReadsFrom(j, i.dst, i.bytes) || ReadsFrom(i, j.dst, j.bytes);
}

// A fused fold as the kernel runs it (gpu/reduce_kernels.cu): every
// operand read before dst is written. The folds of the chain it stands for,
// one after another, give the same bits when no source but the first
// overlaps dst, which PlanDeviceSteps ensures; reading them all first
// checks that.
void RunFold(const DeviceStep& s, DataType dtype, RedOp redop) {
  const uint64_t count = s.bytes / DataTypeSize(dtype);
  const std::vector<const uint8_t*> operands = FoldOperands(s);
  std::vector<std::vector<uint8_t>> copies;
  for (const uint8_t* p : operands) copies.emplace_back(p, p + s.bytes);
  std::vector<uint8_t> acc = copies[0];
  for (size_t k = 1; k < copies.size(); ++k) ReduceInto(dtype, redop, acc.data(), copies[k].data(), count);
  std::memcpy(s.dst, acc.data(), s.bytes);
}

void Run(const DeviceStep& s, DataType dtype, RedOp redop) {
  const uint64_t count = s.bytes / DataTypeSize(dtype);
  switch (s.kind) {
    case StepKind::kCopy: std::memcpy(s.dst, s.src, s.bytes); break;
    case StepKind::kReduce:
      if (s.more.empty() && !s.from_src) {
        ReduceInto(dtype, redop, s.dst, s.src, count);
      } else {
        RunFold(s, dtype, redop);
      }
      break;
    case StepKind::kDivide: DivideBy(dtype, s.dst, count, s.divisor); break;
    default: FAIL() << "network step in a device plan";
  }
}

}  // namespace

std::vector<std::vector<bool>> HappensBefore(const std::vector<DeviceStep>& steps) {
  const size_t n = steps.size();
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
  for (size_t j = 0; j < n; ++j) {
    std::vector<size_t> direct(steps[j].waits.begin(), steps[j].waits.end());
    for (size_t i = j; i-- > 0;) {
      if (steps[i].device == steps[j].device) {
        direct.push_back(i);
        break;
      }
    }
    for (size_t i : direct) {
      before[j][i] = true;
      for (size_t k = 0; k < n; ++k) {
        if (before[i][k]) before[j][k] = true;
      }
    }
  }
  return before;
}

::testing::AssertionResult StepsOrderedWhereTheyTouch(const std::vector<DeviceStep>& steps) {
  const auto before = HappensBefore(steps);
  for (size_t j = 0; j < steps.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (Touch(steps[i], steps[j]) && !before[j][i]) {
        return ::testing::AssertionFailure() << "step " << j << " (GPU " << steps[j].device
                                             << ") may run before step " << i << " (GPU " << steps[i].device
                                             << "), which touches the same memory";
      }
    }
    for (uint32_t w : steps[j].waits) {
      if (w >= j) return ::testing::AssertionFailure() << "step " << j << " waits for a later step, " << w;
      if (!steps[w].signals) {
        return ::testing::AssertionFailure() << "step " << j << " waits for step " << w << ", which records no event";
      }
      if (steps[w].device == steps[j].device) {
        return ::testing::AssertionFailure() << "step " << j << " waits for step " << w << " of its own GPU's stream";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

void RunLikeGpus(const std::vector<DeviceStep>& steps, DataType dtype, RedOp redop, int order) {
  std::vector<int> devices = DevicesOf(steps);
  std::vector<std::deque<size_t>> queues(devices.size());
  for (size_t j = 0; j < steps.size(); ++j) {
    queues[std::find(devices.begin(), devices.end(), steps[j].device) - devices.begin()].push_back(j);
  }
  std::vector<bool> done(steps.size(), false);
  size_t turn = 0;
  for (size_t left = steps.size(); left > 0; --left) {
    std::vector<size_t> ready;  // indexes into queues
    for (size_t q = 0; q < queues.size(); ++q) {
      if (queues[q].empty()) continue;
      const DeviceStep& s = steps[queues[q].front()];
      if (std::all_of(s.waits.begin(), s.waits.end(), [&](uint32_t w) { return done[w]; })) ready.push_back(q);
    }
    ASSERT_FALSE(ready.empty()) << "the plan deadlocks: every GPU waits for a step that cannot run";
    ++turn;
    const size_t pick = order == 0 ? 0 : order == 1 ? ready.size() - 1 : turn % ready.size();
    const size_t q = ready[pick];
    const size_t j = queues[q].front();
    queues[q].pop_front();
    Run(steps[j], dtype, redop);
    if (::testing::Test::HasFatalFailure()) return;
    done[j] = true;
  }
}

}  // namespace baton::test
