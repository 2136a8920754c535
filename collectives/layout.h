// NodeLayout: which node each rank of a communicator lives on.
#pragma once

#include <vector>

#include "common/status.h"

namespace baton {

struct NodeLayout {
  std::vector<int> node_of_rank;                // rank -> node index
  std::vector<std::vector<int>> ranks_of_node;  // node index -> its ranks, ascending

  int world_size() const { return static_cast<int>(node_of_rank.size()); }
  int num_nodes() const { return static_cast<int>(ranks_of_node.size()); }
  int leader(int node) const { return ranks_of_node[node].front(); }

  // Builds the layout from rank -> node; node indices must be dense (0..N-1)
  // and every node must hold at least one rank.
  static Status FromNodeOfRank(std::vector<int> node_of_rank, NodeLayout* out);
  // Convenience for tests: `per_node[i]` consecutive ranks on node i.
  static NodeLayout Blocked(const std::vector<int>& per_node);
};

}  // namespace baton
