#include "collectives/spread_reduce.h"

#include <algorithm>
#include <string>

#include "collectives/schedule_builder.h"
#include "collectives/spread_folds.h"

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
  if (std::find(ranks.begin(), ranks.end(), sig.root) == ranks.end()) {
    return Status::InvalidArgument("the spread Reduce's root " + std::to_string(sig.root) + " is not one of its " +
                                   std::to_string(ranks.size()) + " ranks");
  }
  ScheduleBuilder b(out);
  AppendSpreadReduce(b, sig.count * DataTypeSize(sig.dtype), ranks, sig.root,
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
    AppendSpreadReduce(b, bytes, local, root, /*divisor=*/0, &spread_shares);  // an average divides at the end
    b.Finish();
  }
  split->head = std::move(head);
  *shares = std::move(spread_shares);
  return true;
}

}  // namespace baton
