#include "collectives/binary_tree.h"

#include <algorithm>
#include <bit>

namespace baton {
namespace {

unsigned LowBit(unsigned v) { return v & (~v + 1); }

}  // namespace

std::vector<TreePosition> BinaryTree(int num_nodes, bool mirrored) {
  const unsigned n = static_cast<unsigned>(num_nodes);
  auto node_of = [&](unsigned label) { return static_cast<int>(mirrored ? n - label : label - 1); };
  const unsigned root = std::bit_floor(n);
  std::vector<TreePosition> tree(n);
  for (unsigned v = 1; v <= n; ++v) {
    TreePosition& pos = tree[node_of(v)];
    if (v != root) {
      // Up one level at a time ((v - lb) | 2lb is the parent in the
      // unbounded tree), skipping ancestors beyond N; the root (a power of
      // two above every label's bits) is reached at the latest.
      unsigned p = v;
      do {
        const unsigned lb = LowBit(p);
        p = (p - lb) | (lb << 1);
      } while (p > n);
      pos.parent = node_of(p);
    }
    const unsigned half = LowBit(v) >> 1;
    if (half == 0) continue;  // odd label: a leaf
    pos.children.push_back(node_of(v - half));
    // The right child, or if it lies beyond N, its nearest left descendant
    // that does not.
    unsigned r = v + half;
    while (r > n && LowBit(r) > 1) r -= LowBit(r) >> 1;
    if (r <= n) pos.children.push_back(node_of(r));
  }
  // Depths from the root down, heights from the leaves up (labels in order
  // of level: a child's level is below its parent's).
  std::vector<unsigned> by_level;
  for (unsigned v = 1; v <= n; ++v) by_level.push_back(v);
  std::stable_sort(by_level.begin(), by_level.end(), [](unsigned a, unsigned b) { return LowBit(a) > LowBit(b); });
  for (unsigned v : by_level) {
    TreePosition& pos = tree[node_of(v)];
    for (int c : pos.children) tree[c].depth = pos.depth + 1;
  }
  for (auto it = by_level.rbegin(); it != by_level.rend(); ++it) {
    TreePosition& pos = tree[node_of(*it)];
    for (int c : pos.children) pos.height = std::max(pos.height, tree[c].height + 1);
  }
  return tree;
}

}  // namespace baton
