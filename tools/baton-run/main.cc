// baton-run: a one-machine launcher. Starts N daemons (simulated nodes) and
// R ranks per node, wires up their environment, forwards their output with
// rank prefixes, and cleans everything up.
//
//   baton-run --nodes 2 --ranks-per-node 2 -- build/bin/baton-bench allreduce
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tools/launcher/local_cluster.h"
#include "tools/launcher/netns.h"

extern char** environ;

namespace {

const char* kUsage = R"(usage: baton-run [options] -- PROGRAM [ARGS...]

Runs PROGRAM as every rank of a Baton job on this machine: starts one batond
per simulated node, then ranks-per-node copies of PROGRAM attached to each.

options:
  --nodes N            simulated nodes, one daemon each (default 1)
  --ranks-per-node R   ranks attached to each daemon (default 1)
  --job ID             job id (default: baton-run-<pid>)
  --batond PATH        daemon binary (default: batond next to baton-run)
  --daemon-arg ARG     extra argument for every batond (repeatable)
  --grace SECONDS      after a rank fails, how long the others get to exit
                       on their own before they are killed (default 30)
  --no-bind            let every process run on any CPU. By default, with at
                       least as many CPUs as nodes, each simulated node (its
                       daemon and its ranks) runs on its own equal share of
                       the CPUs, as a real node's processes run on its cores
  --netns              run each daemon in its own network namespace (own
                       address, links that can be cut); needs root
  --keep               keep the working directory (daemon logs) afterwards
  --help               this text

Each rank gets BATON_RANK, BATON_WORLD_SIZE, BATON_LOCAL_RANK,
BATON_LOCAL_SIZE, BATON_NODE_RANK, BATON_SOCKET, BATON_RENDEZVOUS,
BATON_JOB_ID and BATON_JOB_SECRET, and, as torchrun sets them for
torch.distributed's env:// rendezvous, RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT (a free local
port) unless they are already set. The exit status is 0 only if every rank
exited 0 and every daemon survived.
)";

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  std::string out_buf;
  std::string err_buf;
  int status = -1;
};

std::string SelfDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : p.parent_path().string();
}

// RANK=, WORLD_SIZE=, ...: set per rank below, never inherited.
bool IsPerRankTorchVariable(const char* entry) {
  for (const char* name : {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "GROUP_RANK="}) {
    if (std::strncmp(entry, name, std::strlen(name)) == 0) return true;
  }
  return false;
}

// A TCP port that was free a moment ago (for torch's store on rank 0).
int FreeLocalPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::string RandomSecret() {
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

// Writes complete lines of `buf` with the rank prefix; keeps the partial tail.
void FlushLines(std::string& buf, int rank, FILE* out, bool all) {
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::fprintf(out, "[rank %d] %.*s\n", rank, static_cast<int>(nl - start), buf.data() + start);
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    std::fprintf(out, "[rank %d] %s\n", rank, buf.c_str());
    buf.clear();
  }
  std::fflush(out);
}

volatile sig_atomic_t g_interrupted = 0;
void OnSignal(int) { g_interrupted = 1; }

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1;
  int per_node = 1;
  double grace = 30;
  bool keep = false;
  bool netns = false;
  bool bind = true;
  std::string job = "baton-run-" + std::to_string(::getpid());
  std::string batond = SelfDir() + "/batond";
  std::vector<std::string> daemon_args;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "baton-run: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--nodes") {
      nodes = std::atoi(value().c_str());
    } else if (a == "--ranks-per-node") {
      per_node = std::atoi(value().c_str());
    } else if (a == "--job") {
      job = value();
    } else if (a == "--batond") {
      batond = value();
    } else if (a == "--daemon-arg") {
      daemon_args.push_back(value());
    } else if (a == "--grace") {
      grace = std::atof(value().c_str());
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--netns") {
      netns = true;
    } else if (a == "--no-bind") {
      bind = false;
    } else {
      std::fprintf(stderr, "baton-run: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "baton-run: no program given (baton-run [options] -- PROGRAM ARGS...)\n");
    return 2;
  }
  if (nodes < 1 || per_node < 1 || nodes * per_node > 4096) {
    std::fprintf(stderr, "baton-run: --nodes and --ranks-per-node must be >= 1 (and at most 4096 ranks)\n");
    return 2;
  }
  if (keep) ::setenv("BATON_KEEP_TEST_DIR", "1", 1);
  ::signal(SIGINT, OnSignal);
  ::signal(SIGTERM, OnSignal);
  ::signal(SIGPIPE, SIG_IGN);

  baton::launcher::NetnsSet namespaces;
  std::vector<baton::launcher::NodeLaunch> launch;
  if (netns) {
    baton::Status st = namespaces.Create(nodes);
    if (!st.ok()) {
      std::fprintf(stderr, "baton-run: --netns: %s\n", st.message().c_str());
      return 1;
    }
    for (int n = 0; n < nodes; ++n) launch.push_back({namespaces.ExecPrefix(n), namespaces.address(n), {}});
  }
  // Why bind: simulated nodes sharing every CPU run each other's threads.
  // Two nodes' communicator workers taking turns on one core while their
  // ranks poll on the other make an 8 B AllReduce across them 1.6x slower,
  // depending only on where the scheduler happened to put them
  // (docs/benchmarks.md). A single node keeps every CPU.
  const std::vector<std::vector<int>> node_cpus =
      bind && nodes > 1 ? baton::launcher::SplitCpus(nodes) : std::vector<std::vector<int>>{};
  if (!node_cpus.empty()) {
    launch.resize(static_cast<size_t>(nodes));
    for (int n = 0; n < nodes; ++n) launch[n].cpus = node_cpus[n];
  }
  baton::launcher::LocalCluster cluster(batond, nodes, daemon_args, launch);
  if (!cluster.status().ok()) {
    std::fprintf(stderr, "baton-run: starting daemons failed: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  const int world = nodes * per_node;
  const std::string secret = RandomSecret();
  const std::string master_port = std::to_string(FreeLocalPort());
  std::vector<Rank> ranks(world);
  for (int n = 0; n < nodes; ++n) {
    for (int l = 0; l < per_node; ++l) {
      Rank& r = ranks[n * per_node + l];
      r.rank = n * per_node + l;
      std::vector<std::string> env;
      for (char** e = environ; *e; ++e) {
        if (IsPerRankTorchVariable(*e)) continue;
        if (std::strncmp(*e, "BATON_", 6) != 0 || std::strncmp(*e, "BATON_DEBUG", 11) == 0 ||
            std::strncmp(*e, "BATON_ALGO", 10) == 0 || std::strncmp(*e, "BATON_TIMEOUT", 13) == 0) {
          env.emplace_back(*e);
        }
      }
      env.push_back("BATON_RANK=" + std::to_string(r.rank));
      env.push_back("BATON_WORLD_SIZE=" + std::to_string(world));
      env.push_back("BATON_LOCAL_RANK=" + std::to_string(l));
      env.push_back("BATON_LOCAL_SIZE=" + std::to_string(per_node));
      env.push_back("BATON_NODE_RANK=" + std::to_string(n));
      env.push_back("BATON_SOCKET=" + cluster.socket(n));
      env.push_back("BATON_RENDEZVOUS=" + cluster.rendezvous());
      env.push_back("BATON_JOB_ID=" + job);
      env.push_back("BATON_JOB_SECRET=" + secret);
      // torchrun's variables, so that torch.distributed's env:// works as is.
      // The per-rank ones replace any inherited value; the store address is
      // kept if the caller chose one.
      env.push_back("RANK=" + std::to_string(r.rank));
      env.push_back("WORLD_SIZE=" + std::to_string(world));
      env.push_back("LOCAL_RANK=" + std::to_string(l));
      env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(per_node));
      env.push_back("GROUP_RANK=" + std::to_string(n));
      if (std::getenv("MASTER_ADDR") == nullptr) env.push_back("MASTER_ADDR=127.0.0.1");
      if (std::getenv("MASTER_PORT") == nullptr) env.push_back("MASTER_PORT=" + master_port);
      std::vector<char*> envp;
      for (auto& e : env) envp.push_back(e.data());
      envp.push_back(nullptr);
      int out[2];
      int err[2];
      if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
        std::perror("baton-run: pipe");
        return 1;
      }
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_adddup2(&fa, out[1], 1);
      posix_spawn_file_actions_adddup2(&fa, err[1], 2);
      // The rank inherits this thread's CPUs: narrow them for the spawn.
      if (!node_cpus.empty()) baton::launcher::BindThisThread(node_cpus[n]);
      int rc = posix_spawnp(&r.pid, argv[i], &fa, nullptr, argv + i, envp.data());
      if (!node_cpus.empty()) baton::launcher::BindThisThread({});
      posix_spawn_file_actions_destroy(&fa);
      ::close(out[1]);
      ::close(err[1]);
      if (rc != 0) {
        std::fprintf(stderr, "baton-run: cannot start %s: %s\n", argv[i], std::strerror(rc));
        return 1;
      }
      r.out_fd = out[0];
      r.err_fd = err[0];
    }
  }

  // Forward output and reap ranks.
  int running = world;
  int failures = 0;
  auto first_failure = std::chrono::steady_clock::time_point::max();
  bool killed = false;
  auto pipes_open = [&] {
    for (const auto& r : ranks) {
      if (r.out_fd >= 0 || r.err_fd >= 0) return true;
    }
    return false;
  };
  // Until every rank is reaped and its output forwarded (a rank's leftover
  // child holding the pipe open gets two seconds, not forever).
  auto all_reaped = std::chrono::steady_clock::time_point::max();
  while (running > 0 || (pipes_open() && std::chrono::steady_clock::now() - all_reaped < std::chrono::seconds(2))) {
    if (running == 0 && all_reaped == std::chrono::steady_clock::time_point::max()) {
      all_reaped = std::chrono::steady_clock::now();
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> owners;  // (rank index, is_err)
    for (int r = 0; r < world; ++r) {
      if (ranks[r].out_fd >= 0) {
        fds.push_back({ranks[r].out_fd, POLLIN, 0});
        owners.push_back({r, false});
      }
      if (ranks[r].err_fd >= 0) {
        fds.push_back({ranks[r].err_fd, POLLIN, 0});
        owners.push_back({r, true});
      }
    }
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Rank& r = ranks[owners[k].first];
      const bool is_err = owners[k].second;
      char buf[65536];
      ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      std::string& acc = is_err ? r.err_buf : r.out_buf;
      if (n > 0) {
        acc.append(buf, static_cast<size_t>(n));
        FlushLines(acc, r.rank, is_err ? stderr : stdout, false);
      } else {
        FlushLines(acc, r.rank, is_err ? stderr : stdout, true);
        ::close(fds[k].fd);
        (is_err ? r.err_fd : r.out_fd) = -1;
      }
    }
    for (auto& r : ranks) {
      if (r.pid <= 0 || r.status != -1) continue;
      int st = 0;
      if (::waitpid(r.pid, &st, WNOHANG) == r.pid) {
        r.status = st;
        --running;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
          ++failures;
          if (failures == 1) first_failure = std::chrono::steady_clock::now();
          if (WIFSIGNALED(st)) {
            std::fprintf(stderr, "baton-run: rank %d killed by signal %d\n", r.rank, WTERMSIG(st));
          } else {
            std::fprintf(stderr, "baton-run: rank %d exited with status %d\n", r.rank, WEXITSTATUS(st));
          }
        }
      }
    }
    for (int n = 0; n < nodes; ++n) {
      if (!cluster.Alive(n) && failures == 0) {
        std::fprintf(stderr, "baton-run: daemon of node %d died (log: %s/node%d.log)\n", n, cluster.dir().c_str(), n);
        ++failures;
        first_failure = std::chrono::steady_clock::now();
      }
    }
    const bool grace_over = failures > 0 && std::chrono::steady_clock::now() - first_failure >
                                                std::chrono::duration<double>(grace);
    if ((grace_over || g_interrupted) && !killed) {
      for (auto& r : ranks) {
        if (r.status == -1 && r.pid > 0) ::kill(r.pid, SIGKILL);
      }
      killed = true;
      if (g_interrupted) ++failures;
    }
  }
  if (failures > 0) {
    std::fprintf(stderr, "baton-run: %d failure(s); daemon logs in %s%s\n", failures, cluster.dir().c_str(),
                 keep ? "" : " (removed; use --keep to keep them)");
    return 1;
  }
  return 0;
}
