// SpreadScratchFold: a node's fold of its ranks' inputs into a work vector
// in scratch, spread over their GPUs.
//
// Across nodes, a ReduceScatter's head (plan.cc) folds every local rank's
// whole input into one work vector in the scratch space (every rank's
// block), which the network part then reduce-scatters between the nodes; a
// non-root node's Reduce does the same with its one vector. With the ends
// on the GPUs (daemon/device_ends.h) that scratch is one GPU's: every fold
// runs there, reading n-1 whole inputs through its links, while the other
// GPUs wait.
//
// Spread, the work vector is cut into one piece per local rank, and piece k
// lies in local rank k's GPU (ScratchPiece, collectives/device_steps.h), so
// the fold of piece k runs there and reads only that piece of the others'
// inputs. Each GPU folds 1/n of the vector and takes (n-1)/n of one in,
// all at once, instead of one GPU taking n-1 vectors. Each piece is folded
// in the host's order (the first rank's input, then the others in rank
// order), so the result is the host path's, bit for bit. The staging plan
// copies each piece from and to its own GPU (AppendScratchSpans).
//
// A step runs on one GPU's memory, so a piece must hold whole every
// scratch region the tail reads (a ReduceScatter's block of this node's
// rank): a cut that would fall inside one moves to its end.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/network_split.h"

namespace baton {

// Which local rank's GPU holds scratch offsets [offset, offset + bytes).
struct ScratchShare {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int rank = -1;
};

// Rewrites split->head (of a split of one node's schedule over `local`, its
// ranks in rank order) as above, and sets `shares` to the pieces, in
// offset order, covering the scratch space the ends touch from offset 0
// (empty pieces left out). False, leaving both as they were, unless the
// head is exactly one fold of every rank in `local` (two or more) into one
// scratch vector at offset 0, starting from the first rank's whole input,
// and that vector is all the scratch the ends touch.
bool SpreadScratchFold(const std::vector<int>& local, ScheduleSplit* split, std::vector<ScratchShare>* shares);

}  // namespace baton
