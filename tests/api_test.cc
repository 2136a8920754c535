// libbaton against real daemons: communicators, splits, concurrency between
// communicators and jobs, point-to-point, requests, and the errors users see.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>

#include "gpu/cuda_support.h"
#include "tests/rank_threads.h"

namespace baton::test {
namespace {

// Collects failures from rank threads; reported on the test thread.
struct Failures {
  std::mutex mu;
  std::vector<std::string> list;
  void Add(int rank, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    list.push_back("rank " + std::to_string(rank) + ": " + what);
  }
  void Report() {
    for (const auto& f : list) ADD_FAILURE() << f;
  }
};

#define RANK_EXPECT(cond, rank, failures, msg) \
  do {                                         \
    if (!(cond)) (failures).Add(rank, msg);    \
  } while (0)

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = StartCluster(2);
    ASSERT_TRUE(cluster_->status().ok()) << cluster_->status().ToString();
  }
  std::unique_ptr<LocalCluster> cluster_;
  const std::vector<int> two_by_two_{0, 0, 1, 1};
};

TEST_F(ApiTest, CommQueriesReportRankAndSize) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("query"), [&](int rank, baton_comm_t comm) {
              int r = -1, n = -1;
              baton_comm_user_rank(comm, &r);
              baton_comm_count(comm, &n);
              RANK_EXPECT(r == rank && n == 4, rank, f, "rank/size " + std::to_string(r) + "/" + std::to_string(n));
            }),
            "");
  f.Report();
}

// Without a GPU (or without CUDA in the build) the GPU entry points fail
// with a clear error, and the communicator goes on serving host buffers.
TEST_F(ApiTest, WithoutAGpuStreamCallsAndDeviceAllocationSayWhy) {
  if (gpu::GetCudaSupport().available) GTEST_SKIP() << "a GPU is present: the gpu-labelled tests cover GPU use";
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("nogpu"), [&](int rank, baton_comm_t comm) {
              void* dev = nullptr;
              baton_result_t rc = baton_comm_mem_alloc_device(comm, &dev, 4096, 0);
              std::string msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_unavailable, rank, f, "baton_comm_mem_alloc_device gave " + std::to_string(rc));
              RANK_EXPECT(msg.find("baton_comm_mem_alloc_device: baton_mem_alloc_device needs a GPU, but ") !=
                              std::string::npos,
                          rank, f, msg);
              float x[3] = {1.0f * rank, 2.0f, 3.0f};
              rc = baton_allreduce_stream(x, x, 3, baton_float32, baton_sum, comm, nullptr);
              msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_unavailable, rank, f, "baton_allreduce_stream gave " + std::to_string(rc));
              RANK_EXPECT(msg.find("allreduce on a CUDA stream: a stream-ordered operation needs a GPU, but ") !=
                              std::string::npos,
                          rank, f, msg);
              // Nothing was queued: the communicator still works, sequence intact.
              rc = baton_allreduce(x, x, 3, baton_float32, baton_sum, comm, nullptr);
              RANK_EXPECT(rc == baton_success, rank, f, baton_get_last_error(comm));
              RANK_EXPECT(x[0] == 6.0f && x[1] == 8.0f && x[2] == 12.0f, rank, f,
                          "allreduce after the refused calls gave " + std::to_string(x[0]) + " " +
                              std::to_string(x[1]) + " " + std::to_string(x[2]));
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, DaemonRendezvousAddressIsTheJobsRendezvous) {
  // Both daemons of the cluster serve the rendezvous of node 0 (--rendezvous
  // on the others); a client learns it from its own daemon.
  for (int node = 0; node < 2; ++node) {
    ASSERT_EQ(::setenv("BATON_SOCKET", cluster_->socket(node).c_str(), 1), 0);
    char address[128];
    ASSERT_EQ(baton_get_daemon_rendezvous(address, sizeof address), baton_success) << baton_get_last_error(nullptr);
    EXPECT_EQ(std::string(address), cluster_->rendezvous()) << "node " << node;
    char tiny[4];
    EXPECT_EQ(baton_get_daemon_rendezvous(tiny, sizeof tiny), baton_invalid_argument);
    EXPECT_NE(std::string(baton_get_last_error(nullptr)).find("too small"), std::string::npos)
        << baton_get_last_error(nullptr);
  }
  ::unsetenv("BATON_SOCKET");
}

TEST_F(ApiTest, SplitByParityFormsTwoCommunicatorsOrderedByKey) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("split"), [&](int rank, baton_comm_t comm) {
              baton_comm_t sub = nullptr;
              // Key reverses the order inside each color.
              if (baton_comm_split(comm, rank % 2, -rank, &sub) != baton_success) {
                return f.Add(rank, std::string("split failed: ") + baton_get_last_error(comm));
              }
              int r = -1, n = -1;
              baton_comm_user_rank(sub, &r);
              baton_comm_count(sub, &n);
              // Color 0: ranks {0,2} -> keys {0,-2} -> order 2,0. Color 1: {1,3} -> order 3,1.
              const int want_rank = rank >= 2 ? 0 : 1;
              RANK_EXPECT(n == 2 && r == want_rank, rank, f, "sub rank/size " + std::to_string(r) + "/" +
                                                                 std::to_string(n));
              int32_t v = rank + 1;
              int32_t sum = 0;
              if (baton_allreduce(&v, &sum, 1, baton_int32, baton_sum, sub, nullptr) != baton_success) {
                return f.Add(rank, std::string("sub allreduce: ") + baton_get_last_error(sub));
              }
              const int32_t want = rank % 2 == 0 ? 1 + 3 : 2 + 4;
              RANK_EXPECT(sum == want, rank, f, "sum " + std::to_string(sum));
              // The parent still works after the split.
              int32_t total = 0;
              baton_allreduce(&v, &total, 1, baton_int32, baton_sum, comm, nullptr);
              RANK_EXPECT(total == 10, rank, f, "parent sum " + std::to_string(total));
              baton_comm_destroy(sub);
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, SplitWithNoColorReturnsNull) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("nocolor"), [&](int rank, baton_comm_t comm) {
              baton_comm_t sub = reinterpret_cast<baton_comm_t>(1);
              const int color = rank == 0 ? BATON_SPLIT_NOCOLOR : 7;
              RANK_EXPECT(baton_comm_split(comm, color, 0, &sub) == baton_success, rank, f, baton_get_last_error(comm));
              if (rank == 0) {
                RANK_EXPECT(sub == nullptr, rank, f, "expected NULL communicator");
                return;
              }
              int n = 0;
              baton_comm_count(sub, &n);
              RANK_EXPECT(n == 3, rank, f, "size " + std::to_string(n));
              baton_barrier(sub, nullptr);
              baton_comm_destroy(sub);
            }),
            "");
  f.Report();
}

// Two jobs, and two communicators within one of them, running collectives
// at the same time on the same daemons: every result must be its own.
TEST_F(ApiTest, ConcurrentCommunicatorsAndJobsDoNotInterfere) {
  Failures f;
  auto job = [&](const std::string& name, int32_t base) {
    return RunRanks(*cluster_, two_by_two_, UniqueJob(name), [&, base](int rank, baton_comm_t comm) {
      baton_comm_t halves = nullptr;
      baton_comm_split(comm, rank / 2, rank, &halves);
      std::vector<int32_t> a(4099), b(4099), out_a(4099), out_b(4099);
      for (int iter = 0; iter < 30; ++iter) {
        for (size_t i = 0; i < a.size(); ++i) {
          a[i] = base + rank + static_cast<int32_t>(i) + iter;
          b[i] = base * 2 + rank;
        }
        baton_request_t ra = nullptr, rb = nullptr;
        baton_allreduce(a.data(), out_a.data(), a.size(), baton_int32, baton_sum, comm, &ra);
        baton_allreduce(b.data(), out_b.data(), b.size(), baton_int32, baton_max, halves, &rb);
        if (baton_wait(ra, -1) != baton_success || baton_wait(rb, -1) != baton_success) {
          return f.Add(rank, std::string("wait: ") + baton_get_last_error(comm));
        }
        for (size_t i = 0; i < a.size(); ++i) {
          const int32_t want_a = 4 * (base + static_cast<int32_t>(i) + iter) + 0 + 1 + 2 + 3;
          const int32_t want_b = base * 2 + (rank / 2 == 0 ? 1 : 3);
          if (out_a[i] != want_a || out_b[i] != want_b) {
            return f.Add(rank, "iteration " + std::to_string(iter) + " element " + std::to_string(i) + ": " +
                                   std::to_string(out_a[i]) + "/" + std::to_string(out_b[i]));
          }
        }
      }
      baton_comm_destroy(halves);
    });
  };
  std::string e1, e2;
  std::thread j1([&] { e1 = job("jobA", 1000); });
  std::thread j2([&] { e2 = job("jobB", -50000); });
  j1.join();
  j2.join();
  EXPECT_EQ(e1, "");
  EXPECT_EQ(e2, "");
  f.Report();
}

TEST_F(ApiTest, SendRecvMatchesInOrderWithinAndAcrossNodes) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("p2p"), [&](int rank, baton_comm_t comm) {
              // Every rank sends three messages of different sizes to every other rank.
              std::vector<std::vector<int64_t>> sends, recvs;
              std::vector<baton_request_t> reqs;
              for (int peer = 0; peer < 4; ++peer) {
                for (int k = 0; k < 3; ++k) {
                  const size_t n = 1 + 1000 * k + peer;
                  sends.emplace_back(n);
                  for (size_t i = 0; i < n; ++i) sends.back()[i] = rank * 1000000 + peer * 1000 + k * 100 + i;
                  baton_request_t r;
                  baton_send(sends.back().data(), n, baton_int64, peer, comm, &r);
                  reqs.push_back(r);
                }
              }
              for (int peer = 0; peer < 4; ++peer) {
                for (int k = 0; k < 3; ++k) {
                  recvs.emplace_back(1 + 1000 * k + rank, -1);
                  baton_request_t r;
                  baton_recv(recvs.back().data(), recvs.back().size(), baton_int64, peer, comm, &r);
                  reqs.push_back(r);
                }
              }
              for (auto r : reqs) {
                if (baton_wait(r, -1) != baton_success) return f.Add(rank, baton_get_last_error(comm));
              }
              for (int peer = 0; peer < 4; ++peer) {
                for (int k = 0; k < 3; ++k) {
                  const auto& got = recvs[peer * 3 + k];
                  for (size_t i = 0; i < got.size(); ++i) {
                    const int64_t want = peer * 1000000 + rank * 1000 + k * 100 + static_cast<int64_t>(i);
                    if (got[i] != want) {
                      return f.Add(rank, "from " + std::to_string(peer) + " msg " + std::to_string(k) + " elem " +
                                             std::to_string(i) + " = " + std::to_string(got[i]));
                    }
                  }
                }
              }
            }),
            "");
  f.Report();
}

TEST(P2pBuffer, SenderFarAheadOfItsReceiverFailsTheCommunicatorNamingIt) {
  // Node 1 buffers at most 64 KiB of messages nobody has asked for yet; rank
  // 0 sends 128 KiB to rank 1, which has posted no receive.
  auto cluster = StartCluster(2, {"--max-p2p-buffer", "64K"});
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  std::atomic<bool> link_failed{false};
  std::string sender_error;
  std::string receiver_error;
  baton_result_t receiver_code = baton_success;
  ASSERT_EQ(RunRanks(*cluster, {0, 1}, UniqueJob("p2pcap"), [&](int rank, baton_comm_t comm) {
              std::vector<char> big(128 << 10, 7);
              if (rank == 0) {
                // Rank 1 waits for this flag on every path out of this block,
                // including a failed assertion.
                struct ReleaseReceiver {
                  std::atomic<bool>& flag;
                  ~ReleaseReceiver() { flag = true; }
                } release{link_failed};
                // Node 1 drops the link as soon as it sees the message's header,
                // so this send may itself fail if the drop overtakes the last
                // bytes; otherwise one of the next sends fails (bounded wait).
                if (baton_send(big.data(), big.size(), baton_uint8, 1, comm, nullptr) != baton_success) {
                  sender_error = baton_get_last_error(comm);
                  return;
                }
                for (int i = 0; i < 500; ++i) {
                  char one = 1;
                  if (baton_send(&one, 1, baton_uint8, 1, comm, nullptr) != baton_success) {
                    sender_error = baton_get_last_error(comm);
                    break;
                  }
                  std::this_thread::sleep_for(std::chrono::milliseconds(10));
                }
              } else {
                while (!link_failed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
                receiver_code = baton_recv(big.data(), big.size(), baton_uint8, 0, comm, nullptr);
                receiver_error = baton_get_last_error(comm);
              }
            }),
            "");
  EXPECT_NE(sender_error.find("node n1"), std::string::npos)
      << "rank 0's sends kept succeeding after node 1 failed the link, or the error does not name it: " << sender_error;
  EXPECT_EQ(receiver_code, baton_resource_exhausted) << receiver_error;
  EXPECT_NE(receiver_error.find("rank 0 on node n0 sent rank 1 a 131072-byte message"), std::string::npos)
      << receiver_error;
  EXPECT_NE(receiver_error.find("--max-p2p-buffer 65536"), std::string::npos) << receiver_error;
}

TEST_F(ApiTest, GroupedBlockingSendRecvDoesNotDeadlock) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("group"), [&](int rank, baton_comm_t comm) {
              std::vector<float> out(100000, static_cast<float>(rank)), in(100000, -1);
              const int next = (rank + 1) % 4, prev = (rank + 3) % 4;
              baton_group_start();
              baton_send(out.data(), out.size(), baton_float32, next, comm, nullptr);
              baton_recv(in.data(), in.size(), baton_float32, prev, comm, nullptr);
              if (baton_group_end() != baton_success) return f.Add(rank, baton_get_last_error(comm));
              RANK_EXPECT(in[0] == prev && in.back() == prev, rank, f, "got " + std::to_string(in[0]));
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, RecvSizeMismatchIsAnErrorNamingBothRanks) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("p2psize"), [&](int rank, baton_comm_t comm) {
              std::vector<int32_t> buf(64, 0);
              if (rank == 1) baton_send(buf.data(), 10, baton_int32, 0, comm, nullptr);  // same node as 0
              if (rank == 3) baton_send(buf.data(), 10, baton_int32, 0, comm, nullptr);  // other node
              if (rank != 0) return;
              baton_result_t rc = baton_recv(buf.data(), 12, baton_int32, 1, comm, nullptr);
              std::string msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_invalid_argument, rank, f, "local rc " + std::to_string(rc));
              RANK_EXPECT(msg.find("rank 1") != std::string::npos && msg.find("10 x int32") != std::string::npos, rank, f,
                          "local message: " + msg);
              rc = baton_recv(buf.data(), 12, baton_int32, 3, comm, nullptr);
              msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_invalid_argument, rank, f, "remote rc " + std::to_string(rc));
              RANK_EXPECT(msg.find("rank 3") != std::string::npos && msg.find("10 x int32") != std::string::npos, rank, f,
                          "remote message: " + msg);
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, WaitWithTimeoutReportsInProgressThenCompletes) {
  Failures f;
  std::atomic<bool> first_waited{false};
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("wait"), [&](int rank, baton_comm_t comm) {
              int32_t v = 1, sum = 0;
              if (rank == 3) {
                // Join late: rank 0's request cannot complete before we do.
                while (!first_waited) std::this_thread::sleep_for(std::chrono::milliseconds(5));
              }
              baton_request_t req = nullptr;
              baton_allreduce(&v, &sum, 1, baton_int32, baton_sum, comm, &req);
              if (rank == 0) {
                int done = 1;
                baton_test(req, &done);
                RANK_EXPECT(done == 0, rank, f, "test said done before rank 3 arrived");
                RANK_EXPECT(baton_wait(req, 20) == baton_in_progress, rank, f, "wait(20 ms) did not time out");
                first_waited = true;
              }
              RANK_EXPECT(baton_wait(req, -1) == baton_success, rank, f, baton_get_last_error(comm));
              RANK_EXPECT(sum == 4, rank, f, "sum " + std::to_string(sum));
            }),
            "");
  f.Report();
}

// batond's worker takes submissions straight from the rings while it polls
// (the clients then skip the doorbell) and hands that back to the doorbell
// when it stops (daemon/submission_source.h). Pauses spread over 0-250 us
// land submissions before, during and just after each 100 us polling window:
// a submission lost in the handover would hang this test (and fail it at
// the timeout); every result is checked. One rank per node, so that no
// other rank's doorbell rescues a lost submission.
TEST_F(ApiTest, SubmissionsAroundTheEndOfTheDaemonsPollingAreNeverLost) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, {0, 1}, UniqueJob("handover"), [&](int rank, baton_comm_t comm) {
              uint32_t state = 12345u + static_cast<uint32_t>(rank) * 7919u;
              for (int i = 0; i < 1500; ++i) {
                state = state * 1664525u + 1013904223u;
                std::this_thread::sleep_for(std::chrono::microseconds((state >> 8) % 250));
                int32_t in[3] = {rank + i, 2 * rank, i};
                int32_t out[3] = {0, 0, 0};
                if (baton_allreduce(in, out, 3, baton_int32, baton_sum, comm, nullptr) != baton_success) {
                  f.Add(rank, "op " + std::to_string(i) + ": " + baton_get_last_error(comm));
                  return;
                }
                const int32_t want[3] = {1 + 2 * i, 2, 2 * i};
                for (int e = 0; e < 3; ++e) {
                  if (out[e] != want[e]) {
                    f.Add(rank, "op " + std::to_string(i) + " element " + std::to_string(e) + ": " +
                                    std::to_string(out[e]) + ", want " + std::to_string(want[e]));
                    return;
                  }
                }
              }
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, MismatchedCollectivesAreReportedOnEveryRank) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("mismatch"), [&](int rank, baton_comm_t comm) {
              std::vector<float> buf(16, 1.0f);
              // Rank 1 uses a different count than the others (same node as rank 0).
              const size_t count = rank == 1 ? 8 : 16;
              baton_result_t rc = baton_allreduce(buf.data(), buf.data(), count, baton_float32, baton_sum, comm, nullptr);
              std::string msg = baton_get_last_error(comm);
              // Ranks on node 0 see both calls; ranks on node 1 learn it from the failed exchange.
              RANK_EXPECT(rc != baton_success, rank, f, "mismatched allreduce succeeded");
              if (rank < 2) {
                RANK_EXPECT(rc == baton_mismatch, rank, f, "rc " + std::to_string(rc) + ": " + msg);
                RANK_EXPECT(msg.find("rank 1 called allreduce(count=8") != std::string::npos &&
                                msg.find("count=16") != std::string::npos,
                            rank, f, "message: " + msg);
              }
              // The communicator is now failed: later calls fail fast.
              rc = baton_allreduce(buf.data(), buf.data(), 16, baton_float32, baton_sum, comm, nullptr);
              RANK_EXPECT(rc != baton_success, rank, f, "call after failure succeeded");
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, CrossNodeMismatchIsDetectedFromTheMessageHeader) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("xmismatch"), [&](int rank, baton_comm_t comm) {
              std::vector<int32_t> buf(64, 1);
              // Node 0's ranks call allreduce, node 1's ranks broadcast: each node agrees locally.
              baton_result_t rc = rank < 2
                                      ? baton_allreduce(buf.data(), buf.data(), 64, baton_int32, baton_sum, comm, nullptr)
                                      : baton_broadcast(buf.data(), buf.data(), 64, baton_int32, 0, comm, nullptr);
              std::string msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_mismatch || rc == baton_remote_error || rc == baton_aborted, rank, f,
                          "rc " + std::to_string(rc) + ": " + msg);
              if (rc == baton_mismatch) {
                RANK_EXPECT(msg.find("broadcast(count=64") != std::string::npos &&
                                msg.find("allreduce(count=64") != std::string::npos,
                            rank, f, "message: " + msg);
              }
            }),
            "");
  f.Report();
}

TEST_F(ApiTest, InvalidArgumentsAreRejectedWithMessages) {
  Failures f;
  ASSERT_EQ(RunRanks(*cluster_, two_by_two_, UniqueJob("args"), [&](int rank, baton_comm_t comm) {
              float x = 0;
              baton_result_t rc = baton_broadcast(&x, &x, 1, baton_float32, 9, comm, nullptr);
              std::string msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_invalid_argument && msg.find("root 9") != std::string::npos, rank, f, msg);
              rc = baton_allreduce(&x, &x, 1, static_cast<baton_datatype_t>(42), baton_sum, comm, nullptr);
              msg = baton_get_last_error(comm);
              RANK_EXPECT(rc == baton_invalid_argument && msg.find("datatype 42") != std::string::npos, rank, f, msg);
              rc = baton_allreduce(nullptr, &x, 1, baton_float32, baton_sum, comm, nullptr);
              RANK_EXPECT(rc == baton_invalid_argument, rank, f, "NULL send buffer accepted");
              // The communicator is still usable after rejected calls.
              float one = 1, sum = 0;
              rc = baton_allreduce(&one, &sum, 1, baton_float32, baton_sum, comm, nullptr);
              RANK_EXPECT(rc == baton_success && sum == 4.0f, rank, f, baton_get_last_error(comm));
            }),
            "");
  f.Report();
}

TEST(Rendezvous, TimeoutListsTheMissingRanks) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  baton_comm_t comm = nullptr;
  // Only rank 1 of 4 ever arrives.
  baton_result_t rc = InitRank(*cluster, 0, UniqueJob("rdv"), 4, 1, &comm, /*timeout_seconds=*/1);
  std::string msg = baton_get_last_error(nullptr);
  EXPECT_EQ(rc, baton_timeout) << msg;
  EXPECT_NE(msg.find("ranks 0,2,3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 of 4 joined"), std::string::npos) << msg;
}

TEST(Rendezvous, NoDaemonIsAClearError) {
  baton_config_t cfg = BATON_CONFIG_INITIALIZER;
  cfg.job_id = "nodaemon";
  cfg.daemon_socket = "/tmp/baton-no-such-daemon.sock";
  baton_comm_t comm = nullptr;
  baton_result_t rc = baton_comm_init_config(&comm, 2, 0, &cfg);
  std::string msg = baton_get_last_error(nullptr);
  EXPECT_EQ(rc, baton_unavailable);
  EXPECT_NE(msg.find("cannot reach batond at /tmp/baton-no-such-daemon.sock"), std::string::npos) << msg;
}


TEST(Quota, AllocationBeyondThePerClientLimitIsRefusedClearly) {
  auto cluster = StartCluster(1, {"--max-client-memory", "1M"});
  ASSERT_TRUE(cluster->status().ok());
  std::string err = RunRanks(*cluster, {0}, UniqueJob("quota"), [](int, baton_comm_t comm) {
    void* a = nullptr;
    void* b = nullptr;
    ASSERT_EQ(baton_comm_mem_alloc(comm, &a, 768 << 10), baton_success) << baton_get_last_error(comm);
    baton_result_t rc = baton_comm_mem_alloc(comm, &b, 512 << 10);
    std::string msg = baton_get_last_error(comm);
    EXPECT_EQ(rc, baton_resource_exhausted) << msg;
    EXPECT_NE(msg.find("limit of 1048576 bytes (786432 in use)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--max-client-memory"), std::string::npos) << msg;
    // Freeing makes room again.
    ASSERT_EQ(baton_mem_free(a), baton_success);
    ASSERT_EQ(baton_comm_mem_alloc(comm, &b, 512 << 10), baton_success) << baton_get_last_error(comm);
    baton_mem_free(b);
  });
  EXPECT_EQ(err, "");
}

}  // namespace
}  // namespace baton::test
