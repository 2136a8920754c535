#include "collectives/layout.h"

#include <string>

namespace baton {

Status NodeLayout::FromNodeOfRank(std::vector<int> node_of_rank, NodeLayout* out) {
  if (node_of_rank.empty()) return Status::InvalidArgument("a communicator needs at least one rank");
  int max_node = -1;
  for (int n : node_of_rank) {
    if (n < 0) return Status::InvalidArgument("negative node index in layout");
    max_node = std::max(max_node, n);
  }
  NodeLayout layout;
  layout.ranks_of_node.resize(static_cast<size_t>(max_node) + 1);
  for (size_t r = 0; r < node_of_rank.size(); ++r) {
    layout.ranks_of_node[static_cast<size_t>(node_of_rank[r])].push_back(static_cast<int>(r));
  }
  for (size_t n = 0; n < layout.ranks_of_node.size(); ++n) {
    if (layout.ranks_of_node[n].empty()) {
      return Status::InvalidArgument("node index " + std::to_string(n) + " has no ranks");
    }
  }
  layout.node_of_rank = std::move(node_of_rank);
  *out = std::move(layout);
  return Status::Ok();
}

NodeLayout NodeLayout::Blocked(const std::vector<int>& per_node) {
  std::vector<int> node_of_rank;
  for (size_t n = 0; n < per_node.size(); ++n) {
    for (int i = 0; i < per_node[n]; ++i) node_of_rank.push_back(static_cast<int>(n));
  }
  NodeLayout layout;
  (void)FromNodeOfRank(std::move(node_of_rank), &layout);
  return layout;
}

}  // namespace baton
