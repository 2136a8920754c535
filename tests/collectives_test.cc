// The correctness matrix against real daemons: every collective x data type
// x reduction x count x in-place, on several node layouts, checked element
// by element against tests/reference.h. Ranks are threads of this process,
// each talking to the daemon of its simulated node.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

#include "tests/collective_call.h"
#include "tests/rank_threads.h"
#include "collectives/reference.h"

namespace baton::test {
namespace {
using namespace baton::reference;

struct Layout {
  const char* name;
  int nodes;
  std::vector<int> node_of_rank;
  std::vector<std::string> daemon_args = {};
};

const Layout kLayouts[] = {
    {"1node_x4", 1, {0, 0, 0, 0}},  // small blocking calls take the fast path (up to 16 KiB)
    // The same small calls through batond, and more of them in shared memory
    // among an odd number of ranks.
    {"1node_x4_via_daemon", 1, {0, 0, 0, 0}, {"--fast-path-max-bytes", "0"}},
    {"1node_x3_fast_path_64K", 1, {0, 0, 0}, {"--fast-path-max-bytes", "64K"}},
    {"2nodes_x2", 2, {0, 0, 1, 1}, {"--sockets-per-peer", "1"}},  // one lane; the others use the default (2)
    {"3nodes_uneven", 3, {0, 1, 1, 2, 2, 2}},
    // Large messages striped over 3 connections per peer (uneven stripes:
    // 2^20 floats do not split in 3 at 4 KiB boundaries evenly).
    {"2nodes_x2_3sockets", 2, {0, 0, 1, 1}, {"--sockets-per-peer", "3"}},
};

const Collective kCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                                   Collective::kAllGather, Collective::kReduceScatter, Collective::kScatter,
                                   Collective::kGather, Collective::kAllToAll};

// Every rank runs the same list of signatures in the same order.
std::vector<OpSignature> Matrix(int world) {
  std::vector<OpSignature> out;
  for (Collective c : kCollectives) {
    for (uint32_t t = 0; t < kNumDataTypes; ++t) {
      for (uint32_t o = 0; o < kNumRedOps; ++o) {
        if (!IsReduction(c) && o > 0) break;
        for (uint64_t count : {0ull, 1ull, 7ull, 1027ull}) {
          out.push_back({c, static_cast<DataType>(t), static_cast<RedOp>(o), HasRoot(c) ? world - 1 : -1, count});
        }
      }
    }
    // Large vectors (2^20 elements): float32, and the 1- and 2-byte types.
    for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16, DataType::kInt8}) {
      out.push_back({c, t, IsReduction(c) ? RedOp::kMax : RedOp::kSum, HasRoot(c) ? 0 : -1, 1u << 20});
    }
    out.push_back({c, DataType::kFloat32, RedOp::kSum, HasRoot(c) ? 0 : -1, 1u << 20});
  }
  return out;
}

class CollectivesTest : public ::testing::TestWithParam<size_t> {};

TEST_P(CollectivesTest, MatrixMatchesReferenceElementByElement) {
  const Layout& layout = kLayouts[GetParam()];
  auto cluster_ptr = StartCluster(layout.nodes, layout.daemon_args);
  LocalCluster& cluster = *cluster_ptr;
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  const int world = static_cast<int>(layout.node_of_rank.size());
  const auto ops = Matrix(world);
  std::mutex mu;
  std::vector<std::string> failures;
  std::string err = RunRanks(cluster, layout.node_of_rank, UniqueJob("matrix"), [&](int rank, baton_comm_t comm) {
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpSignature& sig = ops[i];
      for (bool in_place : {false, true}) {
        // Odd ops use shared memory from baton_mem_alloc, even ones plain heap memory (staged).
        const bool registered = i % 2 == 1;
        const auto& [sends, want, send_bytes, recv_bytes, cap] = MakeRankCase(sig, world, rank);
        uint8_t* sbuf = nullptr;
        uint8_t* rbuf = nullptr;
        std::vector<uint8_t> heap_s;
        std::vector<uint8_t> heap_r;
        if (registered) {
          if (baton_comm_mem_alloc(comm, reinterpret_cast<void**>(&sbuf), cap) != baton_success ||
              baton_comm_mem_alloc(comm, reinterpret_cast<void**>(&rbuf), cap) != baton_success) {
            std::lock_guard<std::mutex> lock(mu);
            failures.push_back(std::string("baton_comm_mem_alloc failed: ") + baton_get_last_error(comm));
            return;
          }
        } else {
          heap_s.resize(cap);
          heap_r.resize(cap);
          sbuf = heap_s.data();
          rbuf = heap_r.data();
        }
        std::memset(rbuf, 0xCD, cap);
        const CallArguments args = PlaceArguments(sig, rank, in_place, sbuf, rbuf, send_bytes, recv_bytes);
        if (send_bytes) std::memcpy(args.input, sends[rank].data(), send_bytes);
        baton_result_t rc = CallCollective(sig, args.send, args.recv, comm);
        std::string problem;
        if (rc != baton_success) {
          problem = std::string("failed: ") + baton_get_last_error(comm);
        } else if (recv_bytes > 0) {
          Bytes got(args.recv, args.recv + recv_bytes);
          std::string msg;
          if (FirstMismatch(sig.dtype, got, want, &msg) >= 0) problem = msg;
        }
        if (registered) {
          baton_mem_free(sbuf);
          baton_mem_free(rbuf);
        }
        if (!problem.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back("rank " + std::to_string(rank) + " " + sig.ToString() + (in_place ? " in-place" : "") +
                             (registered ? " registered" : " staged") + ": " + problem);
          return;  // later ops would only cascade
        }
      }
    }
  });
  ASSERT_EQ(err, "");
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// Daemons configured with different --sockets-per-peer (BATON_NSOCKS) agree
// on the smallest, and striped messages arrive intact.
TEST(Striping, NodesUseTheSmallestSocketsPerPeerAndResultsMatch) {
  auto cluster = StartCluster(2, {},
                              {{{"/usr/bin/env", "BATON_NSOCKS=4"}, "127.0.0.1", {}},
                               {{"/usr/bin/env", "BATON_NSOCKS=2"}, "127.0.0.1", {}}});
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  constexpr size_t kCount = (3 << 20) / 4 + 5;  // ~3 MiB, not a multiple of a stripe
  std::vector<std::vector<float>> results(2);
  std::string err = RunRanks(*cluster, {0, 1}, UniqueJob("stripes"), [&](int rank, baton_comm_t comm) {
    std::vector<float> v(kCount);
    for (size_t i = 0; i < kCount; ++i) v[i] = static_cast<float>((i % 1000) * (rank + 1));
    if (baton_allreduce(v.data(), v.data(), kCount, baton_float32, baton_sum, comm, nullptr) != baton_success) {
      ADD_FAILURE() << baton_get_last_error(comm);
    }
    results[rank] = std::move(v);
  });
  ASSERT_EQ(err, "");
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(results[r].size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      if (results[r][i] != static_cast<float>((i % 1000) * 3)) {
        ADD_FAILURE() << "rank " << r << " element " << i << ": " << results[r][i];
        break;
      }
    }
  }
  for (int node = 0; node < 2; ++node) {
    std::ifstream log(cluster->dir() + "/node" + std::to_string(node) + ".log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("2 connection(s) per peer node for collective data"), std::string::npos)
        << "node " << node << " log:\n" << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, CollectivesTest, ::testing::Range<size_t>(0, std::size(kLayouts)),
                         [](const auto& info) { return std::string(kLayouts[info.param].name); });

}  // namespace
}  // namespace baton::test
