// Inter-node building blocks: the exchange between daemons, one stream per
// node, on a node's "work" region. Each function appends this node's part of
// the algorithm; every node calls it with the same arguments, except `node`
// and `work`, which name this node's own memory.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "collectives/schedule_builder.h"

namespace baton {

// Byte spans (offset, bytes) of the work region; Partitions[j] is the part
// that node j owns at the end of a reduce-scatter / starts with in an all-gather.
using Spans = std::vector<std::pair<uint64_t, uint64_t>>;
using Partitions = std::vector<Spans>;

// `parts` near-equal chunks of `count` elements (sizes differ by at most one element).
Partitions EvenChunks(uint64_t count, uint64_t elem_size, int parts);
// Node j owns the blocks of its ranks: block r is [r*block_bytes, (r+1)*block_bytes).
Partitions RankBlocks(const NodeLayout& layout, uint64_t block_bytes);

// Ring reduce-scatter (N-1 steps): afterwards node j's partition holds the
// reduction over all nodes. Each element is reduced in exactly one place,
// so every node later sees identical bits.
// With `input`, the rank's input is read where it lies: the first send comes
// from it, and every fold is input (op) incoming into work, so work needs
// no copy of the input beforehand (one rank on the node: no local reduce).
void RingReduceScatter(ScheduleBuilder& b, int node, int num_nodes, const Region& work, const Partitions& parts,
                       const Region* input = nullptr);
// Ring all-gather (N-1 steps): node j's partition is copied to every node.
void RingAllGather(ScheduleBuilder& b, int node, int num_nodes, const Region& work, const Partitions& parts);
// Every node sends its partition to every other node in one phase.
void DirectAllGather(ScheduleBuilder& b, int node, int num_nodes, const Region& work, const Partitions& parts);

// Recursive halving and doubling (Rabenseifner), among `members` (node
// indices; a power-of-two count), `me` being this node's position in it.
// HalvingReduceScatter: log2 M steps; at each, this node and its partner
// split the partitions they still reduce, send the half the partner keeps
// and fold in the half they keep. Afterwards member j's partitions[j] holds
// the reduction over all members, reduced in exactly one place (so every
// node later sees identical bits). `input` as for RingReduceScatter.
// DoublingAllGather: the reverse, log2 M steps, each doubling the
// partitions a node holds, until every member has all of them.
// Same bytes as the ring (2(M-1)/M of the vector), in 2 log2 M phases
// instead of 2(M-1).
void HalvingReduceScatter(ScheduleBuilder& b, const std::vector<int>& members, int me, const Region& work,
                          const Partitions& parts, const Region* input = nullptr);
void DoublingAllGather(ScheduleBuilder& b, const std::vector<int>& members, int me, const Region& work,
                       const Partitions& parts);
// AllReduce by halving and doubling over any node count: with N not a
// power of two, the first 2r nodes (r = N - 2^floor(log2 N)) pair up, the
// even one of each pair hands its vector to the odd one before and gets
// the result back after (two more phases for those pairs).
void HalvingDoublingAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work, uint64_t count,
                              uint64_t elem_size, const Region* input = nullptr);

// Double-binary-tree AllReduce (binary_tree.h): half t of the vector goes
// up tree t in chunks of about `chunk_bytes`, every node folding its
// children's partials into its own before passing a chunk to its parent,
// then back down from the root. A chunk moves one level per phase and the
// next chunk follows one phase behind, so all levels work at once: K chunks
// take K + height + depth phases. Each element is reduced along one tree,
// in an order the schedule fixes, and the root's result is what everyone
// gets: identical bits on every node, the same from run to run.
// `work` holds this node's contribution on entry and the result on return.
void DoubleTreeAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work, uint64_t count,
                         uint64_t elem_size, uint64_t chunk_bytes);

// Recursive doubling: log2(N) exchanges of the whole vector; N must be a power of two.
// Both partners combine the same two partial results, so results are identical.
void RecursiveDoublingAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work);
// Every node sends its vector to every other node; each reduces all N vectors
// in node order, so all results are bit-identical.
void DirectAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work);

// Broadcast `bytes` from `root_node`: on the root, `src` is read; elsewhere
// `dst` is written. Direct for small messages, a pipelined chain otherwise.
void BroadcastBetweenNodes(ScheduleBuilder& b, int node, int num_nodes, int root_node, const Region& src,
                           const Region& dst, bool pipelined);

// Every node learns that every other node reached this point.
void NodeBarrier(ScheduleBuilder& b, int node, int num_nodes);

}  // namespace baton
