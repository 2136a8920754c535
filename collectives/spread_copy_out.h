// SpreadCopyOut: a node's copy-out of one vector to its ranks, spread over
// their GPUs.
//
// Many collectives end on a node by copying one vector, which one local
// rank holds, to every local rank's receive buffer: the leader's receive
// buffer after an AllReduce or AllGather across nodes (plan.cc), or after a
// Broadcast that arrived from another node; the root's send buffer on a
// Broadcast's root node, and within one node. Run on GPUs as written,
// every byte leaves through the holder's GPU links: n-1 vectors out, while
// the other GPUs' links idle.
//
// Spread, the vector is cut into one chunk for each of the m = n-1 other
// ranks (spread_chunks.h): chunk k goes from the holder to the k-th other
// rank, and from there to the rest of them. The holder's links then carry
// one vector out instead of m, the least that leaves it with every byte
// sent once; each other GPU takes in one vector (each chunk once) and sends
// (m-1)/m of one, all at the same time. A holder whose vector is its send
// buffer (the Broadcast root) also copies it into its own receive buffer,
// as the unspread copy-out does: a copy within its GPU. Pure copies: every
// buffer ends with the same bytes as before. The division of an average
// that may open the copy-out stays first.
//
// The cost is launches: m*m copies against m. Worth it where links, not
// launches, bound the copy-out (several GPUs, large vectors), which is why
// batond spreads only over several GPUs unless told (--gpu-allreduce). On
// two ranks (m = 1) there is nothing to spread.
#pragma once

#include <vector>

#include "collectives/schedule.h"

namespace baton {

// Rewrites `part` (local steps only: a split's tail, or one node's whole
// schedule) when it is exactly such a copy-out over `local` (the node's
// ranks in rank order): one phase of an optional division of the vector
// then a copy of the whole vector to each local rank's receive buffer (the
// holder's own left out when it holds the vector there). False, leaving
// `part` as it was, for anything else or fewer than three local ranks.
bool SpreadCopyOut(const std::vector<int>& local, Schedule* part);

}  // namespace baton
