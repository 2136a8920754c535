// The alpha-beta cost model: predicts how long a schedule takes from the
// links' latency (alpha) and bandwidth (beta), and the node's local copy and
// reduction bandwidth. Because schedules are data, the model prices any
// algorithm the planner can build; kAuto picks the cheapest.
//
// Per phase (phases run one after another):
//   local   = bytes copied, reduced or divided / local bandwidth
//   network = alpha + messages * 2 us + max(bytes sent, bytes received) / link bandwidth
//             (sends to different peers share the node's NIC; the link is
//             full duplex) + bytes reduced on receipt / local bandwidth
// RankAlgorithms prices a collective from every node's schedule at once
// (PredictCollectiveCost): a phase's network part starts when this node and
// every node sending to it in that phase are ready, so waiting for a
// result that crosses several hops (a tree's root, paired nodes of halving-
// doubling) counts. Every node computes the same figure, so every node
// picks the same algorithm without talking.
#pragma once

#include <string>
#include <vector>

#include "collectives/schedule.h"

namespace baton {

struct LinkParams {
  double alpha_us = 25;       // one message's latency between two nodes
  double link_gbps = 1.25;    // bytes per nanosecond (GB/s) between two nodes, one direction
  double local_gbps = 5;      // local copy/reduction throughput (GB/s)
  bool measured = false;      // from a calibration (else the defaults above)

  std::string ToString() const;
};

struct CostEstimate {
  double total_us = 0;
  double network_us = 0;
  double local_us = 0;
  int network_phases = 0;
};

// One node's schedule alone, as if every peer were always ready.
CostEstimate PredictCost(const Schedule& schedule, const LinkParams& link);

// Every node's schedule (per_node[n] is node n's): the time until the last
// node finishes. Breakdown (local, network, phases) of that node. Returns a
// total of infinity if the schedules do not match up (a receive without
// its send), which a correct builder never produces.
CostEstimate PredictCollectiveCost(const std::vector<Schedule>& per_node, const LinkParams& link);

struct AlgorithmCost {
  Algorithm algorithm;
  CostEstimate cost;
};

// Prices every algorithm that applies to `in` (ring, halving-doubling,
// recursive doubling for a power-of-two node count, direct, and for
// AllReduce the double binary tree) on all nodes' schedules, cheapest first.
// `in.algorithm` and `in.node` are ignored.
std::vector<AlgorithmCost> RankAlgorithms(const PlanInput& in, const LinkParams& link);

}  // namespace baton
