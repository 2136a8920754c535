#include "collectives/spread_reduce.h"

#include <algorithm>
#include <string>

#include "collectives/schedule_builder.h"
#include "collectives/spread_chunks.h"

namespace baton {
namespace {

// The spread folds of `bytes` over `ranks` into `root`'s receive buffer,
// appended to `b` (whose next scratch goes to the pieces), their pieces
// appended to `shares`; with a `divisor`, each chunk divided by it.
void AppendSpreadFolds(ScheduleBuilder& b, uint64_t bytes, const std::vector<int>& ranks, int root,
                       uint64_t divisor, std::vector<ScratchShare>* shares) {
  const SpreadChunks chunks(bytes, ranks.size());
  const uint64_t root_chunk = static_cast<uint64_t>(std::find(ranks.begin(), ranks.end(), root) - ranks.begin());
  // The root's chunk first: its GPU's stream then folds it before it takes
  // the copies, which wait for the other GPUs' folds.
  std::vector<uint64_t> order{root_chunk};
  for (uint64_t k = 0; k < ranks.size(); ++k) {
    if (k != root_chunk) order.push_back(k);
  }
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
    if (divisor > 0) b.Divide(folded[k], divisor);
  }
  // Then into the root's receive buffer, each after its fold (on GPUs by
  // the plan's events) and after every fold that reads the root's input
  // there: an in-place root's input is its receive buffer.
  for (uint64_t k : order) {
    const auto [off, len] = chunks.span(k);
    b.Copy(folded[k], {BufKind::kRecv, root, off, len});
  }
}

}  // namespace

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
  if (std::find(ranks.begin(), ranks.end(), sig.root) == ranks.end()) {
    return Status::InvalidArgument("the spread Reduce's root " + std::to_string(sig.root) + " is not one of its " +
                                   std::to_string(ranks.size()) + " ranks");
  }
  ScheduleBuilder b(out);
  AppendSpreadFolds(b, sig.count * DataTypeSize(sig.dtype), ranks, sig.root,
                    sig.redop == RedOp::kAvg ? static_cast<uint64_t>(world) : 0, shares);
  b.Finish();
  return Status::Ok();
}

bool SpreadReduceHead(const OpSignature& sig, const std::vector<int>& local, ScheduleSplit* split,
                      std::vector<ScratchShare>* shares) {
  const int root = sig.root;
  if (sig.collective != Collective::kReduce || local.size() < 2 ||
      std::find(local.begin(), local.end(), root) == local.end()) {
    return false;
  }
  const uint64_t bytes = sig.count * DataTypeSize(sig.dtype);
  // The head as plan.cc builds it on the root's node, which is all this
  // knows how to spread.
  Schedule gathered;
  {
    ScheduleBuilder b(&gathered);
    const Region work{BufKind::kRecv, root, 0, bytes};
    b.Copy({BufKind::kSend, root, 0, bytes}, work);
    for (int r : local) {
      if (r != root) b.Reduce({BufKind::kSend, r, 0, bytes}, work);
    }
    b.Finish();
  }
  // With no scratch in the middle (as plan.cc's root node has, whenever it
  // splits) the head's scratch is its own: never staged.
  if (!SameSteps(split->head, gathered) || UsesScratch(split->tail) || split->middle.scratch_bytes > 0) return false;
  Schedule head;
  std::vector<ScratchShare> spread_shares;
  {
    ScheduleBuilder b(&head);
    AppendSpreadFolds(b, bytes, local, root, /*divisor=*/0, &spread_shares);  // an average divides at the end
    b.Finish();
  }
  split->head = std::move(head);
  *shares = std::move(spread_shares);
  return true;
}

}  // namespace baton
