#include "collectives/spread_allreduce.h"

#include <algorithm>
#include <string>
#include <utility>

#include "collectives/schedule_builder.h"
#include "collectives/spread_chunks.h"
#include "collectives/spread_folds.h"

namespace baton {
namespace {

// Copies `from`, the chunk at `offset` of the vector, to every rank's
// receive buffer but `skip`'s.
void CopyChunkToOthers(ScheduleBuilder& b, const Region& from, uint64_t offset, const std::vector<int>& ranks,
                       int skip) {
  for (int r : ranks) {
    if (r != skip) b.Copy(from, {BufKind::kRecv, r, offset, from.bytes});
  }
}

}  // namespace

const char* GpuAllReduceShapeName(GpuAllReduceShape s) {
  switch (s) {
    case GpuAllReduceShape::kGathered: return "gathered";
    case GpuAllReduceShape::kSpread: return "spread";
    default: return "auto";
  }
}

bool ParseGpuAllReduceShape(const std::string& name, GpuAllReduceShape* out) {
  for (GpuAllReduceShape s : {GpuAllReduceShape::kAuto, GpuAllReduceShape::kGathered, GpuAllReduceShape::kSpread}) {
    if (name == GpuAllReduceShapeName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

Status BuildSpreadAllReduce(const OpSignature& sig, const std::vector<int>& ranks, int world, Schedule* out,
                            std::vector<ScratchShare>* shares) {
  *out = Schedule{};
  shares->clear();
  if (sig.collective != Collective::kAllReduce) {
    return Status::InvalidArgument(std::string("the spread schedule is an AllReduce's, not a ") +
                                   CollectiveName(sig.collective) + "'s");
  }
  if (ranks.empty() || static_cast<int>(ranks.size()) != world) {
    return Status::InvalidArgument("the spread AllReduce runs on one node holding every rank (" +
                                   std::to_string(ranks.size()) + " local of " + std::to_string(world) + ")");
  }
  const uint64_t bytes = sig.count * DataTypeSize(sig.dtype);
  ScheduleBuilder b(out);
  // Every chunk's fold, as the host's into rank 0's buffer (spread_folds.h).
  const std::vector<Region> folded = AppendSpreadFolds(
      b, bytes, ranks, ranks.front(), sig.redop == RedOp::kAvg ? static_cast<uint64_t>(world) : 0, shares);
  const SpreadChunks chunks(bytes, ranks.size());
  // Then every rank fetches every chunk (rank 0's own chunk is its own
  // source: no copy). Local steps of one phase run in order, so these
  // follow every fold (on GPUs the plan's events order each copy after its
  // chunk's fold only).
  for (uint64_t k = 0; k < folded.size(); ++k) CopyChunkToOthers(b, folded[k], chunks.span(k).first, ranks, -1);
  b.Finish();
  return Status::Ok();
}

bool SpreadAllReduceEnds(const OpSignature& sig, const std::vector<int>& local, int world, ScheduleSplit* split,
                         std::vector<ScratchShare>* shares) {
  if (sig.collective != Collective::kAllReduce || local.size() < 2) return false;
  const int leader = local.front();
  const uint64_t bytes = sig.count * DataTypeSize(sig.dtype);
  const Region vector{BufKind::kRecv, leader, 0, bytes};
  // The ends as plan.cc builds them, which is all this knows how to spread.
  Schedule gathered_head, gathered_tail;
  {
    ScheduleBuilder b(&gathered_head);
    b.Copy({BufKind::kSend, leader, 0, bytes}, vector);
    for (int r : local) {
      if (r != leader) b.Reduce({BufKind::kSend, r, 0, bytes}, vector);
    }
    b.Finish();
  }
  {
    ScheduleBuilder b(&gathered_tail);
    if (sig.redop == RedOp::kAvg) b.Divide(vector, static_cast<uint64_t>(world));
    for (int r : local) b.Copy(vector, {BufKind::kRecv, r, 0, bytes});
    b.Finish();
  }
  if (!SameSteps(split->head, gathered_head) || !SameSteps(split->tail, gathered_tail)) return false;

  // The head's pieces are its own only where the middle and the tail use
  // no scratch (as a ring's do); else the head stays gathered.
  const bool spread_head = split->middle.scratch_bytes == 0 && !UsesScratch(split->tail);
  const SpreadChunks chunks(bytes, local.size());
  shares->clear();
  if (spread_head) {
    Schedule head;
    ScheduleBuilder b(&head);
    AppendSpreadReduce(b, bytes, local, leader, /*divisor=*/0, shares);
    b.Finish();
    split->head = std::move(head);
  }
  Schedule tail;
  {
    ScheduleBuilder b(&tail);
    if (sig.redop == RedOp::kAvg) b.Divide(vector, static_cast<uint64_t>(world));
    std::vector<Region> at_owner;
    for (uint64_t k = 0; k < local.size(); ++k) {
      const auto [off, len] = chunks.span(k);
      at_owner.push_back({BufKind::kRecv, local[k], off, len});
      b.Copy({BufKind::kRecv, leader, off, len}, at_owner.back());
    }
    // Each after its chunk's copy above (on GPUs, by the plan's events).
    for (const Region& chunk : at_owner) CopyChunkToOthers(b, chunk, chunk.offset, local, leader);
    b.Finish();
  }
  split->tail = std::move(tail);
  return true;
}

}  // namespace baton
