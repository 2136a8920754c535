// SpreadReduce: the Reduce of one node whose ranks sit on several GPUs.
//
// The host's single-node Reduce (plan.cc) folds every rank's input into the
// root's receive buffer: the root's own input first, then the others in
// rank order. Run on GPUs as written, every fold runs on the root's GPU and
// n-1 whole vectors come in through its links, while the other GPUs wait.
//
// Spread, the vector is cut into one chunk per local rank (spread_chunks.h)
// and local rank k's GPU folds chunk k: into a scratch piece on its own GPU
// (ScratchShare), in the host's order (the root's chunk first, then the
// others' in rank order), then copied into the root's receive buffer. The
// root folds its own chunk in place, as before. The result is the host
// path's bit for bit (the same folds in the same order, and an average's
// division is per element, here done by each chunk's owner). Each GPU folds
// 1/n of the vector and takes (n-1)/n of one in; the root's links carry
// (n-1)/n of a vector in from the copies, plus the reads of its own
// chunk's fold, instead of n-1 vectors, all at once with the others'.
//
// The cost is launches (a copy per chunk more) and (n-1)/n of a vector of
// scratch spread over the GPUs; batond spreads only over several GPUs unless
// told (--gpu-allreduce).
//
// Within one node the whole Reduce is that; across nodes, the root node's
// head (SpreadReduceHead). A non-root node folds into scratch, which
// SpreadScratchFold spreads.
#pragma once

#include <vector>

#include "collectives/schedule.h"
#include "collectives/spread_scratch_fold.h"
#include "common/status.h"
#include "common/types.h"

namespace baton {

// The schedule above for `sig` (a Reduce) over `ranks`, the node's ranks in
// rank order, of a communicator of `world` ranks on that one node, with
// `shares` set to its scratch pieces (which local rank's GPU holds which
// scratch offsets), in offset order. kInvalidArgument for another
// collective, a root that is not one of `ranks`, or ranks on several nodes.
Status BuildSpreadReduce(const OpSignature& sig, const std::vector<int>& ranks, int world, Schedule* out,
                         std::vector<ScratchShare>* shares);

// Across nodes, with a node's local ends on its GPUs (daemon/device_ends.h),
// the root's node begins the same way: its head folds the node's ranks into
// the root's receive buffer, where the network part then reduces the other
// nodes' vectors in. This rewrites that head (of `split`, one node's split
// over `local`, its ranks in rank order) as above: chunk k folded on local
// rank k's GPU, in the host's order, then copied into the root's buffer
// (an average's division stays at the end of the schedule). The scratch
// pieces are the head's own (the middle and the tail use none): never
// staged. `shares` is set to them, in offset order. False, leaving both as
// they were, unless `sig` is a Reduce whose root is one of `local` (two or
// more), the head exactly that fold, and the middle and the tail free of
// scratch.
bool SpreadReduceHead(const OpSignature& sig, const std::vector<int>& local, ScheduleSplit* split,
                      std::vector<ScratchShare>* shares);

}  // namespace baton
