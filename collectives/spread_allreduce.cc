#include "collectives/spread_allreduce.h"

#include <algorithm>
#include <string>
#include <utility>

#include "collectives/schedule_builder.h"
#include "collectives/spread_chunks.h"

namespace baton {
namespace {

// Folds chunk k of every rank's input into its owner's (ranks[k]) receive
// buffer, starting from the owner's own input; returns that region.
Region FoldChunk(ScheduleBuilder& b, const SpreadChunks& chunks, const std::vector<int>& ranks, uint64_t k) {
  const auto [off, len] = chunks.span(k);
  const int owner = ranks[k];
  const Region work{BufKind::kRecv, owner, off, len};
  b.Copy({BufKind::kSend, owner, off, len}, work);
  for (int r : ranks) {
    if (r != owner) b.Reduce({BufKind::kSend, r, off, len}, work);
  }
  return work;
}

// Copies chunk k from its owner's receive buffer to every rank's but the
// owner's and `skip`'s.
void CopyChunkToOthers(ScheduleBuilder& b, const SpreadChunks& chunks, const std::vector<int>& ranks, uint64_t k,
                       int skip) {
  const auto [off, len] = chunks.span(k);
  for (int r : ranks) {
    if (r != ranks[k] && r != skip) b.Copy({BufKind::kRecv, ranks[k], off, len}, {BufKind::kRecv, r, off, len});
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

Status BuildSpreadAllReduce(const OpSignature& sig, const std::vector<int>& ranks, int world, Schedule* out) {
  *out = Schedule{};
  if (sig.collective != Collective::kAllReduce) {
    return Status::InvalidArgument(std::string("the spread schedule is an AllReduce's, not a ") +
                                   CollectiveName(sig.collective) + "'s");
  }
  if (ranks.empty() || static_cast<int>(ranks.size()) != world) {
    return Status::InvalidArgument("the spread AllReduce runs on one node holding every rank (" +
                                   std::to_string(ranks.size()) + " local of " + std::to_string(world) + ")");
  }
  const SpreadChunks chunks(sig.count * DataTypeSize(sig.dtype), ranks.size());
  ScheduleBuilder b(out);
  // Every chunk's fold, each in its owner's receive buffer.
  for (uint64_t k = 0; k < ranks.size(); ++k) {
    const Region work = FoldChunk(b, chunks, ranks, k);
    if (sig.redop == RedOp::kAvg) b.Divide(work, static_cast<uint64_t>(world));
  }
  // Then every rank fetches the chunks it does not own. Local steps of one
  // phase run in order, so these follow every fold (on GPUs the plan's
  // events order each copy after its chunk's fold only).
  for (uint64_t k = 0; k < ranks.size(); ++k) CopyChunkToOthers(b, chunks, ranks, k, ranks[k]);
  b.Finish();
  return Status::Ok();
}

bool SpreadAllReduceEnds(const OpSignature& sig, const std::vector<int>& local, int world, ScheduleSplit* split) {
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

  const SpreadChunks chunks(bytes, local.size());
  Schedule head, tail;
  {
    ScheduleBuilder b(&head);
    for (uint64_t k = 0; k < local.size(); ++k) {
      const Region work = FoldChunk(b, chunks, local, k);
      b.Copy(work, {BufKind::kRecv, leader, work.offset, work.bytes});
    }
    b.Finish();
  }
  {
    ScheduleBuilder b(&tail);
    if (sig.redop == RedOp::kAvg) b.Divide(vector, static_cast<uint64_t>(world));
    for (uint64_t k = 0; k < local.size(); ++k) {
      const auto [off, len] = chunks.span(k);
      b.Copy({BufKind::kRecv, leader, off, len}, {BufKind::kRecv, local[k], off, len});
    }
    // Each after its chunk's copy above (on GPUs, by the plan's events).
    for (uint64_t k = 0; k < local.size(); ++k) CopyChunkToOthers(b, chunks, local, k, leader);
    b.Finish();
  }
  split->head = std::move(head);
  split->tail = std::move(tail);
  return true;
}

}  // namespace baton
