// BuildSchedule: the hierarchical composition of every collective.
//
// Shape of each plan on node n (ranks R, leader l = lowest rank of R):
//   1. intra-node: local ranks' inputs are reduced/copied into one "work"
//      region inside the daemon (a local rank's buffer or scratch);
//   2. inter-node: the daemons exchange the work regions, one stream per node;
//   3. intra-node: results are copied out to every local rank.
// Reductions always start from the work owner's own input and then fold the
// other local ranks in rank order, so in-place calls never read a clobbered
// buffer and every node folds in the same order.
#include <algorithm>
#include <bit>

#include "collectives/inter_node.h"
#include "collectives/schedule.h"

namespace baton {
namespace {

struct Ctx {
  const PlanInput& in;
  const NodeLayout& layout;
  ScheduleBuilder& b;
  int node;
  int num_nodes;
  uint64_t esize;
  uint64_t bytes;  // one rank's vector: count * esize
  const std::vector<int>& local;
  Algorithm algo;
};

bool PowerOfTwo(int n) { return std::has_single_bit(static_cast<unsigned>(n)); }

// Nodes 0..n-1, as the members of halving and doubling.
std::vector<int> AllNodes(int n) {
  std::vector<int> all(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) all[j] = j;
  return all;
}

// AllGather and ReduceScatter within one node take n^2 steps when every
// input goes straight to every output; checking that they can run block by
// block costs a comparison per pair of steps, so beyond 8 ranks (64 steps)
// they gather (reduce) into one vector first, in 2n steps.
constexpr size_t kDirectLocalMaxRanks = 8;

Region SendBuf(int rank, uint64_t off, uint64_t len) { return {BufKind::kSend, rank, off, len}; }
Region RecvBuf(int rank, uint64_t off, uint64_t len) { return {BufKind::kRecv, rank, off, len}; }

// Reduces the inputs of `local` ranks into `work`, starting with `first`'s.
void LocalReduce(Ctx& c, int first, const Region& work, uint64_t len) {
  c.b.Copy(SendBuf(first, 0, len), work);
  for (int r : c.local) {
    if (r != first) c.b.Reduce(SendBuf(r, 0, len), work);
  }
}

// With `input`, `work` does not hold this node's contribution yet: it is
// `input` alone (one rank on the node). The ring then reads it where it lies
// instead of copying it into work first (a whole pass over memory saved);
// the other algorithms copy it in.
void InterNodeAllReduce(Ctx& c, const Region& work, const Region* input = nullptr) {
  if (c.num_nodes == 1) return;
  switch (c.algo) {
    case Algorithm::kRecursiveDoubling:
      if (input != nullptr) c.b.Copy(*input, work);
      RecursiveDoublingAllReduce(c.b, c.node, c.num_nodes, work);
      return;
    case Algorithm::kDirect:
      if (input != nullptr) c.b.Copy(*input, work);
      DirectAllReduce(c.b, c.node, c.num_nodes, work);
      return;
    case Algorithm::kDoubleTree:
      if (input != nullptr) c.b.Copy(*input, work);
      DoubleTreeAllReduce(c.b, c.node, c.num_nodes, work, c.in.sig.count, c.esize, kPipelineChunkBytes);
      return;
    case Algorithm::kHalvingDoubling:
      HalvingDoublingAllReduce(c.b, c.node, c.num_nodes, work, c.in.sig.count, c.esize, input);
      return;
    default: {
      const Partitions parts = EvenChunks(c.in.sig.count, c.esize, c.num_nodes);
      RingReduceScatter(c.b, c.node, c.num_nodes, work, parts, input);
      RingAllGather(c.b, c.node, c.num_nodes, work, parts);
    }
  }
}

// Node j ends with the reduction of its ranks' blocks: by the ring, or by
// recursive halving for a power-of-two node count.
void InterNodeReduceScatter(Ctx& c, const Region& work, const Region* input = nullptr) {
  const Partitions parts = RankBlocks(c.layout, c.bytes);
  if (c.algo == Algorithm::kHalvingDoubling && PowerOfTwo(c.num_nodes)) {
    HalvingReduceScatter(c.b, AllNodes(c.num_nodes), c.node, work, parts, input);
  } else {
    RingReduceScatter(c.b, c.node, c.num_nodes, work, parts, input);
  }
}

void PlanAllReduce(Ctx& c) {
  const int leader = c.local.front();
  const Region work = RecvBuf(leader, 0, c.bytes);
  if (c.num_nodes > 1 && c.local.size() == 1) {
    const Region input = SendBuf(leader, 0, c.bytes);
    InterNodeAllReduce(c, work, &input);
  } else {
    LocalReduce(c, leader, work, c.bytes);
    InterNodeAllReduce(c, work);
  }
  if (c.in.sig.redop == RedOp::kAvg) c.b.Divide(work, static_cast<uint64_t>(c.layout.world_size()));
  for (int r : c.local) c.b.Copy(work, RecvBuf(r, 0, c.bytes));
}

void PlanReduce(Ctx& c) {
  const int root = c.in.sig.root;
  const int root_node = c.layout.node_of_rank[root];
  const bool is_root_node = c.node == root_node;
  const Region work = is_root_node ? RecvBuf(root, 0, c.bytes) : c.b.Scratch(c.bytes);
  LocalReduce(c, is_root_node ? root : c.local.front(), work, c.bytes);
  if (c.num_nodes > 1) {
    if (c.algo == Algorithm::kRing || c.algo == Algorithm::kHalvingDoubling || c.algo == Algorithm::kDoubleTree) {
      // Reduce-scatter, then every node hands its finished chunk to the root
      // (the trees are AllReduce's only: a Reduce asked for them takes the ring).
      const Partitions parts = EvenChunks(c.in.sig.count, c.esize, c.num_nodes);
      if (c.algo == Algorithm::kHalvingDoubling && PowerOfTwo(c.num_nodes)) {
        HalvingReduceScatter(c.b, AllNodes(c.num_nodes), c.node, work, parts);
      } else {
        RingReduceScatter(c.b, c.node, c.num_nodes, work, parts);
      }
      for (int j = 0; j < c.num_nodes; ++j) {
        if (j == root_node) continue;
        const auto [off, len] = parts[j].front();
        if (is_root_node) {
          c.b.Recv(j, work.Sub(off, len));
        } else if (j == c.node) {
          c.b.Send(root_node, work.Sub(off, len));
        }
      }
      c.b.EndPhase();
    } else {
      // Small vectors: everyone sends to the root, which folds in node order.
      if (is_root_node) {
        const Region slots = c.b.Scratch(c.bytes * static_cast<uint64_t>(c.num_nodes));
        auto slot = [&](int j) { return slots.Sub(static_cast<uint64_t>(j) * c.bytes, c.bytes); };
        for (int j = 0; j < c.num_nodes; ++j) {
          if (j != root_node) c.b.Recv(j, slot(j));
        }
        c.b.EndPhase();
        for (int j = 0; j < c.num_nodes; ++j) {
          if (j != root_node) c.b.Reduce(slot(j), work);
        }
      } else {
        c.b.Send(root_node, work);
      }
      c.b.EndPhase();
    }
  }
  if (is_root_node && c.in.sig.redop == RedOp::kAvg) {
    c.b.Divide(work, static_cast<uint64_t>(c.layout.world_size()));
  }
}

void PlanBroadcast(Ctx& c) {
  const int root = c.in.sig.root;
  const int root_node = c.layout.node_of_rank[root];
  // On the root node the data comes from the root's send buffer; elsewhere
  // it lands in the leader's receive buffer and is copied to the others.
  const Region src = SendBuf(root, 0, c.bytes);
  const Region landing = c.node == root_node ? src : RecvBuf(c.local.front(), 0, c.bytes);
  if (c.num_nodes > 1) {
    // Halving-doubling and the trees have no broadcast of their own: they
    // chain, like the ring.
    const bool pipelined =
        c.algo == Algorithm::kRing || c.algo == Algorithm::kHalvingDoubling || c.algo == Algorithm::kDoubleTree;
    BroadcastBetweenNodes(c.b, c.node, c.num_nodes, root_node, src, landing, pipelined);
  }
  for (int r : c.local) c.b.Copy(landing, RecvBuf(r, 0, c.bytes));
}

void PlanAllGather(Ctx& c) {
  const uint64_t world = static_cast<uint64_t>(c.layout.world_size());
  if (c.num_nodes == 1 && c.local.size() <= kDirectLocalMaxRanks) {
    // Every input straight into every output: copies of one length into
    // disjoint places, so they run block by block (local_steps.h) and each
    // input is read from memory once, not gathered into one output first
    // and read back for each of the others. In place (input r is block r of
    // output r), that copy is a no-op and nothing else writes there.
    for (int j : c.local) {
      for (int r : c.local) {
        c.b.Copy(SendBuf(r, 0, c.bytes), RecvBuf(j, static_cast<uint64_t>(r) * c.bytes, c.bytes));
      }
    }
    return;
  }
  const Region work = RecvBuf(c.local.front(), 0, c.bytes * world);
  for (int r : c.local) c.b.Copy(SendBuf(r, 0, c.bytes), work.Sub(static_cast<uint64_t>(r) * c.bytes, c.bytes));
  if (c.num_nodes > 1) {
    const Partitions parts = RankBlocks(c.layout, c.bytes);
    if (c.algo == Algorithm::kRing) {
      RingAllGather(c.b, c.node, c.num_nodes, work, parts);
    } else if (c.algo == Algorithm::kHalvingDoubling && PowerOfTwo(c.num_nodes)) {
      DoublingAllGather(c.b, AllNodes(c.num_nodes), c.node, work, parts);
    } else {
      DirectAllGather(c.b, c.node, c.num_nodes, work, parts);
    }
  }
  for (int r : c.local) c.b.Copy(work, RecvBuf(r, 0, c.bytes * world));
}

void PlanReduceScatter(Ctx& c) {
  const uint64_t world = static_cast<uint64_t>(c.layout.world_size());
  if (c.num_nodes == 1 && c.local.size() <= kDirectLocalMaxRanks) {
    // Each output is its block of every input folded straight into it: no
    // scratch vector of all blocks, which cost four passes over memory per
    // input. All steps have one length and name blocks that are identical
    // or disjoint, so they run block by block (local_steps.h), each output
    // block staying in cache while every input's block folds into it. The
    // fold starts with the output rank's own block: in place (NCCL's
    // convention puts output j at block j of input j), that first copy is a
    // no-op and no other step writes over an input another step reads.
    for (int j : c.local) {
      const uint64_t off = static_cast<uint64_t>(j) * c.bytes;
      const Region out = RecvBuf(j, 0, c.bytes);
      c.b.Copy(SendBuf(j, off, c.bytes), out);
      for (int r : c.local) {
        if (r != j) c.b.Reduce(SendBuf(r, off, c.bytes), out);
      }
      if (c.in.sig.redop == RedOp::kAvg) c.b.Divide(out, world);
    }
    return;
  }
  const Region work = c.b.Scratch(c.bytes * world);
  if (c.num_nodes > 1 && c.local.size() == 1) {
    // One rank on this node: the ring folds from its input directly (as in
    // PlanAllReduce), saving the copy of all world blocks into scratch.
    const Region input = SendBuf(c.local.front(), 0, c.bytes * world);
    InterNodeReduceScatter(c, work, &input);
  } else {
    LocalReduce(c, c.local.front(), work, c.bytes * world);
    if (c.num_nodes > 1) InterNodeReduceScatter(c, work);
  }
  for (int r : c.local) {
    const Region block = work.Sub(static_cast<uint64_t>(r) * c.bytes, c.bytes);
    if (c.in.sig.redop == RedOp::kAvg) c.b.Divide(block, world);
    c.b.Copy(block, RecvBuf(r, 0, c.bytes));
  }
}

void PlanGather(Ctx& c) {
  const int root = c.in.sig.root;
  const int root_node = c.layout.node_of_rank[root];
  auto block = [&](int r) { return RecvBuf(root, static_cast<uint64_t>(r) * c.bytes, c.bytes); };
  if (c.node == root_node) {
    for (int r : c.local) c.b.Copy(SendBuf(r, 0, c.bytes), block(r));
    for (int j = 0; j < c.num_nodes; ++j) {
      if (j == root_node) continue;
      for (int r : c.layout.ranks_of_node[j]) c.b.Recv(j, block(r));
    }
  } else {
    for (int r : c.local) c.b.Send(root_node, SendBuf(r, 0, c.bytes));
  }
  c.b.EndPhase();
}

void PlanScatter(Ctx& c) {
  const int root = c.in.sig.root;
  const int root_node = c.layout.node_of_rank[root];
  auto block = [&](int r) { return SendBuf(root, static_cast<uint64_t>(r) * c.bytes, c.bytes); };
  if (c.node == root_node) {
    for (int r : c.local) c.b.Copy(block(r), RecvBuf(r, 0, c.bytes));
    for (int j = 0; j < c.num_nodes; ++j) {
      if (j == root_node) continue;
      for (int r : c.layout.ranks_of_node[j]) c.b.Send(j, block(r));
    }
  } else {
    for (int r : c.local) c.b.Recv(root_node, RecvBuf(r, 0, c.bytes));
  }
  c.b.EndPhase();
}

void PlanAllToAll(Ctx& c) {
  const uint64_t world = static_cast<uint64_t>(c.layout.world_size());
  const uint64_t all = c.bytes * world;
  // In-place ranks get their input staged first: their receive buffer is
  // written while the input is still being read.
  std::vector<Region> input(world);
  for (int a : c.local) {
    input[a] = SendBuf(a, 0, all);
    for (int ip : c.in.in_place_ranks) {
      if (ip == a) {
        input[a] = c.b.Scratch(all);
        c.b.Copy(SendBuf(a, 0, all), input[a]);
      }
    }
  }
  auto blk = [&](uint64_t i) { return i * c.bytes; };
  for (int a : c.local) {
    for (int b : c.local) c.b.Copy(input[a].Sub(blk(b), c.bytes), RecvBuf(b, blk(a), c.bytes));
  }
  for (int peer = 0; peer < c.num_nodes; ++peer) {
    if (peer == c.node) continue;
    for (int a : c.local) {
      for (int b : c.layout.ranks_of_node[peer]) c.b.Send(peer, input[a].Sub(blk(b), c.bytes));
    }
    for (int a : c.layout.ranks_of_node[peer]) {
      for (int b : c.local) c.b.Recv(peer, RecvBuf(b, blk(a), c.bytes));
    }
  }
  c.b.EndPhase();
}

// Every node sends an empty message to the next node and receives one from
// the previous, as the first message of each stream, in its first network
// phase. Headers carry the signature, so a disagreement between any two
// nodes shows up between some adjacent pair, even when the schedules would
// otherwise send without receiving (two nodes that both believe they hold
// the root of a broadcast). It travels with the data: no extra round trip.
void AddSignatureRing(Schedule* s, int node, int num_nodes) {
  if (num_nodes < 2) return;
  auto first_network = std::find_if(s->phases.begin(), s->phases.end(), [](const Phase& p) {
    return std::any_of(p.steps.begin(), p.steps.end(), [](const Step& st) { return st.IsNetwork(); });
  });
  if (first_network == s->phases.end()) first_network = s->phases.insert(s->phases.end(), Phase{});
  auto& steps = first_network->steps;
  auto pos = std::find_if(steps.begin(), steps.end(), [](const Step& st) { return st.IsNetwork(); });
  const Step signal{StepKind::kSend, {}, {}, (node + 1) % num_nodes};
  const Step await{StepKind::kRecv, {}, {}, (node + num_nodes - 1) % num_nodes};
  pos = steps.insert(pos, await);
  steps.insert(pos, signal);
}

}  // namespace

bool AlgorithmMatters(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kReduce:
    case Collective::kBroadcast:
    case Collective::kAllGather:
    case Collective::kSplit:
    case Collective::kReduceScatter:
      return true;
    default:
      return false;
  }
}

Algorithm ChooseAlgorithm(const OpSignature& sig, int num_nodes, Algorithm requested) {
  const bool pow2 = PowerOfTwo(num_nodes);
  if (requested == Algorithm::kRecursiveDoubling && !pow2) return Algorithm::kDirect;
  if (requested != Algorithm::kAuto) return requested;
  const uint64_t bytes = sig.count * DataTypeSize(sig.dtype);
  if (num_nodes <= 2 && sig.collective == Collective::kAllReduce && bytes > kSmallMessageBytes) {
    return Algorithm::kRing;  // with two nodes ring and halving/doubling move the same bytes
  }
  if (bytes <= kSmallMessageBytes) return pow2 ? Algorithm::kRecursiveDoubling : Algorithm::kDirect;
  return Algorithm::kRing;
}

Status BuildSchedule(const PlanInput& in, Schedule* out) {
  if (in.layout == nullptr) return Status::Internal("BuildSchedule without a layout");
  const NodeLayout& layout = *in.layout;
  if (in.node < 0 || in.node >= layout.num_nodes()) return Status::Internal("node index out of range");
  const OpSignature& sig = in.sig;
  if (HasRoot(sig.collective) && (sig.root < 0 || sig.root >= layout.world_size())) {
    return Status::InvalidArgument("root " + std::to_string(sig.root) + " is not a rank of this communicator (size " +
                                   std::to_string(layout.world_size()) + ")");
  }
  const uint64_t esize = DataTypeSize(sig.dtype);
  uint64_t bytes = 0;
  uint64_t all = 0;
  if (__builtin_mul_overflow(sig.count, esize, &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<uint64_t>(layout.world_size()), &all)) {
    return Status::InvalidArgument("count " + std::to_string(sig.count) + " overflows the buffer size");
  }
  *out = Schedule{};
  ScheduleBuilder b(out);
  Ctx c{in, layout, b, in.node, layout.num_nodes(), esize, bytes, layout.ranks_of_node[in.node],
        ChooseAlgorithm(sig, layout.num_nodes(), in.algorithm)};
  switch (sig.collective) {
    case Collective::kAllReduce: PlanAllReduce(c); break;
    case Collective::kReduce: PlanReduce(c); break;
    case Collective::kBroadcast: PlanBroadcast(c); break;
    case Collective::kAllGather:
    case Collective::kSplit: PlanAllGather(c); break;
    case Collective::kReduceScatter: PlanReduceScatter(c); break;
    case Collective::kGather: PlanGather(c); break;
    case Collective::kScatter: PlanScatter(c); break;
    case Collective::kAllToAll: PlanAllToAll(c); break;
    case Collective::kBarrier:
      if (c.num_nodes > 1) NodeBarrier(b, c.node, c.num_nodes);
      break;
    case Collective::kSend:
    case Collective::kRecv:
      return Status::Internal("send/recv are point-to-point and have no schedule");
  }
  b.Finish();
  AddSignatureRing(out, c.node, c.num_nodes);
  return Status::Ok();
}

}  // namespace baton
