#include "collectives/cost_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace baton {
namespace {

// What each message of a phase adds to the phase's latency (system calls,
// header): a constant, small beside alpha, that makes talking to many peers
// at once cost more than talking to one.
constexpr double kPerMessageUs = 2;

}  // namespace

std::string LinkParams::ToString() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "alpha %.1f us, link %.2f GB/s, local %.2f GB/s (%s)", alpha_us, link_gbps,
                local_gbps, measured ? "measured" : "defaults");
  return buf;
}

namespace {

// One phase's own costs, in microseconds.
struct PhaseCost {
  double local_us = 0;    // local steps and folds on receipt
  double network_us = 0;  // alpha + messages + the busier direction's bytes; 0 without network steps
};

PhaseCost CostOfPhase(const Phase& phase, const LinkParams& link) {
  const double local_ns_per_byte = 1.0 / std::max(link.local_gbps, 1e-3);
  const double link_ns_per_byte = 1.0 / std::max(link.link_gbps, 1e-3);
  uint64_t local = 0, sent = 0, received = 0, reduced_on_receipt = 0, messages = 0;
  for (const Step& s : phase.steps) {
    if (s.IsNetwork()) ++messages;
    switch (s.kind) {
      case StepKind::kCopy:
      case StepKind::kReduce:
        local += s.src.bytes;
        break;
      case StepKind::kDivide:
        local += s.dst.bytes;
        break;
      case StepKind::kSend:
        sent += s.src.bytes;
        break;
      case StepKind::kRecv:
        received += s.dst.bytes;
        break;
      case StepKind::kRecvReduce:
        received += s.dst.bytes;
        reduced_on_receipt += s.dst.bytes;
        break;
    }
  }
  PhaseCost c;
  c.local_us = static_cast<double>(local + reduced_on_receipt) * local_ns_per_byte / 1e3;
  if (sent + received > 0) {
    const double wire_us = static_cast<double>(std::max(sent, received)) * link_ns_per_byte / 1e3;
    c.network_us = link.alpha_us + static_cast<double>(messages) * kPerMessageUs + wire_us;
  }
  return c;
}

}  // namespace

CostEstimate PredictCost(const Schedule& schedule, const LinkParams& link) {
  CostEstimate est;
  for (const Phase& phase : schedule.phases) {
    const PhaseCost c = CostOfPhase(phase, link);
    est.local_us += c.local_us;
    est.network_us += c.network_us;
    if (c.network_us > 0) ++est.network_phases;
  }
  est.total_us = est.local_us + est.network_us;
  return est;
}

CostEstimate PredictCollectiveCost(const std::vector<Schedule>& per_node, const LinkParams& link) {
  const size_t n = per_node.size();
  // sent[(from, to)][k]: when the k-th message from node `from` to node
  // `to` could go (its phase's local steps done).
  std::map<std::pair<int, int>, std::vector<double>> sent;
  std::map<std::pair<int, int>, size_t> taken;  // messages received so far, per (from, to)
  std::vector<size_t> next(n, 0);     // each node's current phase
  std::vector<bool> entered(n, false);  // whether its sends of that phase are out
  std::vector<double> clock(n, 0);    // when its previous phase ended
  std::vector<CostEstimate> own(n);   // its own sums
  std::vector<std::vector<PhaseCost>> costs(n);  // [node][phase], computed once
  for (size_t i = 0; i < n; ++i) {
    for (const Phase& phase : per_node[i].phases) costs[i].push_back(CostOfPhase(phase, link));
  }
  size_t done = 0;
  for (size_t i = 0; i < n; ++i) done += per_node[i].phases.empty();
  // A node entering a phase sends at once; it leaves the phase when every
  // message it receives there has been sent. Correct schedules always let
  // some node go on.
  while (done < n) {
    bool progress = false;
    for (size_t node = 0; node < n; ++node) {
      if (next[node] == per_node[node].phases.size()) continue;
      const int me = static_cast<int>(node);
      const Phase& phase = per_node[node].phases[next[node]];
      const PhaseCost& c = costs[node][next[node]];
      if (!entered[node]) {
        for (const Step& s : phase.steps) {
          if (s.kind == StepKind::kSend) sent[{me, s.peer}].push_back(clock[node] + c.local_us);
        }
        entered[node] = true;
        progress = true;
      }
      // The network part starts once this node and all its senders are ready.
      double start = clock[node] + c.local_us;
      std::map<int, size_t> taking;  // this phase's messages, per sender
      bool all_sent = true;
      for (const Step& s : phase.steps) {
        if (s.kind != StepKind::kRecv && s.kind != StepKind::kRecvReduce) continue;
        const size_t k = taken[{s.peer, me}] + taking[s.peer]++;
        const auto& from = sent[{s.peer, me}];
        if (k >= from.size()) {
          all_sent = false;
          break;
        }
        start = std::max(start, from[k]);
      }
      if (!all_sent) continue;
      for (const auto& [from, count] : taking) taken[{from, me}] += count;
      clock[node] = start + c.network_us;
      own[node].local_us += c.local_us;
      own[node].network_us += c.network_us;
      own[node].network_phases += c.network_us > 0;
      entered[node] = false;
      if (++next[node] == per_node[node].phases.size()) ++done;
      progress = true;
    }
    if (!progress) {
      CostEstimate never;
      never.total_us = std::numeric_limits<double>::infinity();
      return never;
    }
  }
  const size_t last = static_cast<size_t>(std::max_element(clock.begin(), clock.end()) - clock.begin());
  CostEstimate est = own[last];
  est.total_us = clock[last];
  for (const CostEstimate& e : own) est.network_phases = std::max(est.network_phases, e.network_phases);
  return est;
}

std::vector<AlgorithmCost> RankAlgorithms(const PlanInput& in, const LinkParams& link) {
  std::vector<Algorithm> candidates{Algorithm::kRing, Algorithm::kHalvingDoubling, Algorithm::kDirect};
  if (in.sig.collective == Collective::kAllReduce) candidates.push_back(Algorithm::kDoubleTree);
  if (in.layout != nullptr && std::has_single_bit(static_cast<unsigned>(in.layout->num_nodes()))) {
    candidates.insert(candidates.begin() + 2, Algorithm::kRecursiveDoubling);
  }
  // One shape whatever is asked: price it once (every node's schedule of a
  // large AllToAll is big).
  if (!AlgorithmMatters(in.sig.collective)) candidates = {Algorithm::kRing};
  std::vector<AlgorithmCost> out;
  const int num_nodes = in.layout != nullptr ? in.layout->num_nodes() : 0;
  for (Algorithm a : candidates) {
    std::vector<Schedule> per_node(static_cast<size_t>(num_nodes));
    bool built = num_nodes > 0;
    for (int node = 0; node < num_nodes && built; ++node) {
      PlanInput p = in;
      p.algorithm = a;
      p.node = node;
      built = BuildSchedule(p, &per_node[node]).ok();
    }
    if (!built) continue;
    const CostEstimate cost = PredictCollectiveCost(per_node, link);
    if (std::isfinite(cost.total_us)) out.push_back({a, cost});
  }
  // Stable: on a tie the earlier candidate (ring, halving-doubling, recursive
  // doubling) wins.
  std::stable_sort(out.begin(), out.end(),
                   [](const AlgorithmCost& x, const AlgorithmCost& y) { return x.cost.total_us < y.cost.total_us; });
  return out;
}

}  // namespace baton
