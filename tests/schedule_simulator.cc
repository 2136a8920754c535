#include "tests/schedule_simulator.h"

#include <cstring>
#include <deque>
#include <map>

#include "collectives/local_steps.h"
#include "collectives/reduce.h"

namespace baton::test {
namespace {

struct NodeState {
  Schedule schedule;
  std::vector<uint8_t> scratch;
  size_t phase = 0;
  bool phase_started = false;
};

}  // namespace

RankMemory MakeRankMemory(const OpSignature& sig, int world, bool in_place) {
  using namespace reference;
  const uint64_t es = DataTypeSize(sig.dtype);
  const uint64_t blk = sig.count * es;
  RankMemory m;
  m.sends.resize(world);
  m.recvs.resize(world);
  m.sim.resize(world);
  for (int r = 0; r < world; ++r) {
    m.sends[r] = MakeSendBuffer(sig, world, r);
    BufferExtents ext;
    ComputeExtents(sig.collective, sig.count, world, r, sig.root, &ext);
    m.recvs[r].assign(ext.recv_elems * es, 0xAB);
    m.sim[r] = {m.sends[r].data(), m.sends[r].size(), m.recvs[r].data(), m.recvs[r].size()};
    if (!in_place) continue;
    // Place the input inside the output buffer (or the output inside the input).
    switch (sig.collective) {
      case Collective::kAllReduce:
      case Collective::kAllToAll:
      case Collective::kBroadcast:
      case Collective::kReduce:
        if (ext.send_elems == ext.recv_elems) {
          if (!m.sends[r].empty()) std::memcpy(m.recvs[r].data(), m.sends[r].data(), m.sends[r].size());
          m.sim[r].send = m.recvs[r].data();
          m.in_place_ranks.push_back(r);
        }
        break;
      case Collective::kAllGather:
      case Collective::kGather:
        if (ext.recv_elems > 0) {
          std::memcpy(m.recvs[r].data() + r * blk, m.sends[r].data(), blk);
          m.sim[r].send = m.recvs[r].data() + r * blk;
          m.sim[r].send_bytes = blk;
        }
        break;
      case Collective::kReduceScatter:
      case Collective::kScatter:
        if (ext.send_elems > 0) {
          m.sim[r].recv = m.sends[r].data() + r * blk;
          m.sim[r].recv_bytes = blk;
        }
        break;
      default:
        break;
    }
  }
  m.inputs = m.sends;
  return m;
}

Status Simulate(const NodeLayout& layout, const OpSignature& sig, Algorithm algo, const std::vector<SimRank>& ranks,
                const std::vector<int>& in_place_ranks, const PhaseHooks& hooks) {
  const int n = layout.num_nodes();
  std::vector<NodeState> nodes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    PlanInput in;
    in.sig = sig;
    in.layout = &layout;
    in.node = i;
    in.algorithm = algo;
    for (int r : in_place_ranks) {
      if (layout.node_of_rank[r] == i) in.in_place_ranks.push_back(r);
    }
    BATON_RETURN_IF_ERROR(BuildSchedule(in, &nodes[i].schedule));
    if (hooks.rewrite) BATON_RETURN_IF_ERROR(hooks.rewrite(i, &nodes[i].schedule));
    nodes[i].scratch.assign(nodes[i].schedule.scratch_bytes, 0xEE);
    if (hooks.scratch_ready) BATON_RETURN_IF_ERROR(hooks.scratch_ready(i, &nodes[i].scratch));
  }
  std::map<std::pair<int, int>, std::deque<std::vector<uint8_t>>> wire;  // (from, to) -> messages

  auto resolve = [&](int node, const Region& r, uint8_t** out) -> Status {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    if (r.buf == BufKind::kScratch) {
      base = nodes[node].scratch.data();
      size = nodes[node].scratch.size();
    } else {
      if (r.rank < 0 || r.rank >= layout.world_size() || layout.node_of_rank[r.rank] != node) {
        return Status::Internal("node " + std::to_string(node) + " touches rank " + std::to_string(r.rank) +
                                " which is not local");
      }
      const SimRank& sr = ranks[r.rank];
      base = r.buf == BufKind::kSend ? sr.send : sr.recv;
      size = r.buf == BufKind::kSend ? sr.send_bytes : sr.recv_bytes;
      if (base == nullptr && r.bytes > 0) {
        return Status::Internal("node " + std::to_string(node) + " touches rank " + std::to_string(r.rank) + "'s " +
                                (r.buf == BufKind::kSend ? "send" : "receive") + " buffer, which is not in memory");
      }
    }
    if (r.offset > size || r.bytes > size - r.offset) {
      return Status::Internal("node " + std::to_string(node) + ": region out of bounds (offset " +
                              std::to_string(r.offset) + " bytes " + std::to_string(r.bytes) + " size " +
                              std::to_string(size) + ")");
    }
    *out = base + r.offset;
    return Status::Ok();
  };

  const size_t esize = DataTypeSize(sig.dtype);
  static WorkerPool pool(3);  // exercises the helpers on large steps
  for (;;) {
    bool progress = false;
    bool all_done = true;
    for (int i = 0; i < n; ++i) {
      NodeState& st = nodes[i];
      if (st.phase >= st.schedule.phases.size()) continue;
      all_done = false;
      const Phase& phase = st.schedule.phases[st.phase];
      if (!st.phase_started) {
        st.phase_started = true;
        progress = true;
        if (hooks.before) BATON_RETURN_IF_ERROR(hooks.before(i, st.schedule, st.phase));
        // Local steps run as the daemon runs them (blocked, on a pool).
        std::vector<LocalStep> local;
        for (const Step& s : phase.steps) {
          uint8_t* src = nullptr;
          uint8_t* dst = nullptr;
          switch (s.kind) {
            case StepKind::kCopy:
            case StepKind::kReduce:
              BATON_RETURN_IF_ERROR(resolve(i, s.src, &src));
              BATON_RETURN_IF_ERROR(resolve(i, s.dst, &dst));
              if (s.src.bytes != s.dst.bytes) return Status::Internal("local step size mismatch");
              local.push_back({s.kind, src, dst, s.src.bytes, 0});
              break;
            case StepKind::kDivide:
              BATON_RETURN_IF_ERROR(resolve(i, s.dst, &dst));
              local.push_back({s.kind, nullptr, dst, s.dst.bytes, s.divisor});
              break;
            default:
              break;
          }
        }
        RunLocalSteps(local, sig.dtype, sig.redop, &pool);
        for (const Step& s : phase.steps) {
          if (s.kind != StepKind::kSend) continue;
          uint8_t* src = nullptr;
          if (s.src.bytes > 0) BATON_RETURN_IF_ERROR(resolve(i, s.src, &src));
          wire[{i, s.peer}].emplace_back(src, src + s.src.bytes);
        }
      }
      // Can every receive of this phase be satisfied now?
      std::map<int, size_t> needed;
      for (const Step& s : phase.steps) {
        if (s.kind == StepKind::kRecv || s.kind == StepKind::kRecvReduce) ++needed[s.peer];
      }
      bool ready = true;
      for (const auto& [peer, count] : needed) {
        if (wire[{peer, i}].size() < count) ready = false;
      }
      if (!ready) continue;
      for (const Step& s : phase.steps) {
        if (s.kind != StepKind::kRecv && s.kind != StepKind::kRecvReduce) continue;
        auto& q = wire[{s.peer, i}];
        std::vector<uint8_t> msg = std::move(q.front());
        q.pop_front();
        if (msg.size() != s.dst.bytes) {
          return Status::Internal("node " + std::to_string(i) + " expected " + std::to_string(s.dst.bytes) +
                                  " bytes from node " + std::to_string(s.peer) + ", got " + std::to_string(msg.size()));
        }
        if (msg.empty()) continue;
        uint8_t* dst = nullptr;
        BATON_RETURN_IF_ERROR(resolve(i, s.dst, &dst));
        if (s.kind == StepKind::kRecv) {
          std::memcpy(dst, msg.data(), msg.size());
        } else {
          if (s.src.bytes > 0) {  // dst = operand (op) incoming
            uint8_t* operand = nullptr;
            BATON_RETURN_IF_ERROR(resolve(i, s.src, &operand));
            std::memmove(dst, operand, msg.size());
          }
          ReduceInto(sig.dtype, sig.redop, dst, msg.data(), msg.size() / esize);
        }
      }
      if (hooks.after) BATON_RETURN_IF_ERROR(hooks.after(i, st.schedule, st.phase));
      ++st.phase;
      st.phase_started = false;
      progress = true;
    }
    if (all_done) break;
    if (!progress) return Status::Internal("deadlock: no node can make progress");
  }
  for (const auto& [key, q] : wire) {
    if (!q.empty()) {
      return Status::Internal(std::to_string(q.size()) + " unreceived message(s) from node " +
                              std::to_string(key.first) + " to node " + std::to_string(key.second));
    }
  }
  return Status::Ok();
}

}  // namespace baton::test
