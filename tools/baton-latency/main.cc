// baton-latency: this machine's floor for a small collective, the latency
// counterpart of baton-membw.
//   baton-latency [--iters N] [--reps N] [--json]
//
// A Baton operation across nodes crosses two processes on each node: the
// rank hands its request to batond and batond hands the result back. When a
// node's rank and daemon share one core (simulated nodes on a small VM),
// each hand-off is a context switch between two processes, and those are
// the costs this tool measures, each as the median of --reps runs:
//   - syscall_us: one system call (getppid), the unit every poll pays;
//   - yield_us: sched_yield with nothing else to run;
//   - thread_handoff_us: two threads of one process on one CPU taking turns
//     (a shared word, sched_yield while it is not ours);
//   - process_handoff_us: the same between two processes (a shared mapping),
//     which also switches address spaces, as rank <-> batond does;
//   - tcp_exchange_us: two processes on two CPUs, over TCP loopback, each
//     sending 64 bytes (Baton's 56-byte data header and 8 bytes) and
//     receiving the other's per iteration, busy-polling: the exchange a
//     2-rank AllReduce of 8 bytes is, with nothing around it;
//   - daemon_floor_us = tcp_exchange_us + 2 x process_handoff_us: no
//     implementation of a 2-node AllReduce that goes through a daemon sharing
//     each node's core can be faster (docs/benchmarks.md);
//   - composed_floor_us: that chain measured as one: a rank and a relay
//     process on each of two CPUs, the rank handing each operation to its
//     relay, the relays exchanging 64 bytes over TCP, the relay handing it
//     back, and nothing else. Its excess over the sum is what two processes
//     sharing a core cost beyond the switches (refilled caches, TLB).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);  // 0: the calling thread
}

// Median over `reps` runs of `run` (which returns seconds for `iters`
// iterations), in microseconds per iteration.
double MedianUs(int reps, int iters, const std::function<double()>& run) {
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) us.push_back(run() / iters * 1e6);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

double SyscallOnce(int iters) {
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) ::syscall(SYS_getppid);
  return Seconds(t0);
}

double YieldOnce(int iters) {
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) ::sched_yield();
  return Seconds(t0);
}

// Whoever's parity `turn` has advances it; the other yields until then. One
// iteration is one hand-off: two context switches per round trip of two.
void TakeTurns(std::atomic<uint64_t>* turn, uint64_t me, uint64_t until) {
  for (;;) {
    const uint64_t v = turn->load(std::memory_order_acquire);
    if (v >= until) return;
    if ((v & 1) == me) {
      turn->store(v + 1, std::memory_order_release);
    } else {
      ::sched_yield();
    }
  }
}

double ThreadHandoffOnce(int cpu, int iters) {
  std::atomic<uint64_t> turn{0};
  const auto until = static_cast<uint64_t>(iters);
  const auto t0 = Clock::now();
  std::thread other([&] {
    PinTo(cpu);
    TakeTurns(&turn, 1, until);
  });
  TakeTurns(&turn, 0, until);
  other.join();
  return Seconds(t0);
}

double ProcessHandoffOnce(int cpu, int iters) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 0;
  auto* turn = new (page) std::atomic<uint64_t>(0);
  const auto until = static_cast<uint64_t>(iters);
  const auto t0 = Clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    PinTo(cpu);
    TakeTurns(turn, 1, until);
    ::_exit(0);
  }
  if (child > 0) TakeTurns(turn, 0, until);
  const double s = Seconds(t0);
  if (child > 0) ::waitpid(child, nullptr, 0);
  ::munmap(page, 4096);
  return child > 0 ? s : 0;
}

// Sends one message and busy-polls until the peer's has arrived in full.
bool ExchangeOnce(int fd, const char* out, char* in, size_t bytes) {
  if (::send(fd, out, bytes, 0) != static_cast<ssize_t>(bytes)) return false;
  size_t got = 0;
  while (got < bytes) {
    const ssize_t r = ::recv(fd, in + got, bytes - got, MSG_DONTWAIT);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return false;
    }
  }
  return true;
}

// A listening TCP socket on a free loopback port, its address in *addr.
bool ListenOnLoopback(baton::UniqueFd* listener, sockaddr_in* addr) {
  listener->reset(::socket(AF_INET, SOCK_STREAM, 0));
  *addr = {};
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof *addr;
  return listener->valid() && ::bind(listener->get(), reinterpret_cast<sockaddr*>(addr), sizeof *addr) == 0 &&
         ::listen(listener->get(), 1) == 0 &&
         ::getsockname(listener->get(), reinterpret_cast<sockaddr*>(addr), &len) == 0;
}

// One end of a connection through `listener` (accepting, or connecting to
// `addr`), with TCP_NODELAY; invalid if that failed. The accepting end waits
// at most 10 s: a peer that could not connect has exited.
baton::UniqueFd OneEnd(bool accepting, const baton::UniqueFd& listener, const sockaddr_in& addr) {
  baton::UniqueFd fd;
  if (accepting) {
    pollfd ready{listener.get(), POLLIN, 0};
    if (::poll(&ready, 1, 10'000) == 1) fd.reset(::accept(listener.get(), nullptr, nullptr));
  } else {
    fd.reset(::socket(AF_INET, SOCK_STREAM, 0));
    if (fd.valid() && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) fd.reset();
  }
  if (fd.valid()) {
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

// TCP loopback between a parent on cpu_a and a child on cpu_b; the child
// runs the same iterations (and repetitions) and exits. Returns the parent's
// seconds per repetition, or an empty list if the sockets failed.
std::vector<double> TcpExchange(int cpu_a, int cpu_b, int iters, int reps) {
  constexpr size_t kBytes = 64;
  baton::UniqueFd listener;
  sockaddr_in addr{};
  if (!ListenOnLoopback(&listener, &addr)) return {};
  const pid_t child = ::fork();
  if (child < 0) return {};
  const bool parent = child > 0;
  PinTo(parent ? cpu_a : cpu_b);
  baton::UniqueFd fd = OneEnd(parent, listener, addr);
  std::vector<double> seconds;
  bool ok = fd.valid();
  if (ok) {
    char out[kBytes] = {}, in[kBytes];
    for (int i = 0; ok && i < iters / 10; ++i) ok = ExchangeOnce(fd.get(), out, in, kBytes);  // warm-up
    for (int r = 0; ok && r < reps; ++r) {
      const auto t0 = Clock::now();
      for (int i = 0; ok && i < iters; ++i) ok = ExchangeOnce(fd.get(), out, in, kBytes);
      seconds.push_back(Seconds(t0));
    }
  }
  if (!parent) ::_exit(ok ? 0 : 1);
  fd.reset();  // a child still exchanging sees the close and stops
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return seconds;
}

// The composed floor, measured rather than summed: on each of two CPUs a
// "rank" and a "relay" process (the daemon's part). Each iteration the rank
// hands the turn to its relay (shared word, sched_yield while waiting), the
// relay exchanges 64 bytes with the other CPU's relay over TCP (busy-polling:
// it keeps the core, the rank has nothing to do) and hands the turn back.
// Nothing else runs: no protocol, no reduction, no bookkeeping. What this
// adds over the sum is what sharing a core costs beyond the switches
// themselves (caches and TLB refilled after each switch, the other
// process's kernel work). Returns rank A's seconds per repetition, or an
// empty list if a socket failed.
std::vector<double> ComposedFloor(int cpu_a, int cpu_b, int iters, int reps) {
  constexpr size_t kBytes = 64;
  baton::UniqueFd listener;
  sockaddr_in addr{};
  if (!ListenOnLoopback(&listener, &addr)) return {};
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return {};
  // turn[node]: odd while the relay has it. A relay that fails sets failed.
  auto* turn = new (page) std::atomic<uint64_t>[2]{};
  auto* failed = new (static_cast<char*>(page) + 64) std::atomic<uint32_t>(0);
  const uint64_t total = static_cast<uint64_t>(iters / 10 + iters * reps);  // warm-up, then the repetitions

  auto relay = [&](int node) {
    PinTo(node == 0 ? cpu_a : cpu_b);
    baton::UniqueFd fd = OneEnd(node == 0, listener, addr);
    bool ok = fd.valid();
    char out[kBytes] = {}, in[kBytes];
    for (uint64_t i = 0; ok && i < total; ++i) {
      while ((turn[node].load(std::memory_order_acquire) & 1) == 0) {
        if (failed->load(std::memory_order_relaxed) != 0) ::_exit(1);
        ::sched_yield();
      }
      ok = ExchangeOnce(fd.get(), out, in, kBytes);
      turn[node].fetch_add(1, std::memory_order_release);
    }
    if (!ok) failed->store(1);
    ::_exit(ok ? 0 : 1);
  };
  // One operation of a rank: hand over, wait (yielding) until handed back.
  auto operate = [&](int node) {
    const uint64_t mine = turn[node].fetch_add(1, std::memory_order_release) + 2;
    while (turn[node].load(std::memory_order_acquire) < mine) {
      if (failed->load(std::memory_order_relaxed) != 0) return false;
      ::sched_yield();
    }
    return true;
  };

  std::vector<pid_t> children;
  for (int node = 0; node < 2; ++node) {
    const pid_t pid = ::fork();
    if (pid == 0) relay(node);
    if (pid > 0) children.push_back(pid);
  }
  const pid_t rank_b = children.size() == 2 ? ::fork() : -1;
  if (rank_b == 0) {
    PinTo(cpu_b);
    bool ok = true;
    for (uint64_t i = 0; ok && i < total; ++i) ok = operate(1);
    ::_exit(ok ? 0 : 1);
  }
  std::vector<double> seconds;
  bool ok = rank_b > 0;
  if (ok) {
    children.push_back(rank_b);
    PinTo(cpu_a);
    for (int i = 0; ok && i < iters / 10; ++i) ok = operate(0);
    for (int r = 0; ok && r < reps; ++r) {
      const auto t0 = Clock::now();
      for (int i = 0; ok && i < iters; ++i) ok = operate(0);
      seconds.push_back(Seconds(t0));
    }
  }
  if (!ok) failed->store(1);
  for (const pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ok = false;
  }
  PinTo(cpu_a);
  ::munmap(page, 4096);
  return ok ? seconds : std::vector<double>{};
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 100000;
  int reps = 5;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = std::max(100, std::atoi(argv[++i]));
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "usage: baton-latency [--iters N] [--reps N] [--json]\n");
      return 2;
    }
  }
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.empty()) {
    std::fprintf(stderr, "baton-latency: cannot read this process's CPU affinity\n");
    return 1;
  }
  // The one-core measurements run on the first allowed CPU; the TCP
  // exchange on the first two, as baton-run places two simulated nodes.
  const int cpu = cpus[0];
  PinTo(cpu);
  const double syscall_us = MedianUs(reps, iters, [&] { return SyscallOnce(iters); });
  const double yield_us = MedianUs(reps, iters, [&] { return YieldOnce(iters); });
  const int handoffs = iters / 2;  // each takes a few microseconds
  const double process_us = MedianUs(reps, handoffs, [&] { return ProcessHandoffOnce(cpu, handoffs); });
  const double thread_us = MedianUs(reps, handoffs, [&] { return ThreadHandoffOnce(cpu, handoffs); });
  double tcp_us = -1;
  const int exchanges = iters / 5;
  if (cpus.size() >= 2) {
    std::vector<double> s = TcpExchange(cpus[0], cpus[1], exchanges, reps);
    if (s.empty()) {
      std::fprintf(stderr, "baton-latency: the TCP loopback exchange between CPUs %d and %d failed\n", cpus[0],
                   cpus[1]);
      return 1;
    }
    std::sort(s.begin(), s.end());
    tcp_us = s[s.size() / 2] / exchanges * 1e6;
  }
  const double floor_us = tcp_us < 0 ? -1 : tcp_us + 2 * process_us;
  double composed_us = -1;
  if (cpus.size() >= 2) {
    std::vector<double> s = ComposedFloor(cpus[0], cpus[1], exchanges, reps);
    if (s.empty()) {
      std::fprintf(stderr, "baton-latency: the composed floor (rank, relay and TCP on CPUs %d and %d) failed\n",
                   cpus[0], cpus[1]);
      return 1;
    }
    std::sort(s.begin(), s.end());
    composed_us = s[s.size() / 2] / exchanges * 1e6;
  }
  if (json) {
    std::printf(
        "{\"syscall_us\": %.3f, \"yield_us\": %.3f, \"thread_handoff_us\": %.3f, \"process_handoff_us\": %.3f, "
        "\"tcp_exchange_us\": %.3f, \"daemon_floor_us\": %.3f, \"composed_floor_us\": %.3f, \"cpus\": [%d, %d], "
        "\"reps\": %d}\n",
        syscall_us, yield_us, thread_us, process_us, tcp_us, floor_us, composed_us, cpus[0],
        cpus.size() >= 2 ? cpus[1] : -1, reps);
    return 0;
  }
  std::printf("system call (getppid)                          %7.2f us\n", syscall_us);
  std::printf("sched_yield, nothing else to run               %7.2f us\n", yield_us);
  std::printf("hand-off between two threads on CPU %-3d        %7.2f us\n", cpu, thread_us);
  std::printf("hand-off between two processes on CPU %-3d      %7.2f us\n", cpu, process_us);
  if (tcp_us < 0) {
    std::printf("TCP loopback exchange: needs two CPUs, this process may use one\n");
    return 0;
  }
  std::printf("TCP loopback exchange of 64 B, CPUs %d and %d    %7.2f us\n", cpus[0], cpus[1], tcp_us);
  std::printf("2-node AllReduce floor through a daemon sharing each node's core\n"
              "  (exchange + 2 process hand-offs)              %7.2f us\n",
              floor_us);
  std::printf("the same, composed and measured (a rank and a relay process per CPU,\n"
              "  hand-off, exchange, hand-off; nothing else)    %7.2f us\n",
              composed_us);
  return 0;
}
