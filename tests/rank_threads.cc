#include "tests/rank_threads.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace baton::test {

std::string TestProgram(const char* name, const char* built_path) {
  const char* dir = std::getenv("BATON_TEST_BIN_DIR");
  if (dir == nullptr || *dir == '\0') return built_path;
  return std::string(dir) + "/" + name;
}

std::unique_ptr<LocalCluster> StartCluster(int nodes, std::vector<std::string> extra_args,
                                           std::vector<launcher::NodeLaunch> launch) {
  return std::make_unique<LocalCluster>(TestProgram("batond", BATON_BATOND_PATH), nodes, std::move(extra_args),
                                        std::move(launch));
}

baton_result_t InitRank(const LocalCluster& cluster, int node, const std::string& job, int world, int rank,
                        baton_comm_t* comm, double timeout_seconds, const char* name, const char* secret) {
  baton_config_t cfg = BATON_CONFIG_INITIALIZER;
  cfg.job_id = job.c_str();
  cfg.name = name;
  cfg.secret = secret;
  cfg.daemon_socket = cluster.socket(node).c_str();
  cfg.rendezvous = cluster.rendezvous().c_str();
  cfg.timeout_seconds = timeout_seconds;
  return baton_comm_init_config(comm, world, rank, &cfg);
}

Outcome TimedAllReduce(baton_comm_t comm) {
  float x = 1;
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o;
  o.code = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.message = baton_get_last_error(comm);
  return o;
}

std::string UniqueJob(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

std::string Batonctl(const std::string& args, int* rc) {
  const std::string cmd = TestProgram("batonctl", BATONCTL_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    if (rc) *rc = -1;
    return "popen failed for: " + cmd;
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  if (rc) *rc = WEXITSTATUS(status);
  return out;
}

std::string RunRanks(const LocalCluster& cluster, const std::vector<int>& node_of_rank, const std::string& job,
                     const std::function<void(int, baton_comm_t)>& body, double timeout_seconds, bool destroy) {
  const int world = static_cast<int>(node_of_rank.size());
  std::mutex mu;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      baton_comm_t comm = nullptr;
      baton_result_t rc = InitRank(cluster, node_of_rank[r], job, world, r, &comm, timeout_seconds);
      if (rc != baton_success) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) first_error = "rank " + std::to_string(r) + ": " + baton_get_last_error(nullptr);
        return;
      }
      body(r, comm);
      if (destroy) baton_comm_destroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  return first_error;
}

pid_t SpawnRank(const LocalCluster& cluster, int node, const std::string& job, int world, int rank, const char* mode,
                UniqueFd* stdout_pipe) {
  std::vector<std::string> env = {"BATON_SOCKET=" + cluster.socket(node), "BATON_RENDEZVOUS=" + cluster.rendezvous(),
                                  "BATON_JOB_ID=" + job, "BATON_WORLD_SIZE=" + std::to_string(world),
                                  "BATON_RANK=" + std::to_string(rank), "PATH=/usr/bin:/bin"};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string bin = TestProgram("baton_test_rank", BATON_TEST_RANK_PATH);
  std::string m = mode;
  char* argv[] = {bin.data(), m.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  UniqueFd write_end;
  if (stdout_pipe != nullptr) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);  // dup2 in the child clears CLOEXEC on its stdout
    stdout_pipe->reset(fds[0]);
    write_end.reset(fds[1]);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  }
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

std::string FirstLine(int fd) {
  std::string line;
  char ch;
  while (::read(fd, &ch, 1) == 1 && ch != '\n') line += ch;
  return line;
}

}  // namespace baton::test
