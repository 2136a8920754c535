#include "collectives/cost_model.h"

#include <algorithm>
#include <bit>
#include <cstdio>
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

CostEstimate PredictCost(const Schedule& schedule, const LinkParams& link) {
  CostEstimate est;
  const double local_ns_per_byte = 1.0 / std::max(link.local_gbps, 1e-3);
  const double link_ns_per_byte = 1.0 / std::max(link.link_gbps, 1e-3);
  for (const Phase& phase : schedule.phases) {
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
    const double local_us = static_cast<double>(local + reduced_on_receipt) * local_ns_per_byte / 1e3;
    est.local_us += local_us;
    if (sent + received > 0) {
      const double wire_us = static_cast<double>(std::max(sent, received)) * link_ns_per_byte / 1e3;
      est.network_us += link.alpha_us + static_cast<double>(messages) * kPerMessageUs + wire_us;
      ++est.network_phases;
    }
  }
  est.total_us = est.local_us + est.network_us;
  return est;
}

std::vector<AlgorithmCost> RankAlgorithms(const PlanInput& in, const LinkParams& link) {
  std::vector<Algorithm> candidates{Algorithm::kRing, Algorithm::kDirect};
  if (in.layout != nullptr && std::has_single_bit(static_cast<unsigned>(in.layout->num_nodes()))) {
    candidates.insert(candidates.begin() + 1, Algorithm::kRecursiveDoubling);
  }
  std::vector<AlgorithmCost> out;
  for (Algorithm a : candidates) {
    PlanInput p = in;
    p.algorithm = a;
    p.node = 0;
    Schedule s;
    if (!BuildSchedule(p, &s).ok()) continue;
    out.push_back({a, PredictCost(s, link)});
  }
  // Stable: on a tie the earlier candidate (ring, then recursive doubling) wins.
  std::stable_sort(out.begin(), out.end(),
                   [](const AlgorithmCost& x, const AlgorithmCost& y) { return x.cost.total_us < y.cost.total_us; });
  return out;
}

}  // namespace baton
