#include "tools/launcher/local_cluster.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/cpus.h"

namespace baton::launcher {

std::vector<std::vector<int>> SplitCpus(int nodes) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (nodes < 1 || ::sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  const size_t share = cpus.size() / static_cast<size_t>(nodes);
  if (share == 0) return {};
  std::vector<std::vector<int>> shares(static_cast<size_t>(nodes));
  for (size_t n = 0; n < shares.size(); ++n) {
    shares[n].assign(cpus.begin() + static_cast<std::ptrdiff_t>(n * share),
                     cpus.begin() + static_cast<std::ptrdiff_t>((n + 1) * share));
  }
  return shares;
}

namespace {
cpu_set_t ProcessCpus() {
  // The mask this process started with, kept before any thread narrows its own.
  static const cpu_set_t all = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) CPU_SET(0, &set);
    return set;
  }();
  return all;
}
}  // namespace

bool BindThisThread(const std::vector<int>& cpus) {
  cpu_set_t set;
  if (cpus.empty()) {
    set = ProcessCpus();
  } else {  // no static state on this path: a forked child takes it
    CPU_ZERO(&set);
    for (int c : cpus) {
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    }
  }
  return ::sched_setaffinity(0, sizeof set, &set) == 0;
}

LocalCluster::LocalCluster(const std::string& batond, int nodes, std::vector<std::string> extra_args,
                           std::vector<NodeLaunch> launch)
    : batond_(batond), extra_args_(extra_args), launch_(std::move(launch)) {
  launch_.resize(static_cast<size_t>(nodes));
  char tmpl[] = "/tmp/baton-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    status_ = Status::Errno("mkdtemp", errno);
    return;
  }
  dir_ = tmpl;
  // Simulated nodes share this machine's CPUs: each daemon gets its share
  // for its reduction threads, as a real node's daemon gets the node's. A
  // daemon sized to every CPU would make its helpers compete with the other
  // daemons' threads, and a helper descheduled mid-block stalls its
  // collective for a scheduler period (measured: ~25 ms per operation).
  if (nodes > 1 && std::find(extra_args_.begin(), extra_args_.end(), "--reduce-threads") == extra_args_.end()) {
    extra_args_.push_back("--reduce-threads");
    extra_args_.push_back(std::to_string(std::max(1, UsableCpus() / nodes)));
  }
  for (int n = 0; n < nodes && status_.ok(); ++n) status_ = StartNode(n, extra_args_);
}

Status LocalCluster::StartNode(int node, const std::vector<std::string>& extra_args) {
  const std::string sock = dir_ + "/node" + std::to_string(node) + ".sock";
  const std::string ready = dir_ + "/node" + std::to_string(node) + ".ready";
  const std::string log = dir_ + "/node" + std::to_string(node) + ".log";
  const NodeLaunch& how = launch_[node];
  std::vector<std::string> args = how.prefix;
  for (const std::string& a : {batond_, std::string("--socket"), sock, std::string("--listen"), how.host + ":0",
                               std::string("--grpc"), how.host + ":0", std::string("--node-name"),
                               "n" + std::to_string(node), std::string("--ready-file"), ready}) {
    args.push_back(a);
  }
  if (node > 0) {
    args.push_back("--rendezvous");
    args.push_back(rendezvous_);
  }
  for (const auto& a : extra_args) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Errno("fork", errno);
  if (pid == 0) {
    // The daemon must not outlive us, even if we are killed: tests and
    // baton-run never leave stray daemons behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0 || ::dup2(log_fd, 2) < 0 || ::dup2(null_fd, 1) < 0) ::_exit(127);
    if (!how.cpus.empty() && !BindThisThread(how.cpus)) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (static_cast<size_t>(node) < pids_.size()) {
    pids_[node] = pid;  // a restart
  } else {
    pids_.push_back(pid);
    sockets_.push_back(sock);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!std::filesystem::exists(ready)) {
    int wstatus = 0;
    if (::waitpid(pid, &wstatus, WNOHANG) == pid) {
      pids_.back() = -1;
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return Status::Internal("batond for node " + std::to_string(node) + " exited: " + text);
    }
    if (std::chrono::steady_clock::now() > deadline) return Status::Timeout("batond did not become ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (node == 0) {
    std::ifstream in(ready);
    std::string data;
    std::string grpc;
    in >> data >> grpc;
    rendezvous_ = grpc.substr(grpc.find('=') + 1);
  }
  return Status::Ok();
}

void LocalCluster::Kill(int node) {
  if (pids_[node] > 0) {
    ::kill(pids_[node], SIGKILL);
    ::waitpid(pids_[node], nullptr, 0);
    pids_[node] = -1;
  }
}

Status LocalCluster::Restart(int node) {
  Kill(node);
  std::error_code ignored;
  std::filesystem::remove(dir_ + "/node" + std::to_string(node) + ".ready", ignored);
  return StartNode(node, extra_args_);
}

bool LocalCluster::Alive(int node) {
  if (pids_[node] <= 0) return false;
  return ::waitpid(pids_[node], nullptr, WNOHANG) == 0;
}

LocalCluster::~LocalCluster() {
  for (pid_t pid : pids_) {
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  for (pid_t& pid : pids_) {
    if (pid <= 0) continue;
    for (int i = 0; i < 200; ++i) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  if (!dir_.empty() && std::getenv("BATON_KEEP_TEST_DIR") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

}  // namespace baton::launcher
