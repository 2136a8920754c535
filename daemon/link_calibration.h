// MeasureLinks: the figures the cost model (collectives/cost_model.h) needs,
// measured on a new communicator's own connections before its first
// operation, and agreed by all of its nodes.
#pragma once

#include <chrono>
#include <cstdint>

#include "collectives/cost_model.h"
#include "common/status.h"
#include "transports/mesh.h"

namespace baton {

// Collective over the communicator's nodes (`n` nodes, this is node `me`):
// every node calls it once, right after connecting. Uses sequence number 0,
// which no operation has. *agreed gets node 0's figures on every node;
// *measured_here this node's own (for the log).
Status MeasureLinks(Mesh& mesh, uint64_t comm_uid, int n, int me, std::chrono::steady_clock::time_point deadline,
                    LinkParams* agreed, LinkParams* measured_here);

}  // namespace baton
