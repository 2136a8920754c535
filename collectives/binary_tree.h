// The binary trees of a double-binary-tree AllReduce (the scheme NCCL uses
// across nodes): two trees over the same nodes, each carrying half of the
// vector, such that (for an even node count) every node is a leaf in one
// tree and an inner node in the other. Inner nodes forward twice the data
// that leaves do, so splitting the work this way evens out the load, and
// the depth is log2 N: latency grows with log N instead of the ring's N.
//
// The first tree is the in-order tree over labels 1..N (node j has label
// j+1): a label's level is its lowest set bit, its parent is the nearest
// label one level up whose subtree contains it, and the root is the largest
// power of two <= N. The second tree is the first mirrored (node j has
// label N-j), which turns the first tree's leaves (odd labels) into inner
// nodes when N is even.
#pragma once

#include <vector>

namespace baton {

struct TreePosition {
  int parent = -1;            // node index; -1 at the root
  std::vector<int> children;  // node indices, at most two, the lower label first
  int height = 0;             // 0 for a leaf; the root's is the tree's height
  int depth = 0;              // 0 for the root
};

// Every node's place in the tree over `num_nodes` nodes (num_nodes >= 1).
std::vector<TreePosition> BinaryTree(int num_nodes, bool mirrored);

}  // namespace baton
