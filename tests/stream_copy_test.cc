// StreamCopy (collectives/stream_copy.h) copies exactly what memcpy does, at
// every alignment of source and destination and every length around the
// 16-byte stores and 64-byte lines it works in.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "collectives/stream_copy.h"

namespace baton {
namespace {

TEST(StreamCopy, MatchesMemcpyAtEveryAlignmentAndLength) {
  constexpr size_t kMax = 4096 + 200;
  std::vector<uint8_t> src(kMax + 64), got(kMax + 64), want(kMax + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  const size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4096, 4096 + 77, kMax};
  for (size_t src_off = 0; src_off < 16; ++src_off) {
    for (size_t dst_off = 0; dst_off < 16; ++dst_off) {
      for (size_t len : lengths) {
        std::fill(got.begin(), got.end(), 0xAB);
        std::fill(want.begin(), want.end(), 0xAB);
        std::memcpy(want.data() + dst_off, src.data() + src_off, len);
        StreamCopy(got.data() + dst_off, src.data() + src_off, len);
        StreamFence();
        ASSERT_EQ(got, want) << "source offset " << src_off << ", destination offset " << dst_off << ", " << len
                             << " bytes (the bytes around the copy must be untouched too)";
      }
    }
  }
}

}  // namespace
}  // namespace baton
