#include "collectives/spread_allreduce.h"

#include <algorithm>
#include <string>

#include "collectives/schedule_builder.h"

namespace baton {

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
  const uint64_t bytes = sig.count * DataTypeSize(sig.dtype);
  const uint64_t n = ranks.size();
  uint64_t chunk = (bytes + n - 1) / n;
  chunk = (chunk + kSpreadChunkAlignBytes - 1) / kSpreadChunkAlignBytes * kSpreadChunkAlignBytes;
  auto span = [&](uint64_t k) {
    const uint64_t off = std::min(bytes, k * chunk);
    return std::pair{off, std::min(chunk, bytes - off)};
  };
  ScheduleBuilder b(out);
  // Every chunk's fold, each in its owner's receive buffer. The builder drops
  // the empty chunks at the end of a short vector.
  for (uint64_t k = 0; k < n; ++k) {
    const auto [off, len] = span(k);
    const int owner = ranks[k];
    const Region work{BufKind::kRecv, owner, off, len};
    b.Copy({BufKind::kSend, owner, off, len}, work);
    for (int r : ranks) {
      if (r != owner) b.Reduce({BufKind::kSend, r, off, len}, work);
    }
    if (sig.redop == RedOp::kAvg) b.Divide(work, static_cast<uint64_t>(world));
  }
  // Then every rank fetches the chunks it does not own. Local steps of one
  // phase run in order, so these follow every fold (on GPUs the plan's
  // events order each copy after its chunk's fold only).
  for (uint64_t k = 0; k < n; ++k) {
    const auto [off, len] = span(k);
    for (int r : ranks) {
      if (r != ranks[k]) b.Copy({BufKind::kRecv, ranks[k], off, len}, {BufKind::kRecv, r, off, len});
    }
  }
  b.Finish();
  return Status::Ok();
}

}  // namespace baton
