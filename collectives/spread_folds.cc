#include "collectives/spread_folds.h"

#include <algorithm>

#include "collectives/spread_chunks.h"

namespace baton {

std::vector<Region> AppendSpreadFolds(ScheduleBuilder& b, uint64_t bytes, const std::vector<int>& ranks, int target,
                                      uint64_t divisor, std::vector<ScratchShare>* shares) {
  const SpreadChunks chunks(bytes, ranks.size());
  const uint64_t target_chunk =
      static_cast<uint64_t>(std::find(ranks.begin(), ranks.end(), target) - ranks.begin());
  std::vector<uint64_t> order{target_chunk};
  for (uint64_t k = 0; k < ranks.size(); ++k) {
    if (k != target_chunk) order.push_back(k);
  }
  // Folds of different chunks touch disjoint memory: on GPUs they run at
  // once.
  std::vector<Region> folded(ranks.size());
  for (uint64_t k : order) {
    const auto [off, len] = chunks.span(k);
    if (len == 0) continue;
    folded[k] = k == target_chunk ? Region{BufKind::kRecv, target, off, len} : b.Scratch(len);
    if (k != target_chunk) shares->push_back({folded[k].offset, len, ranks[k]});
    b.Copy({BufKind::kSend, target, off, len}, folded[k]);
    for (int r : ranks) {
      if (r != target) b.Reduce({BufKind::kSend, r, off, len}, folded[k]);
    }
    if (divisor > 0) b.Divide(folded[k], divisor);
  }
  return folded;
}

void AppendSpreadReduce(ScheduleBuilder& b, uint64_t bytes, const std::vector<int>& ranks, int target,
                        uint64_t divisor, std::vector<ScratchShare>* shares) {
  const std::vector<Region> folded = AppendSpreadFolds(b, bytes, ranks, target, divisor, shares);
  const SpreadChunks chunks(bytes, ranks.size());
  for (uint64_t k = 0; k < folded.size(); ++k) {
    b.Copy(folded[k], {BufKind::kRecv, target, chunks.span(k).first, folded[k].bytes});
  }
}

}  // namespace baton
