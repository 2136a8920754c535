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
// The estimate is node 0's schedule: every node computes the same figure,
// so every node picks the same algorithm without talking.
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

CostEstimate PredictCost(const Schedule& schedule, const LinkParams& link);

struct AlgorithmCost {
  Algorithm algorithm;
  CostEstimate cost;
};

// Prices every algorithm that applies to `in` (ring, recursive doubling for
// a power-of-two node count, direct) on node 0's schedule, cheapest first.
// `in.algorithm` and `in.node` are ignored.
std::vector<AlgorithmCost> RankAlgorithms(const PlanInput& in, const LinkParams& link);

}  // namespace baton
