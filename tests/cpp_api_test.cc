// The C++ header: RAII and exceptions over the C API, against real daemons.
#include <gtest/gtest.h>

#include <vector>

#include "baton/baton.hpp"
#include "tests/rank_threads.h"

namespace baton::test {
namespace {

TEST(CppApi, AllReduceSplitAndErrorsAsExceptions) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<std::string> failures(4);
  std::string err = RunRanks(*cluster, {0, 0, 1, 1}, UniqueJob("cpp"), [&](int rank, baton_comm_t raw) {
    baton::Communicator comm(raw);  // adopts: destroys at scope end
    try {
      std::vector<double> v(1000, rank + 0.5);
      comm.AllReduce(std::span<double>(v));
      if (v[999] != 0.5 + 1.5 + 2.5 + 3.5) failures[rank] = "allreduce " + std::to_string(v[999]);
      std::vector<int32_t> in(3, rank), out(3, -1);
      auto req = comm.AllReduceAsync(std::span<const int32_t>(in), std::span<int32_t>(out), baton_max);
      req.Wait();
      if (out[0] != 3) failures[rank] += " async max " + std::to_string(out[0]);
      baton::Communicator half = comm.Split(rank / 2, rank);
      if (half.size() != 2 || half.rank() != rank % 2) failures[rank] += " split";
      try {
        std::vector<float> x(4);
        comm.Broadcast(std::span<float>(x), 17);
        failures[rank] += " no exception for root 17";
      } catch (const baton::Error& e) {
        if (e.code() != baton_invalid_argument || std::string(e.what()).find("root 17") == std::string::npos) {
          failures[rank] += std::string(" wrong error: ") + e.what();
        }
      }
    } catch (const baton::Error& e) {
      failures[rank] = e.what();
    }
  }, 60, /*destroy=*/false);
  ASSERT_EQ(err, "");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

}  // namespace
}  // namespace baton::test
