// SpreadAllReduce: the AllReduce of one node whose ranks sit on several GPUs.
//
// The host's single-node AllReduce (plan.cc) gathers the reduction in one
// place: rank 0's buffer receives every other rank's vector, then every
// rank copies the result out of it. In one shared memory that is the
// cheapest shape (a block stays in cache through all the steps). Run on
// GPUs it puts every reduction on rank 0's GPU and every byte through that
// GPU's links: (n-1) vectors in, then (n-1) out, while the other GPUs wait.
//
// This shape spreads it, as a ReduceScatter followed by an AllGather does:
// the vector is cut into one chunk per local rank, and local rank k's GPU
// folds chunk k (reading the other ranks' chunk k through peer access),
// then every rank copies every chunk from where it was folded. Each GPU
// then reduces 1/n of the vector and its links carry (n-1)/n of a vector
// each way, at the same time as every other GPU's.
//
// Each chunk is folded as the host folds it (spread_folds.h): rank 0's
// input first, then the others in rank order; rank 0's chunk in its own
// receive buffer, every other chunk in a scratch piece on its owner's GPU.
// So every rank gets the host path's bits (an average's division is per
// element, here per chunk). The price of those bits is (n-1)/n of a
// vector of scratch, spread over the GPUs, and one more copy per chunk
// (to its owner, within the owner's GPU).
#pragma once

#include <string>
#include <vector>

#include "collectives/network_split.h"
#include "collectives/schedule.h"
#include "collectives/spread_scratch_fold.h"
#include "common/status.h"
#include "common/types.h"

namespace baton {

// Which single-node AllReduce the GPUs run (batond --gpu-allreduce):
// kAuto spreads it when the ranks are on more than one GPU and keeps the
// gathered (host) shape on one GPU, where spreading buys nothing and costs
// n-1 more launches per rank; the others force one shape (to compare them,
// or to exercise the spread one on a single GPU).
enum class GpuAllReduceShape { kAuto, kGathered, kSpread };
const char* GpuAllReduceShapeName(GpuAllReduceShape s);
bool ParseGpuAllReduceShape(const std::string& name, GpuAllReduceShape* out);

// The schedule above for `sig` (an AllReduce) over `ranks`, the node's local
// ranks in rank order, of a communicator of `world` ranks on that one node.
// `shares` is set to its scratch pieces (which local rank's GPU holds which
// scratch offsets), in offset order.
Status BuildSpreadAllReduce(const OpSignature& sig, const std::vector<int>& ranks, int world, Schedule* out,
                            std::vector<ScratchShare>* shares);

// Across nodes, with a node's local ends on its GPUs (daemon/device_ends.h),
// the hierarchical AllReduce's head gathers the node's reduction into the
// leader's receive buffer (the lowest local rank's, where the network part
// expects the node's vector) and its tail copies the result from there to
// every local rank: on several GPUs, every fold on the leader's GPU and
// n-1 vectors through its links each way, as above. This rewrites the ends
// of `split` (SplitForDeviceEnds of one node's AllReduce; `local` the
// node's ranks in rank order):
//   head: the spread folds above, in the host's order, into the leader's
//         receive buffer: chunk k folded on local rank k's GPU, in a
//         scratch piece there (the leader's own chunk in place), then
//         copied into the leader's buffer. The pieces are the head's own,
//         never staged, so the head is spread only where the middle and
//         the tail use no scratch (a ring's do not); else it stays
//         gathered. `shares` is set to the pieces (empty when gathered);
//   tail: the division of an average on the leader's vector as before, then
//         chunk k copied from the leader to local rank k, and from there to
//         the other local ranks.
// The leader's links then carry 2(n-1)/n of a vector each way instead of
// n-1 vectors, and each GPU folds 1/n of it. The bits are the host path's.
// False, leaving `split` as it was, when its ends are not exactly the
// hierarchical AllReduce's over `local` (another collective, one local rank).
bool SpreadAllReduceEnds(const OpSignature& sig, const std::vector<int>& local, int world, ScheduleSplit* split,
                         std::vector<ScratchShare>* shares);

}  // namespace baton
