// SpreadFolds: a node's fold of its ranks' inputs into one rank's receive
// buffer, cut over their GPUs, in the host's order: what the spread Reduce
// and the spread AllReduce (spread_reduce.h, spread_allreduce.h) share.
//
// The host folds into the target's receive buffer: the target's own input
// first, then the others in rank order. Cut into one chunk per local rank
// (spread_chunks.h), chunk k is folded on local rank k's GPU, in that same
// order, so the bits are the host's. The target's own chunk is folded in
// place, in its receive buffer. Every other chunk is folded into a scratch
// piece on its owner's GPU rather than into the owner's receive buffer: an
// in-place owner's buffer is its input, and the host's order copies the
// target's input there before the owner's input has been read.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/schedule.h"
#include "collectives/schedule_builder.h"
#include "collectives/spread_scratch_fold.h"

namespace baton {

// Appends to `b` those folds of `bytes` of every input of `ranks` (a
// node's ranks in rank order, `target` one of them), the target's chunk
// first (its GPU's stream then folds it before anything that waits for the
// other GPUs). The scratch pieces are `b`'s next scratch, in offset order,
// appended to `shares`. With a nonzero `divisor`, each chunk is divided by
// it after its fold (an average's division is per element). Returns chunk
// k's folded region at index k; an empty chunk's has zero bytes.
std::vector<Region> AppendSpreadFolds(ScheduleBuilder& b, uint64_t bytes, const std::vector<int>& ranks, int target,
                                      uint64_t divisor, std::vector<ScratchShare>* shares);

// The same folds into `target`'s receive buffer, each chunk then copied
// there (after its fold, and after every fold that reads the target's
// input there: an in-place target's input is its receive buffer): the
// host's fold into `target` whole, spread.
void AppendSpreadReduce(ScheduleBuilder& b, uint64_t bytes, const std::vector<int>& ranks, int target,
                        uint64_t divisor, std::vector<ScratchShare>* shares);

}  // namespace baton
