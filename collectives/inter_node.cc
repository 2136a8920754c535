#include "collectives/inter_node.h"

#include <algorithm>
#include <bit>

#include "collectives/binary_tree.h"

namespace baton {
namespace {

int Mod(int a, int n) { return ((a % n) + n) % n; }

void SendSpans(ScheduleBuilder& b, int peer, const Region& work, const Spans& spans) {
  for (const auto& [off, len] : spans) b.Send(peer, work.Sub(off, len));
}

void RecvSpans(ScheduleBuilder& b, int peer, const Region& work, const Spans& spans, bool reduce) {
  for (const auto& [off, len] : spans) {
    if (reduce) {
      b.RecvReduce(peer, work.Sub(off, len));
    } else {
      b.Recv(peer, work.Sub(off, len));
    }
  }
}

// The spans of the partitions of members [first, first + n), adjacent
// spans merged: one message each. Sender and receiver compute the same
// group, so they cut it into the same messages.
Spans GroupSpans(const Partitions& parts, int first, int n) {
  Spans out;
  for (int j = first; j < first + n; ++j) {
    for (const auto& [off, len] : parts[j]) {
      if (!out.empty() && out.back().first + out.back().second == off) {
        out.back().second += len;
      } else {
        out.push_back({off, len});
      }
    }
  }
  return out;
}

}  // namespace

Partitions EvenChunks(uint64_t count, uint64_t elem_size, int parts) {
  Partitions out(static_cast<size_t>(parts));
  const uint64_t n = static_cast<uint64_t>(parts);
  const uint64_t base = count / n;
  const uint64_t extra = count % n;
  uint64_t start = 0;
  for (uint64_t j = 0; j < n; ++j) {
    const uint64_t len = base + (j < extra ? 1 : 0);
    out[j].push_back({start * elem_size, len * elem_size});
    start += len;
  }
  return out;
}

Partitions RankBlocks(const NodeLayout& layout, uint64_t block_bytes) {
  Partitions out(static_cast<size_t>(layout.num_nodes()));
  for (int n = 0; n < layout.num_nodes(); ++n) {
    for (int r : layout.ranks_of_node[n]) out[n].push_back({static_cast<uint64_t>(r) * block_bytes, block_bytes});
  }
  return out;
}

void RingReduceScatter(ScheduleBuilder& b, int node, int num_nodes, const Region& work, const Partitions& parts,
                       const Region* input) {
  const int next = Mod(node + 1, num_nodes);
  const int prev = Mod(node - 1, num_nodes);
  // Step s: pass on the partial result of partition (node-s-1), fold the
  // incoming partial of partition (node-s-2) into ours. After N-1 steps the
  // partition this node last folded, (node - N) mod N == node, is complete.
  // Each partition is folded at most once here, so with `input` every fold
  // can take its local operand from the input, and only step 0 sends a
  // partition this node has not folded (its own input's).
  for (int s = 0; s < num_nodes - 1; ++s) {
    SendSpans(b, next, input != nullptr && s == 0 ? *input : work, parts[Mod(node - s - 1, num_nodes)]);
    if (input == nullptr) {
      RecvSpans(b, prev, work, parts[Mod(node - s - 2, num_nodes)], /*reduce=*/true);
    } else {
      for (const auto& [off, len] : parts[Mod(node - s - 2, num_nodes)]) {
        b.RecvReduceFrom(prev, input->Sub(off, len), work.Sub(off, len));
      }
    }
    b.EndPhase();
  }
}

void RingAllGather(ScheduleBuilder& b, int node, int num_nodes, const Region& work, const Partitions& parts) {
  const int next = Mod(node + 1, num_nodes);
  const int prev = Mod(node - 1, num_nodes);
  // Step s: forward partition (node-s), which arrived in step s-1 (or is ours at s=0).
  for (int s = 0; s < num_nodes - 1; ++s) {
    SendSpans(b, next, work, parts[Mod(node - s, num_nodes)]);
    RecvSpans(b, prev, work, parts[Mod(node - s - 1, num_nodes)], /*reduce=*/false);
    b.EndPhase();
  }
}

void DirectAllGather(ScheduleBuilder& b, int node, int num_nodes, const Region& work, const Partitions& parts) {
  for (int peer = 0; peer < num_nodes; ++peer) {
    if (peer == node) continue;
    SendSpans(b, peer, work, parts[node]);
    RecvSpans(b, peer, work, parts[peer], /*reduce=*/false);
  }
  b.EndPhase();
}

void HalvingReduceScatter(ScheduleBuilder& b, const std::vector<int>& members, int me, const Region& work,
                          const Partitions& parts, const Region* input) {
  // This node reduces the partitions of the members in [first, first+size):
  // all of them at first, then the half on its side of each split. Groups
  // are aligned blocks of members, so the partner (me ^ half) reduces the
  // other half of the same group.
  int first = 0;
  for (int size = static_cast<int>(members.size()); size > 1; size /= 2) {
    const int half = size / 2;
    const bool upper = me - first >= half;
    const int keep = upper ? first + half : first;
    const int give = upper ? first : first + half;
    const int peer = members[me ^ half];
    const bool from_input = input != nullptr && size == static_cast<int>(members.size());  // the first step
    SendSpans(b, peer, from_input ? *input : work, GroupSpans(parts, give, half));
    for (const auto& [off, len] : GroupSpans(parts, keep, half)) {
      if (from_input) {
        b.RecvReduceFrom(peer, input->Sub(off, len), work.Sub(off, len));
      } else {
        b.RecvReduce(peer, work.Sub(off, len));
      }
    }
    b.EndPhase();
    first = keep;
  }
}

void DoublingAllGather(ScheduleBuilder& b, const std::vector<int>& members, int me, const Region& work,
                       const Partitions& parts) {
  // Before the step of `size`, this node holds the partitions of its
  // aligned group of `size` members; the partner holds the neighbouring one.
  for (int size = 1; size < static_cast<int>(members.size()); size *= 2) {
    const int mine = me & ~(size - 1);
    const int peer = members[me ^ size];
    SendSpans(b, peer, work, GroupSpans(parts, mine, size));
    RecvSpans(b, peer, work, GroupSpans(parts, mine ^ size, size), /*reduce=*/false);
    b.EndPhase();
  }
}

void HalvingDoublingAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work, uint64_t count,
                              uint64_t elem_size, const Region* input) {
  const int pow2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(num_nodes)));
  const int paired = 2 * (num_nodes - pow2);  // nodes [0, paired) pair up as (2i, 2i+1)
  if (node < paired && node % 2 == 0) {
    // Hand the vector to the odd neighbour, which stands in for both.
    b.Send(node + 1, input != nullptr ? *input : work);
    b.EndPhase();
    b.Recv(node + 1, work);
    b.EndPhase();
    return;
  }
  const Region* own = input;
  if (node < paired) {
    if (input != nullptr) {
      b.RecvReduceFrom(node - 1, *input, work);
    } else {
      b.RecvReduce(node - 1, work);
    }
    b.EndPhase();
    own = nullptr;  // work now holds this node's contribution (and its neighbour's)
  }
  std::vector<int> members;
  int me = 0;
  for (int j = 0; j < num_nodes; ++j) {
    if (j < paired && j % 2 == 0) continue;
    if (j == node) me = static_cast<int>(members.size());
    members.push_back(j);
  }
  const Partitions parts = EvenChunks(count, elem_size, pow2);
  HalvingReduceScatter(b, members, me, work, parts, own);
  DoublingAllGather(b, members, me, work, parts);
  if (node < paired) {
    b.Send(node - 1, work);
    b.EndPhase();
  }
}

void DoubleTreeAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work, uint64_t count,
                         uint64_t elem_size, uint64_t chunk_bytes) {
  // Phase numbers are global: in tree t, a node of height h sends chunk c
  // up in phase c + h (its children's partials of c came in earlier, as
  // they have lower heights), and the root's result for chunk c goes down
  // one level per phase from phase c + H (H: the root's height). A send and
  // its receive share a phase number, which keeps every pair's messages in
  // order and makes the schedule deadlock-free. Within a phase the chunk a
  // node sends differs from the ones it receives, so no step reads what a
  // concurrent one writes.
  struct Tree {
    std::vector<TreePosition> shape;
    const TreePosition* me = nullptr;
    int root_height = 0;
    std::vector<Region> chunks;  // this tree's half of work, in chunks
    std::vector<Region> second;  // scratch for the second child's chunks
  };
  const Partitions halves = EvenChunks(count, elem_size, 2);
  const uint64_t largest_half = halves[0].front().second;
  const int num_chunks = static_cast<int>(std::max<uint64_t>(1, (largest_half + chunk_bytes - 1) / chunk_bytes));
  Tree trees[2];
  int phases = 0;
  for (int t = 0; t < 2; ++t) {
    Tree& tree = trees[t];
    tree.shape = BinaryTree(num_nodes, /*mirrored=*/t == 1);
    tree.me = &tree.shape[node];
    int max_depth = 0;
    for (const TreePosition& p : tree.shape) {
      if (p.parent < 0) tree.root_height = p.height;
      max_depth = std::max(max_depth, p.depth);
    }
    const auto [start, bytes] = halves[t].front();
    const Region scratch = tree.me->children.size() > 1 ? b.Scratch(bytes) : Region{};
    for (const Spans& c : EvenChunks(bytes / elem_size, elem_size, num_chunks)) {
      const auto [off, len] = c.front();
      tree.chunks.push_back(work.Sub(start + off, len));
      tree.second.push_back(scratch.Sub(off, len));
    }
    // The last event: the deepest node receives the last chunk from above.
    phases = std::max(phases, num_chunks + tree.root_height + max_depth);
  }
  auto valid = [&](int64_t c) { return c >= 0 && c < num_chunks; };
  for (int64_t p = 0; p < phases; ++p) {
    // Local steps first: the second child's chunk that came in the last
    // phase joins the partial before it goes up.
    for (const Tree& tree : trees) {
      const auto& kids = tree.me->children;
      if (kids.size() < 2) continue;
      const int64_t c = p - 1 - tree.shape[kids[1]].height;
      if (valid(c)) b.Reduce(tree.second[c], tree.chunks[c]);
    }
    for (const Tree& tree : trees) {
      const TreePosition& me = *tree.me;
      // Up: the children's partials in, this node's partial out.
      for (size_t i = 0; i < me.children.size(); ++i) {
        const int kid = me.children[i];
        const int64_t c = p - tree.shape[kid].height;
        if (!valid(c)) continue;
        if (i == 0) {
          b.RecvReduce(kid, tree.chunks[c]);
        } else {
          b.Recv(kid, tree.second[c]);
        }
      }
      if (me.parent >= 0 && valid(p - me.height)) b.Send(me.parent, tree.chunks[p - me.height]);
      // Down: the result in from the parent, out to the children.
      const int64_t down_at = tree.root_height + me.depth;  // phase of chunk 0's send down
      if (me.parent >= 0 && valid(p - down_at + 1)) b.Recv(me.parent, tree.chunks[p - down_at + 1]);
      if (valid(p - down_at)) {
        for (int kid : me.children) b.Send(kid, tree.chunks[p - down_at]);
      }
    }
    b.EndPhase();
  }
}

void RecursiveDoublingAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work) {
  const Region incoming = b.Scratch(work.bytes);
  for (int mask = 1; mask < num_nodes; mask <<= 1) {
    const int partner = node ^ mask;
    b.Send(partner, work);
    b.Recv(partner, incoming);
    b.EndPhase();
    b.Reduce(incoming, work);
  }
  b.EndPhase();
}

void DirectAllReduce(ScheduleBuilder& b, int node, int num_nodes, const Region& work) {
  const Region slots = b.Scratch(work.bytes * static_cast<uint64_t>(num_nodes));
  auto slot = [&](int j) { return slots.Sub(static_cast<uint64_t>(j) * work.bytes, work.bytes); };
  b.Copy(work, slot(node));
  for (int peer = 0; peer < num_nodes; ++peer) {
    if (peer == node) continue;
    b.Send(peer, work);
    b.Recv(peer, slot(peer));
  }
  b.EndPhase();
  b.Copy(slot(0), work);
  for (int j = 1; j < num_nodes; ++j) b.Reduce(slot(j), work);
  b.EndPhase();
}

void BroadcastBetweenNodes(ScheduleBuilder& b, int node, int num_nodes, int root_node, const Region& src,
                           const Region& dst, bool pipelined) {
  const uint64_t bytes = node == root_node ? src.bytes : dst.bytes;
  if (!pipelined) {
    if (node == root_node) {
      for (int peer = 0; peer < num_nodes; ++peer) {
        if (peer != root_node) b.Send(peer, src);
      }
    } else {
      b.Recv(root_node, dst);
    }
    b.EndPhase();
    return;
  }
  // Chain root -> root+1 -> ... in chunks: the node at chain position i
  // receives chunk c in phase c+i-1 and forwards it in phase c+i, so all
  // links carry different chunks at once.
  const int pos = Mod(node - root_node, num_nodes);
  const int prev = Mod(node - 1, num_nodes);
  const int next = Mod(node + 1, num_nodes);
  const Region& mine = node == root_node ? src : dst;
  const uint64_t num_chunks = (bytes + kPipelineChunkBytes - 1) / kPipelineChunkBytes;
  auto chunk = [&](uint64_t c) {
    const uint64_t off = c * kPipelineChunkBytes;
    return mine.Sub(off, std::min(kPipelineChunkBytes, bytes - off));
  };
  const int64_t chunks = static_cast<int64_t>(num_chunks);
  for (int64_t p = 0; p < chunks + num_nodes - 2; ++p) {
    const int64_t in = p - (pos - 1);
    const int64_t out = p - pos;
    if (pos > 0 && in >= 0 && in < chunks) b.Recv(prev, chunk(static_cast<uint64_t>(in)));
    if (pos < num_nodes - 1 && out >= 0 && out < chunks) b.Send(next, chunk(static_cast<uint64_t>(out)));
    b.EndPhase();
  }
}

void NodeBarrier(ScheduleBuilder& b, int node, int num_nodes) {
  for (int peer = 0; peer < num_nodes; ++peer) {
    if (peer == node) continue;
    b.Signal(peer);
    b.AwaitSignal(peer);
  }
  b.EndPhase();
}

}  // namespace baton
