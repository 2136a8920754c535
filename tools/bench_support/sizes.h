// How a benchmark row states a collective's size and bus bandwidth, as
// nccl-tests does, so that Baton's numbers read like NCCL's:
//   - size is the larger of a rank's two buffers: for AllGather, Gather
//     (receive) and ReduceScatter, Scatter, AllToAll (send) that is every
//     rank's block, world * count elements; for the others count elements;
//   - busbw = algbw (size / time) * a factor that makes it comparable to a
//     link's speed whatever the rank count: 2(n-1)/n for AllReduce, (n-1)/n
//     for the collectives whose size spans every rank's block, 1 for
//     Broadcast, Reduce and point-to-point.
#pragma once

#include <cstdint>

#include "common/types.h"

namespace baton::bench {

// True when the size counts every rank's block (AllGather and the like).
bool SizeSpansEveryRank(Collective c);

// The per-rank `count` (in elements, as the API takes it) of a row of
// `size_bytes`, rounded down; 0 when the size holds less than one element
// per rank.
uint64_t CountForSize(Collective c, uint64_t size_bytes, uint64_t element_bytes, int world);

// The row's size in bytes for a call of `count` elements.
uint64_t SizeOfCount(Collective c, uint64_t count, uint64_t element_bytes, int world);

double BusBandwidthFactor(Collective c, int world);

}  // namespace baton::bench
