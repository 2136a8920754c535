// SpreadChunks: a vector cut into one chunk per local rank, for the shapes
// that spread a node's work over its ranks' GPUs (spread_allreduce.h,
// spread_copy_out.h): chunk k is local rank k's to fold or to fetch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace baton {

// Chunk boundaries fall on multiples of this many bytes: a multiple of every
// element size, and of the 16 bytes a vectorised kernel loads at once.
inline constexpr uint64_t kSpreadChunkAlignBytes = 256;

class SpreadChunks {
 public:
  // `bytes` cut into `n` chunks (n >= 1) on kSpreadChunkAlignBytes
  // boundaries; the chunks at the end of a short vector are empty.
  SpreadChunks(uint64_t bytes, uint64_t n) : bytes_(bytes) {
    chunk_ = (bytes_ + n - 1) / n;
    chunk_ = (chunk_ + kSpreadChunkAlignBytes - 1) / kSpreadChunkAlignBytes * kSpreadChunkAlignBytes;
  }
  // Chunk k's (offset, bytes).
  std::pair<uint64_t, uint64_t> span(uint64_t k) const {
    const uint64_t off = std::min(bytes_, k * chunk_);
    return {off, std::min(chunk_, bytes_ - off)};
  }

 private:
  uint64_t bytes_;
  uint64_t chunk_ = 0;
};

}  // namespace baton
