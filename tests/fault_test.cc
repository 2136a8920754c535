// Faults with real processes: a rank that dies mid-collective fails its
// communicator on every rank, with a message naming it, instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/rank_threads.h"

extern char** environ;

namespace baton::test {
namespace {

pid_t SpawnRank(const LocalCluster& cluster, int node, const std::string& job, int world, int rank, const char* mode) {
  std::vector<std::string> env = {"BATON_SOCKET=" + cluster.socket(node), "BATON_RENDEZVOUS=" + cluster.rendezvous(),
                                  "BATON_JOB_ID=" + job, "BATON_WORLD_SIZE=" + std::to_string(world),
                                  "BATON_RANK=" + std::to_string(rank), "PATH=/usr/bin:/bin"};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string bin = BATON_TEST_RANK_PATH;
  std::string m = mode;
  char* argv[] = {bin.data(), m.data(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, bin.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  return pid;
}

TEST(Faults, RankKilledMidCollectiveFailsTheOthersWithItsName) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  const std::string job = UniqueJob("kill");
  // Rank 1 is a separate process on node 0; ranks 0 (node 0) and 2 (node 1) are threads here.
  pid_t victim = SpawnRank(*cluster, 0, job, 3, 1, "hang");
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(victim, SIGKILL);
  });
  std::vector<std::string> messages(3);
  std::vector<baton_result_t> codes(3, baton_success);
  std::vector<double> seconds(3, 0);
  // Run ranks 0 and 2 only: rank 1 is the spawned process.
  std::vector<std::thread> ranks;
  for (int r : {0, 2}) {
    ranks.emplace_back([&, r] {
      baton_comm_t comm = nullptr;
      ASSERT_EQ(InitRank(*cluster, r == 0 ? 0 : 1, job, 3, r, &comm), baton_success) << baton_get_last_error(nullptr);
      float x = 1;
      const auto t0 = std::chrono::steady_clock::now();
      codes[r] = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr);
      seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      messages[r] = baton_get_last_error(comm);
      baton_comm_destroy(comm);
    });
  }
  for (auto& t : ranks) t.join();
  killer.join();
  ::waitpid(victim, nullptr, 0);
  // The rank on the dead process's node hears exactly who died.
  EXPECT_EQ(codes[0], baton_remote_error) << messages[0];
  EXPECT_NE(messages[0].find("rank 1 of communicator 'world'"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("pid " + std::to_string(victim)), std::string::npos) << messages[0];
  // The rank on the other node gets the same diagnosis (coordinated abort).
  EXPECT_EQ(codes[2], baton_remote_error) << messages[2];
  EXPECT_NE(messages[2].find("rank 1 of communicator 'world'"), std::string::npos) << messages[2];
  EXPECT_NE(messages[2].find("on node n0"), std::string::npos) << messages[2];
  // Within seconds, not after a watchdog.
  EXPECT_LT(seconds[0], 30.0);
  EXPECT_LT(seconds[2], 30.0);
  EXPECT_TRUE(cluster->Alive(0));
  EXPECT_TRUE(cluster->Alive(1));
}

TEST(Faults, RankExitingWithoutDestroyFailsTheNextCollective) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  const std::string job = UniqueJob("exit");
  pid_t quitter = SpawnRank(*cluster, 0, job, 2, 1, "exit");
  baton_comm_t comm = nullptr;
  ASSERT_EQ(InitRank(*cluster, 0, job, 2, 0, &comm), baton_success) << baton_get_last_error(nullptr);
  int status = 0;
  ::waitpid(quitter, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  float x = 1;
  baton_result_t rc = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr);
  std::string msg = baton_get_last_error(comm);
  EXPECT_EQ(rc, baton_remote_error) << msg;
  EXPECT_NE(msg.find("without destroying the communicator"), std::string::npos) << msg;
  baton_comm_destroy(comm);
}


TEST(Faults, RankThatNeverCallsTimesOutTheOthersNamingIt) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<baton_result_t> codes(3, baton_success);
  std::vector<std::string> messages(3);
  std::vector<double> seconds(3, 0);
  std::atomic<int> finished{0};
  std::string err = RunRanks(*cluster, {0, 0, 1}, UniqueJob("late"), [&](int rank, baton_comm_t comm) {
    if (rank == 1) {  // never calls the collective; leaves once the others gave up
      while (finished < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    float x = 1;
    const auto t0 = std::chrono::steady_clock::now();
    codes[rank] = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr);
    seconds[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    messages[rank] = baton_get_last_error(comm);
    ++finished;
  }, /*timeout_seconds=*/2);
  ASSERT_EQ(err, "");
  EXPECT_EQ(codes[0], baton_timeout) << messages[0];
  EXPECT_NE(messages[0].find("rank 1 on node n0 did not call it"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("allreduce(count=1"), std::string::npos) << messages[0];
  EXPECT_NE(codes[2], baton_success) << messages[2];
  for (int r : {0, 2}) EXPECT_LT(seconds[r], 2.0 + 5.0) << "rank " << r;
}


// The local daemon dies while a rank waits: the wait ends with an error, not never.
TEST(Faults, LocalDaemonDeathEndsTheWait) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  baton_result_t code = baton_success;
  std::string message;
  double seconds = 0;
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("localdeath"), [&](int rank, baton_comm_t comm) {
    if (rank == 1) {  // never calls; kills the daemon instead
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cluster->Kill(0);
      return;
    }
    float x = 1;
    const auto t0 = std::chrono::steady_clock::now();
    code = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    message = baton_get_last_error(comm);
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(code, baton_unavailable) << message;
  EXPECT_NE(message.find("closed the connection while this operation was in flight"), std::string::npos) << message;
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace baton::test
