#include "collectives/spread_copy_out.h"

#include <algorithm>
#include <utility>

#include "collectives/schedule_builder.h"
#include "collectives/spread_chunks.h"

namespace baton {

bool SpreadCopyOut(const std::vector<int>& local, Schedule* part) {
  if (local.size() < 3 || part->phases.size() != 1) return false;
  const std::vector<Step>& steps = part->phases[0].steps;
  size_t first_copy = 0;
  const Step* divide = nullptr;
  if (!steps.empty() && steps[0].kind == StepKind::kDivide) {
    divide = &steps[0];
    first_copy = 1;
  }
  if (first_copy >= steps.size()) return false;
  // The vector every copy reads, and who holds it.
  const Region vector = steps[first_copy].src;
  const int holder = vector.rank;
  if (vector.buf == BufKind::kScratch || vector.bytes == 0 ||
      std::find(local.begin(), local.end(), holder) == local.end()) {
    return false;
  }
  if (divide != nullptr && divide->dst != vector) return false;
  const uint64_t at = steps[first_copy].dst.offset;  // where the vector lands in each receive buffer
  const Region held{BufKind::kRecv, holder, at, vector.bytes};
  // Every local rank's receive buffer, once each, in rank order; the
  // holder's only when the vector is not there already.
  std::vector<int> expected;
  for (int r : local) {
    if (!(r == holder && vector == held)) expected.push_back(r);
  }
  if (steps.size() - first_copy != expected.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Step& s = steps[first_copy + i];
    if (s.kind != StepKind::kCopy || s.src != vector || s.dst != Region{BufKind::kRecv, expected[i], at, vector.bytes}) {
      return false;
    }
  }

  std::vector<int> others;  // who fetch a chunk from the holder
  for (int r : local) {
    if (r != holder) others.push_back(r);
  }
  if (others.size() < 2) return false;  // one other rank: the copy-out is one copy already
  const SpreadChunks chunks(vector.bytes, others.size());
  Schedule spread;
  spread.scratch_bytes = part->scratch_bytes;
  ScheduleBuilder b(&spread);
  if (divide != nullptr) b.Divide(vector, divide->divisor);
  b.Copy(vector, held);  // the Broadcast root's send buffer into its receive buffer; dropped when the same
  for (uint64_t k = 0; k < others.size(); ++k) {
    const auto [off, len] = chunks.span(k);
    b.Copy(vector.Sub(off, len), {BufKind::kRecv, others[k], at + off, len});
  }
  // Each after its chunk's copy above (on GPUs, by the plan's events).
  for (uint64_t k = 0; k < others.size(); ++k) {
    const auto [off, len] = chunks.span(k);
    for (int r : others) {
      if (r != others[k]) b.Copy({BufKind::kRecv, others[k], at + off, len}, {BufKind::kRecv, r, at + off, len});
    }
  }
  b.Finish();
  *part = std::move(spread);
  return true;
}

}  // namespace baton
