#include "collectives/spread_scratch_fold.h"

#include <algorithm>
#include <utility>

#include "collectives/schedule_builder.h"
#include "collectives/spread_chunks.h"

namespace baton {
namespace {

// Whether the head is the fold described in the header; sets `work`.
bool IsFoldIntoScratch(const std::vector<int>& local, const Schedule& head, Region* work) {
  if (local.size() < 2 || head.phases.size() != 1) return false;
  const std::vector<Step>& steps = head.phases[0].steps;
  if (steps.size() != local.size()) return false;
  *work = steps[0].dst;
  if (work->buf != BufKind::kScratch || work->offset != 0 || work->bytes == 0) return false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepKind kind = i == 0 ? StepKind::kCopy : StepKind::kReduce;
    if (steps[i].kind != kind || steps[i].src != Region{BufKind::kSend, local[i], 0, work->bytes} ||
        steps[i].dst != *work) {
      return false;
    }
  }
  return true;
}

// Where the pieces meet: n+1 offsets from 0 to `bytes`, the even cut of
// SpreadChunks moved past any of `whole` (regions a piece must hold whole)
// it would fall inside.
std::vector<uint64_t> Cuts(uint64_t bytes, size_t n, const std::vector<Region>& whole) {
  const SpreadChunks chunks(bytes, n);
  std::vector<uint64_t> cuts = {0};
  for (size_t k = 1; k < n; ++k) {
    uint64_t cut = chunks.span(k).first;
    for (bool moved = true; moved;) {
      moved = false;
      for (const Region& r : whole) {
        if (r.offset < cut && cut < r.offset + r.bytes) {
          cut = r.offset + r.bytes;
          moved = true;
        }
      }
    }
    cuts.push_back(std::clamp(cut, cuts.back(), bytes));
  }
  cuts.push_back(bytes);
  return cuts;
}

}  // namespace

bool SpreadScratchFold(const std::vector<int>& local, ScheduleSplit* split, std::vector<ScratchShare>* shares) {
  Region work;
  if (!IsFoldIntoScratch(local, split->head, &work)) return false;
  if (ScratchExtent(split->head) > work.bytes || ScratchExtent(split->tail) > work.bytes) return false;
  std::vector<Region> whole;  // what the tail reads or writes in scratch
  for (const Phase& p : split->tail.phases) {
    for (const Step& s : p.steps) {
      for (const Region& r : {s.src, s.dst}) {
        if (r.buf == BufKind::kScratch && r.bytes > 0) whole.push_back(r);
      }
    }
  }
  const std::vector<uint64_t> cuts = Cuts(work.bytes, local.size(), whole);

  Schedule head;
  head.scratch_bytes = split->head.scratch_bytes;
  ScheduleBuilder b(&head);
  std::vector<ScratchShare> pieces;
  for (size_t k = 0; k < local.size(); ++k) {
    const uint64_t off = cuts[k], len = cuts[k + 1] - cuts[k];
    if (len == 0) continue;
    pieces.push_back({off, len, local[k]});
    const Region piece = work.Sub(off, len);
    b.Copy({BufKind::kSend, local.front(), off, len}, piece);
    for (size_t i = 1; i < local.size(); ++i) b.Reduce({BufKind::kSend, local[i], off, len}, piece);
  }
  b.Finish();
  split->head = std::move(head);
  *shares = std::move(pieces);
  return true;
}

}  // namespace baton
