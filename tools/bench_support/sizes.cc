#include "tools/bench_support/sizes.h"

namespace baton::bench {

bool SizeSpansEveryRank(Collective c) {
  switch (c) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
      return true;
    default:
      return false;
  }
}

uint64_t CountForSize(Collective c, uint64_t size_bytes, uint64_t element_bytes, int world) {
  const uint64_t elements = size_bytes / element_bytes;
  return SizeSpansEveryRank(c) ? elements / static_cast<uint64_t>(world) : elements;
}

uint64_t SizeOfCount(Collective c, uint64_t count, uint64_t element_bytes, int world) {
  const uint64_t bytes = count * element_bytes;
  return SizeSpansEveryRank(c) ? bytes * static_cast<uint64_t>(world) : bytes;
}

double BusBandwidthFactor(Collective c, int world) {
  if (world <= 1) return 1;
  if (c == Collective::kAllReduce) return 2.0 * (world - 1) / world;
  if (SizeSpansEveryRank(c)) return static_cast<double>(world - 1) / world;
  return 1;
}

}  // namespace baton::bench
