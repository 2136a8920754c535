// The small-message fast path (client/src/fast_path.h): blocking collectives
// of ranks on one node run among the ranks in shared memory. The matrix in
// collectives_test.cc checks its results; these tests check what happens
// when the ranks do not all come: who is named, and that nobody waits for
// ever.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/rank_threads.h"

namespace baton::test {
namespace {

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A rank that arrives long after the other (which has gone to sleep on
// the futex by then) wakes it, and both get the right sum.
TEST(FastPath, ALateRankWakesTheOneAsleepAndBothGetTheSum) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<std::vector<int64_t>> got(2);
  ASSERT_EQ(RunRanks(*cluster, {0, 0}, UniqueJob("fp-late"), [&](int rank, baton_comm_t comm) {
              if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
              std::vector<int64_t> v = {rank + 1, 10 * (rank + 1), -rank};
              got[rank].resize(3);
              ASSERT_EQ(baton_allreduce(v.data(), got[rank].data(), 3, baton_int64, baton_sum, comm, nullptr),
                        baton_success)
                  << baton_get_last_error(comm);
            }),
            "");
  for (const auto& g : got) EXPECT_EQ(g, (std::vector<int64_t>{3, 30, -1}));
}

TEST(FastPath, MismatchedCallsFailEveryRankSayingWhoCalledWhat) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<Outcome> out(2), next(2);
  ASSERT_EQ(RunRanks(*cluster, {0, 0}, UniqueJob("fp-mismatch"), [&](int rank, baton_comm_t comm) {
              float x[4] = {1, 2, 3, 4};
              out[rank].code = rank == 0 ? baton_allreduce(x, x, 4, baton_float32, baton_sum, comm, nullptr)
                                         : baton_broadcast(x, x, 4, baton_float32, 0, comm, nullptr);
              out[rank].message = baton_get_last_error(comm);
              next[rank].code = baton_barrier(comm, nullptr);
              next[rank].message = baton_get_last_error(comm);
            }),
            "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].code, baton_mismatch) << out[r].message;
    EXPECT_TRUE(Contains(out[r].message, "rank 0 called allreduce(count=4, dtype=float32, op=sum)")) << out[r].message;
    EXPECT_TRUE(Contains(out[r].message, "rank 1 called broadcast(count=4, dtype=float32, root=0)")) << out[r].message;
    // The communicator is failed from then on.
    EXPECT_EQ(next[r].code, baton_aborted) << next[r].message;
    EXPECT_TRUE(Contains(next[r].message, "the communicator failed earlier")) << next[r].message;
  }
}

// One rank calls the blocking form, the other a request: they take
// different paths. The blocking rank notices and both get a mismatch
// rather than waiting for the timeout.
TEST(FastPath, BlockingAgainstNonBlockingIsAMismatchOnBothRanks) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<Outcome> out(2);
  ASSERT_EQ(RunRanks(
                *cluster, {0, 0}, UniqueJob("fp-kinds"),
                [&](int rank, baton_comm_t comm) {
                  float x[4] = {1, 2, 3, 4};
                  if (rank == 0) {
                    out[rank].code = baton_allreduce(x, x, 4, baton_float32, baton_sum, comm, nullptr);
                  } else {
                    baton_request_t req = nullptr;
                    out[rank].code = baton_allreduce(x, x, 4, baton_float32, baton_sum, comm, &req);
                    if (out[rank].code == baton_success) out[rank].code = baton_wait(req, -1);
                  }
                  out[rank].message = baton_get_last_error(comm);
                },
                /*timeout_seconds=*/20),
            "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].code, baton_mismatch) << "rank " << r << ": " << out[r].message;
    EXPECT_TRUE(Contains(out[r].message, "rank 1 sent a collective to batond where rank 0 called "
                                         "allreduce(count=4, dtype=float32, op=sum)"))
        << out[r].message;
    EXPECT_TRUE(Contains(out[r].message, "a blocking call matches only blocking calls")) << out[r].message;
  }
}

TEST(FastPath, ARankThatNeverCallsIsNamedAndTheLateOneHearsWhy) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<Outcome> out(2);
  std::atomic<bool> first_done{false};
  ASSERT_EQ(RunRanks(
                *cluster, {0, 0}, UniqueJob("fp-timeout"),
                [&](int rank, baton_comm_t comm) {
                  if (rank == 1) {
                    while (!first_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
                  }
                  out[rank] = TimedAllReduce(comm);
                  if (rank == 0) first_done = true;
                },
                /*timeout_seconds=*/1),
            "");
  EXPECT_EQ(out[0].code, baton_timeout) << out[0].message;
  EXPECT_TRUE(Contains(out[0].message, "allreduce(count=1, dtype=float32, op=sum) on communicator 'world' of job"))
      << out[0].message;
  EXPECT_TRUE(Contains(out[0].message, "rank 1 did not call it within 1.0 s")) << out[0].message;
  // batond failed the communicator on rank 0's report: rank 1 gets the reason.
  EXPECT_EQ(out[1].code, baton_timeout) << out[1].message;
  EXPECT_TRUE(Contains(out[1].message, "rank 1 did not call it within 1.0 s")) << out[1].message;
}

TEST(FastPath, APeerThatDestroysTheCommunicatorEndsTheWait) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  Outcome waiting;
  ASSERT_EQ(RunRanks(
                *cluster, {0, 0}, UniqueJob("fp-destroy"),
                [&](int rank, baton_comm_t comm) {
                  if (rank == 1) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(200));
                    baton_comm_destroy(comm);
                    return;
                  }
                  waiting = TimedAllReduce(comm);
                  baton_comm_destroy(comm);
                },
                /*timeout_seconds=*/20, /*destroy=*/false),
            "");
  EXPECT_EQ(waiting.code, baton_aborted) << waiting.message;
  EXPECT_TRUE(Contains(waiting.message, "rank 1 destroyed communicator 'world' of job")) << waiting.message;
  EXPECT_TRUE(Contains(waiting.message, "without calling this collective")) << waiting.message;
}

TEST(FastPath, BarrierWaitsForTheLastRank) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::atomic<bool> late_rank_was_here{false};
  std::array<std::atomic<bool>, 3> saw_it{};  // not vector<bool>: its elements share words
  ASSERT_EQ(RunRanks(*cluster, {0, 0, 0}, UniqueJob("fp-barrier"), [&](int rank, baton_comm_t comm) {
              if (rank == 2) {
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                late_rank_was_here = true;
              }
              ASSERT_EQ(baton_barrier(comm, nullptr), baton_success) << baton_get_last_error(comm);
              saw_it[rank] = late_rank_was_here.load();
            }),
            "");
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(saw_it[r]) << "rank " << r << " left the barrier early";
}

// Every rank alternates blocking small calls (fast path), requests and
// large calls (through batond) and barriers: the two paths interleave
// without false mismatches, and every result is right.
TEST(FastPath, InterleavesWithOperationsThroughBatond) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  constexpr int kRanks = 3;
  constexpr size_t kLarge = 16384;  // 64 KiB of int32: above the 16 KiB limit
  std::vector<std::string> errors(kRanks);
  ASSERT_EQ(RunRanks(*cluster, {0, 0, 0}, UniqueJob("fp-mixed"), [&](int rank, baton_comm_t comm) {
              std::vector<int32_t> large(kLarge), large_sum(kLarge);
              for (int it = 0; it < 50 && errors[rank].empty(); ++it) {
                int32_t small[4], sum[4] = {};
                for (int i = 0; i < 4; ++i) small[i] = rank * 100 + it + i;
                const int32_t want0 = (0 + 100 + 200) + 3 * it;  // element 0 over the ranks
                auto fail = [&](const std::string& what) {
                  errors[rank] = "iteration " + std::to_string(it) + ": " + what + ": " + baton_get_last_error(comm);
                };
                if (baton_allreduce(small, sum, 4, baton_int32, baton_sum, comm, nullptr) != baton_success) {
                  return fail("blocking allreduce");
                }
                if (sum[0] != want0 || sum[3] != want0 + 9) return fail("blocking allreduce result");
                baton_request_t req = nullptr;
                std::fill(sum, sum + 4, 0);
                if (baton_allreduce(small, sum, 4, baton_int32, baton_sum, comm, &req) != baton_success ||
                    baton_wait(req, -1) != baton_success) {
                  return fail("allreduce request");
                }
                if (sum[0] != want0) return fail("allreduce request result");
                std::fill(large.begin(), large.end(), rank + it);
                if (baton_allreduce(large.data(), large_sum.data(), kLarge, baton_int32, baton_sum, comm, nullptr) !=
                    baton_success) {
                  return fail("large allreduce");
                }
                if (large_sum.front() != 3 + 3 * it || large_sum.back() != 3 + 3 * it) return fail("large result");
                if (baton_barrier(comm, nullptr) != baton_success) return fail("barrier");
              }
            }),
            "");
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// A split communicator whose ranks are on one node gets a region of its
// own: collectives on it and on the parent stay apart.
TEST(FastPath, SplitCommunicatorsHaveTheirOwn) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<std::vector<int32_t>> got(4);
  ASSERT_EQ(RunRanks(*cluster, {0, 0, 0, 0}, UniqueJob("fp-split"), [&](int rank, baton_comm_t comm) {
              baton_comm_t half = nullptr;
              ASSERT_EQ(baton_comm_split(comm, rank % 2, rank, &half), baton_success) << baton_get_last_error(comm);
              int32_t mine = rank + 1, in_half = 0, in_all = 0;
              ASSERT_EQ(baton_allreduce(&mine, &in_half, 1, baton_int32, baton_sum, half, nullptr), baton_success)
                  << baton_get_last_error(half);
              ASSERT_EQ(baton_allreduce(&mine, &in_all, 1, baton_int32, baton_sum, comm, nullptr), baton_success)
                  << baton_get_last_error(comm);
              got[rank] = {in_half, in_all};
              baton_comm_destroy(half);
            }),
            "");
  // Even ranks hold 1 and 3, odd ranks 2 and 4.
  for (int r = 0; r < 4; ++r) EXPECT_EQ(got[r], (std::vector<int32_t>{r % 2 ? 6 : 4, 10})) << "rank " << r;
}

}  // namespace
}  // namespace baton::test
