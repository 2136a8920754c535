// Faults with real processes: a rank that dies mid-collective fails its
// communicator on every rank, with a message naming it, instead of hanging.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/rank_threads.h"
#include "tools/launcher/netns.h"

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
  std::vector<Outcome> out(3);
  // Run ranks 0 and 2 only: rank 1 is the spawned process.
  std::vector<std::thread> ranks;
  for (int r : {0, 2}) {
    ranks.emplace_back([&, r] {
      baton_comm_t comm = nullptr;
      ASSERT_EQ(InitRank(*cluster, r == 0 ? 0 : 1, job, 3, r, &comm), baton_success) << baton_get_last_error(nullptr);
      out[r] = TimedAllReduce(comm);
      baton_comm_destroy(comm);
    });
  }
  for (auto& t : ranks) t.join();
  killer.join();
  ::waitpid(victim, nullptr, 0);
  // The rank on the dead process's node hears exactly who died.
  EXPECT_EQ(out[0].code, baton_remote_error) << out[0].message;
  EXPECT_NE(out[0].message.find("rank 1 of communicator 'world'"), std::string::npos) << out[0].message;
  EXPECT_NE(out[0].message.find("pid " + std::to_string(victim)), std::string::npos) << out[0].message;
  // The rank on the other node gets the same diagnosis (coordinated abort).
  EXPECT_EQ(out[2].code, baton_remote_error) << out[2].message;
  EXPECT_NE(out[2].message.find("rank 1 of communicator 'world'"), std::string::npos) << out[2].message;
  EXPECT_NE(out[2].message.find("on node n0"), std::string::npos) << out[2].message;
  // Within seconds, not after a watchdog.
  EXPECT_LT(out[0].seconds, 30.0);
  EXPECT_LT(out[2].seconds, 30.0);
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


// The local daemon dies while a rank waits: the wait ends with an error, not never.
TEST(Faults, LocalDaemonDeathEndsTheWait) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  Outcome outcome;
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("localdeath"), [&](int rank, baton_comm_t comm) {
    if (rank == 1) {  // never calls; kills the daemon instead
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cluster->Kill(0);
      return;
    }
    outcome = TimedAllReduce(comm);
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(outcome.code, baton_unavailable) << outcome.message;
  EXPECT_NE(outcome.message.find("closed the connection while this operation was in flight"), std::string::npos)
      << outcome.message;
  EXPECT_LT(outcome.seconds, 5.0);
}

TEST(Faults, CutNetworkLinkFailsTheJobOnBothSidesAndTheDaemonsServeOnAfterwards) {
  // Two daemons in their own network namespaces; the link of node 1 is cut
  // (ip link set down): no RST, packets just vanish, as with a failed switch
  // port. Heartbeats notice it.
  launcher::NetnsSet ns;
  if (Status st = ns.Create(2); !st.ok()) GTEST_SKIP() << "network namespaces unavailable: " << st.message();
  std::vector<launcher::NodeLaunch> launch;
  for (int n = 0; n < 2; ++n) launch.push_back({ns.ExecPrefix(n), ns.address(n)});
  auto cluster = StartCluster(2, {"--heartbeat", "0.2", "--peer-timeout", "2"}, launch);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();

  const std::string job = UniqueJob("cut");
  std::vector<Outcome> before(2);
  std::vector<Outcome> after(2);
  std::atomic<int> ready{0};
  const std::string init_error = RunRanks(*cluster, {0, 1}, job, [&](int rank, baton_comm_t comm) {
    before[rank] = TimedAllReduce(comm);
    // Both ranks finished the first operation before the cut.
    ++ready;
    while (ready.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (rank == 0) ASSERT_TRUE(ns.SetLink(1, false).ok());
    else std::this_thread::sleep_for(std::chrono::milliseconds(200));
    after[rank] = TimedAllReduce(comm);
  });
  ASSERT_EQ(init_error, "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(before[r].code, baton_success) << before[r].message;
    // Each side is told the other node is gone, by name.
    EXPECT_EQ(after[r].code, baton_remote_error) << "rank " << r << ": " << after[r].message;
    const std::string other = r == 0 ? "n1" : "n0";
    EXPECT_NE(after[r].message.find(other), std::string::npos) << "rank " << r << ": " << after[r].message;
  }

  // The link comes back; both daemons serve a new job.
  ASSERT_TRUE(ns.SetLink(1, true).ok());
  std::vector<Outcome> fresh(2);
  ASSERT_EQ(RunRanks(*cluster, {0, 1}, UniqueJob("after-cut"),
                     [&](int rank, baton_comm_t comm) { fresh[rank] = TimedAllReduce(comm); }),
            "");
  for (int r = 0; r < 2; ++r) EXPECT_EQ(fresh[r].code, baton_success) << fresh[r].message;
}

}  // namespace
}  // namespace baton::test
