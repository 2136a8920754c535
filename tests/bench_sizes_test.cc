// The benchmarks' sizes and bus bandwidth factors (tools/bench_support):
// nccl-tests' definitions, and a row's count consistent with the buffers
// the API expects for it.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/types.h"
#include "tools/bench_support/sizes.h"

namespace baton::bench {
namespace {

TEST(BenchSizes, ARowOfEveryRanksBlocksCountsOneRanksShare) {
  // 4 ranks, 1 MiB of float32: AllGather's count is what each rank sends.
  EXPECT_EQ(CountForSize(Collective::kAllGather, 1 << 20, 4, 4), 65536u);
  EXPECT_EQ(CountForSize(Collective::kReduceScatter, 1 << 20, 4, 4), 65536u);
  EXPECT_EQ(CountForSize(Collective::kAllToAll, 1 << 20, 4, 4), 65536u);
  EXPECT_EQ(CountForSize(Collective::kGather, 1 << 20, 4, 4), 65536u);
  EXPECT_EQ(CountForSize(Collective::kScatter, 1 << 20, 4, 4), 65536u);
  // The others send and receive the whole vector.
  EXPECT_EQ(CountForSize(Collective::kAllReduce, 1 << 20, 4, 4), 262144u);
  EXPECT_EQ(CountForSize(Collective::kBroadcast, 1 << 20, 4, 4), 262144u);
  EXPECT_EQ(CountForSize(Collective::kReduce, 1 << 20, 4, 4), 262144u);
  // Rounded down, to nothing when a rank's share is less than an element.
  EXPECT_EQ(CountForSize(Collective::kAllGather, 12, 4, 4), 0u);
  EXPECT_EQ(CountForSize(Collective::kAllReduce, 7, 2, 4), 3u);
}

TEST(BenchSizes, TheSizeIsTheLargerBufferTheAPIExpects) {
  const int world = 3;
  for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce, Collective::kAllGather,
                       Collective::kReduceScatter, Collective::kScatter, Collective::kGather, Collective::kAllToAll}) {
    for (uint64_t count : {1u, 5u, 1000u}) {
      BufferExtents largest;
      for (int rank = 0; rank < world; ++rank) {
        BufferExtents e;
        ASSERT_TRUE(ComputeExtents(c, count, world, rank, 0, &e));
        largest.send_elems = std::max(largest.send_elems, e.send_elems);
        largest.recv_elems = std::max(largest.recv_elems, e.recv_elems);
      }
      const uint64_t size = SizeOfCount(c, count, 8, world);
      EXPECT_EQ(size, std::max(largest.send_elems, largest.recv_elems) * 8) << CollectiveName(c) << " " << count;
      EXPECT_EQ(CountForSize(c, size, 8, world), count) << CollectiveName(c);
    }
  }
}

TEST(BenchSizes, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kBroadcast, 4), 1);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduce, 4), 1);
  // One rank moves nothing over a bus; the factor then leaves algbw as it is.
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 1), 1);
}

}  // namespace
}  // namespace baton::bench
