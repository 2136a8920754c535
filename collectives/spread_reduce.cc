#include "collectives/spread_reduce.h"

#include <algorithm>
#include <string>

#include "collectives/schedule_builder.h"
#include "collectives/spread_chunks.h"

namespace baton {

Status BuildSpreadReduce(const OpSignature& sig, const std::vector<int>& ranks, int world, Schedule* out,
                         std::vector<ScratchShare>* shares) {
  *out = Schedule{};
  shares->clear();
  if (sig.collective != Collective::kReduce) {
    return Status::InvalidArgument(std::string("the spread Reduce schedule is for a Reduce, not ") +
                                   CollectiveName(sig.collective));
  }
  if (ranks.empty() || static_cast<int>(ranks.size()) != world) {
    return Status::InvalidArgument("the spread Reduce runs on one node holding every rank (" +
                                   std::to_string(ranks.size()) + " local of " + std::to_string(world) + ")");
  }
  const int root = sig.root;
  if (std::find(ranks.begin(), ranks.end(), root) == ranks.end()) {
    return Status::InvalidArgument("the spread Reduce's root " + std::to_string(root) + " is not one of its " +
                                   std::to_string(ranks.size()) + " ranks");
  }
  const SpreadChunks chunks(sig.count * DataTypeSize(sig.dtype), ranks.size());
  const uint64_t root_chunk = static_cast<uint64_t>(std::find(ranks.begin(), ranks.end(), root) - ranks.begin());
  // The root's chunk first: its GPU's stream then folds it before it takes
  // the copies, which wait for the other GPUs' folds.
  std::vector<uint64_t> order{root_chunk};
  for (uint64_t k = 0; k < ranks.size(); ++k) {
    if (k != root_chunk) order.push_back(k);
  }
  ScheduleBuilder b(out);
  // Chunk k's fold, on local rank k's GPU. Folds of different chunks touch
  // disjoint memory: on GPUs they run at once.
  std::vector<Region> folded(ranks.size());
  for (uint64_t k : order) {
    const auto [off, len] = chunks.span(k);
    if (len == 0) continue;
    const Region result{BufKind::kRecv, root, off, len};
    folded[k] = k == root_chunk ? result : b.Scratch(len);
    if (k != root_chunk) shares->push_back({folded[k].offset, len, ranks[k]});
    b.Copy({BufKind::kSend, root, off, len}, folded[k]);
    for (int r : ranks) {
      if (r != root) b.Reduce({BufKind::kSend, r, off, len}, folded[k]);
    }
    if (sig.redop == RedOp::kAvg) b.Divide(folded[k], static_cast<uint64_t>(world));
  }
  // Then into the root's receive buffer, each after its fold (on GPUs by
  // the plan's events) and after every fold that reads the root's input
  // there: an in-place root's input is its receive buffer.
  for (uint64_t k : order) {
    const auto [off, len] = chunks.span(k);
    b.Copy(folded[k], {BufKind::kRecv, root, off, len});
  }
  b.Finish();
  return Status::Ok();
}

}  // namespace baton
