#include "collectives/inter_node.h"

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
