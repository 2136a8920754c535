// Isolation between local users and per-user limits. A job belongs to the
// uid whose client created it on a daemon; a client of another uid is
// refused unless the daemon's policy allows it. The clients run as other
// users (test_rank with BATON_TEST_UID), so these tests need root.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/rank_threads.h"

namespace baton::test {
namespace {

constexpr uid_t kAlice = 60001;
constexpr uid_t kBob = 60002;

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};

struct Result {
  int exit_code = -1;
  std::string err;
};

// Starts test_rank as `uid` on node 0 of `cluster`. `extra` adds environment.
Child Spawn(const LocalCluster& cluster, uid_t uid, const std::string& mode, const std::vector<std::string>& extra) {
  std::vector<std::string> env = {"BATON_SOCKET=" + cluster.socket(0), "BATON_RENDEZVOUS=" + cluster.rendezvous(),
                                  "BATON_TEST_UID=" + std::to_string(uid), "BATON_TIMEOUT=30",
                                  "PATH=/usr/bin:/bin"};
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int out[2];
  int err[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::string bin = BATON_TEST_RANK_PATH;
  std::string m = mode;
  char* argv[] = {bin.data(), m.data(), nullptr};
  Child c;
  EXPECT_EQ(posix_spawn(&c.pid, bin.c_str(), &fa, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  c.out_fd = out[0];
  c.err_fd = err[0];
  return c;
}

std::string ReadAll(int fd) {
  std::string s;
  char buf[512];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<size_t>(n));
  return s;
}

// Blocks until the child printed its first line ("ready"), or exited.
std::string FirstLine(const Child& c) { return baton::test::FirstLine(c.out_fd); }

Result Finish(Child& c, bool kill_first = false) {
  if (kill_first) ::kill(c.pid, SIGKILL);
  Result r;
  r.err = ReadAll(c.err_fd);
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  ::close(c.out_fd);
  ::close(c.err_fd);
  return r;
}

std::vector<std::string> JobEnv(const std::string& job, const std::string& comm, int world, int rank) {
  return {"BATON_JOB_ID=" + job, "BATON_TEST_COMM=" + comm, "BATON_WORLD_SIZE=" + std::to_string(world),
          "BATON_RANK=" + std::to_string(rank)};
}

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run test clients as two other users";
  }
  std::unique_ptr<LocalCluster> Start(std::vector<std::string> args = {}) {
    auto cluster = StartCluster(1, std::move(args));
    EXPECT_TRUE(cluster->status().ok()) << cluster->status().ToString();
    // The cluster's folder is private (mkdtemp); the users need to reach the socket.
    ::chmod(cluster->dir().c_str(), 0755);
    return cluster;
  }
  // Alice creates `job` (a one-rank communicator "a") and keeps it.
  Child AliceHolds(const LocalCluster& cluster, const std::string& job) {
    Child alice = Spawn(cluster, kAlice, "hang", JobEnv(job, "a", 1, 0));
    EXPECT_EQ(FirstLine(alice), "ready");
    return alice;
  }
};

TEST_F(IsolationTest, AnotherUsersClientIsRefusedByCodeAndMessage) {
  auto cluster = Start();
  const std::string job = UniqueJob("owned");
  Child alice = AliceHolds(*cluster, job);
  Child bob = Spawn(*cluster, kBob, "allreduce", JobEnv(job, "b", 1, 0));
  Result r = Finish(bob);
  EXPECT_EQ(r.exit_code, 10 + baton_permission_denied) << r.err;
  EXPECT_NE(r.err.find("job '" + job + "' belongs to uid 60001"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("uid 60002"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("allow-users"), std::string::npos) << r.err;

  // Alice's other processes may join her job.
  Child alice2 = Spawn(*cluster, kAlice, "allreduce", JobEnv(job, "c", 1, 0));
  Result a2 = Finish(alice2);
  EXPECT_EQ(a2.exit_code, 0) << a2.err;

  // The job is hers only while her clients hold it: once they are gone,
  // Bob may create a job of that name. (Session teardown is asynchronous,
  // so Bob retries for a while.)
  Finish(alice, /*kill_first=*/true);
  Result later;
  for (int attempt = 0; attempt < 50; ++attempt) {
    Child b = Spawn(*cluster, kBob, "allreduce", JobEnv(job, "b", 1, 0));
    later = Finish(b);
    if (later.exit_code != 10 + baton_permission_denied) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(later.exit_code, 0) << later.err;
}

TEST_F(IsolationTest, AllowedUsersAndGroupsMayJoinOthersJobs) {
  for (const std::vector<std::string>& policy :
       {std::vector<std::string>{"--allow-users", "60002"}, std::vector<std::string>{"--allow-groups", "60002"}}) {
    auto cluster = Start(policy);
    const std::string job = UniqueJob("shared");
    Child alice = AliceHolds(*cluster, job);
    Child bob = Spawn(*cluster, kBob, "allreduce", JobEnv(job, "b", 1, 0));
    Result r = Finish(bob);
    EXPECT_EQ(r.exit_code, 0) << policy[0] << ": " << r.err;
    Finish(alice, /*kill_first=*/true);
  }
}

TEST_F(IsolationTest, RootMayJoinAnyJob) {
  auto cluster = Start();
  const std::string job = UniqueJob("root");
  Child alice = AliceHolds(*cluster, job);
  baton_comm_t comm = nullptr;
  EXPECT_EQ(InitRank(*cluster, 0, job, 1, 0, &comm, 60, "root"), baton_success) << baton_get_last_error(nullptr);
  if (comm) baton_comm_destroy(comm);
  Finish(alice, /*kill_first=*/true);
}

TEST_F(IsolationTest, UserMemoryLimitCoversAllOfTheUsersProcesses) {
  // Each process may hold 8 MiB, but the user only 12 MiB in all.
  auto cluster = Start({"--max-client-memory", "8M", "--max-user-memory", "12M"});
  Child first = Spawn(*cluster, kAlice, "alloc", {"BATON_TEST_ALLOC=" + std::to_string(8 << 20)});
  ASSERT_EQ(FirstLine(first), "ready");
  Child second = Spawn(*cluster, kAlice, "alloc", {"BATON_TEST_ALLOC=" + std::to_string(8 << 20)});
  EXPECT_EQ(FirstLine(second), "");  // it exits instead
  Result r = Finish(second);
  EXPECT_EQ(r.exit_code, 10 + baton_resource_exhausted) << r.err;
  EXPECT_NE(r.err.find("uid 60001's shared-memory limit of 12582912 bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-user-memory"), std::string::npos) << r.err;
  // Another user is not affected.
  Child bob = Spawn(*cluster, kBob, "alloc", {"BATON_TEST_ALLOC=" + std::to_string(8 << 20)});
  EXPECT_EQ(FirstLine(bob), "ready");
  Finish(bob, /*kill_first=*/true);
  // When the first process exits, its memory returns to the user's budget.
  Finish(first, /*kill_first=*/true);
  Result again;
  for (int attempt = 0; attempt < 50; ++attempt) {
    Child c = Spawn(*cluster, kAlice, "alloc", {"BATON_TEST_ALLOC=" + std::to_string(8 << 20)});
    if (FirstLine(c) == "ready") {
      again = Finish(c, /*kill_first=*/true);
      again.exit_code = 0;
      break;
    }
    again = Finish(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST_F(IsolationTest, PerUserLimitsOnClientsAndCommunicators) {
  {
    // One client process per user: Alice's second is refused, Bob's first is not.
    auto cluster = Start({"--max-user-clients", "1"});
    Child first = AliceHolds(*cluster, UniqueJob("clients"));
    Child second = Spawn(*cluster, kAlice, "allreduce", JobEnv(UniqueJob("clients2"), "a", 1, 0));
    Result r = Finish(second);
    EXPECT_EQ(r.exit_code, 10 + baton_resource_exhausted) << r.err;
    EXPECT_NE(r.err.find("uid 60001 already has 1 client processes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--max-user-clients"), std::string::npos) << r.err;
    Child bob = Spawn(*cluster, kBob, "allreduce", JobEnv(UniqueJob("bob"), "b", 1, 0));
    EXPECT_EQ(Finish(bob).exit_code, 0);
    Finish(first, /*kill_first=*/true);
  }
  {
    // Two communicators per user, across processes.
    auto cluster = Start({"--max-user-comms", "2"});
    Child a = AliceHolds(*cluster, UniqueJob("c1"));
    Child b = AliceHolds(*cluster, UniqueJob("c2"));
    Child c = Spawn(*cluster, kAlice, "allreduce", JobEnv(UniqueJob("c3"), "a", 1, 0));
    Result r = Finish(c);
    EXPECT_EQ(r.exit_code, 10 + baton_resource_exhausted) << r.err;
    EXPECT_NE(r.err.find("uid 60001 already holds or is joining 2 communicators"), std::string::npos) << r.err;
    // When one holder goes, its communicator no longer counts.
    Finish(a, /*kill_first=*/true);
    Result again;
    for (int attempt = 0; attempt < 50; ++attempt) {
      Child d = Spawn(*cluster, kAlice, "allreduce", JobEnv(UniqueJob("c4"), "a", 1, 0));
      again = Finish(d);
      if (again.exit_code == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(again.exit_code, 0) << again.err;
    Finish(b, /*kill_first=*/true);
  }
}

TEST(JobSecret, AJoinWithAWrongSecretIsRefusedAndTheJobGoesOn) {
  // Rank 0 joins with the job's secret; an impostor claims rank 1 from the
  // other node with another secret; then the real rank 1 joins.
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  const std::string job = UniqueJob("secret");
  Outcome rank0;
  std::thread first([&] {
    baton_comm_t comm = nullptr;
    ASSERT_EQ(InitRank(*cluster, 0, job, 2, 0, &comm, 30, nullptr, "the-right-secret"), baton_success)
        << baton_get_last_error(nullptr);
    rank0 = TimedAllReduce(comm);
    baton_comm_destroy(comm);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // rank 0 is waiting in rendezvous
  baton_comm_t impostor = nullptr;
  EXPECT_EQ(InitRank(*cluster, 1, job, 2, 1, &impostor, 30, nullptr, "a-guess"), baton_permission_denied);
  const std::string refused = baton_get_last_error(nullptr);
  EXPECT_NE(refused.find("rank 1 presented a different job secret"), std::string::npos) << refused;
  EXPECT_EQ(impostor, nullptr);
  // The job is unaffected: the real rank 1 joins and the collective runs.
  baton_comm_t comm = nullptr;
  ASSERT_EQ(InitRank(*cluster, 1, job, 2, 1, &comm, 30, nullptr, "the-right-secret"), baton_success)
      << baton_get_last_error(nullptr);
  Outcome rank1 = TimedAllReduce(comm);
  baton_comm_destroy(comm);
  first.join();
  EXPECT_EQ(rank0.code, baton_success) << rank0.message;
  EXPECT_EQ(rank1.code, baton_success) << rank1.message;
}

TEST(Limits, CommunicatorsPerClientAreLimitedWithAClearError) {
  auto cluster = StartCluster(1, {"--max-client-comms", "2"});
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  const std::string job = UniqueJob("comms");
  std::vector<baton_comm_t> comms;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "c" + std::to_string(i);
    baton_comm_t comm = nullptr;
    const baton_result_t r = InitRank(*cluster, 0, job, 1, 0, &comm, 60, name.c_str());
    if (i < 2) {
      EXPECT_EQ(r, baton_success) << baton_get_last_error(nullptr);
      comms.push_back(comm);
    } else {
      EXPECT_EQ(r, baton_resource_exhausted);
      const std::string msg = baton_get_last_error(nullptr);
      EXPECT_NE(msg.find("--max-client-comms 2"), std::string::npos) << msg;
    }
  }
  // Destroying one makes room again.
  baton_comm_destroy(comms.back());
  comms.pop_back();
  baton_comm_t comm = nullptr;
  EXPECT_EQ(InitRank(*cluster, 0, job, 1, 0, &comm, 60, "again"), baton_success) << baton_get_last_error(nullptr);
  if (comm) comms.push_back(comm);
  for (baton_comm_t x : comms) baton_comm_destroy(x);
}

}  // namespace
}  // namespace baton::test
