// baton-membw: this machine's memory copy bandwidth, the ceiling for
// everything a daemon does within a node (shared-memory staging, reductions).
//   baton-membw [--size BYTES] [--threads N] [--reps N] [--json]
// Copies a buffer (default 256 MiB, beyond any cache) with memcpy on N
// threads (default: the CPUs this process may use), each on its own slice;
// reports the median of the repetitions in GB/s of bytes copied.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

double CopyOnce(std::vector<char>& src, std::vector<char>& dst, int threads) {
  const size_t slice = src.size() / static_cast<size_t>(threads);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const size_t off = slice * static_cast<size_t>(t);
      const size_t n = t == threads - 1 ? src.size() - off : slice;
      std::memcpy(dst.data() + off, src.data() + off, n);
    });
  }
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  size_t size = 256ull << 20;
  cpu_set_t set;
  CPU_ZERO(&set);
  int threads = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  int reps = 10;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) size = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--threads" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json") json = true;
    else {
      std::fprintf(stderr, "usage: baton-membw [--size BYTES] [--threads N] [--reps N] [--json]\n");
      return 2;
    }
  }
  std::vector<char> src(size, 1);
  std::vector<char> dst(size, 0);  // both touched: no page faults in the timing
  CopyOnce(src, dst, threads);     // warm-up
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) gbps.push_back(static_cast<double>(size) / CopyOnce(src, dst, threads) / 1e9);
  std::sort(gbps.begin(), gbps.end());
  const double median = gbps[gbps.size() / 2];
  if (json) {
    std::printf("{\"bytes\": %zu, \"threads\": %d, \"reps\": %d, \"copy_gbps\": %.3f}\n", size, threads, reps, median);
  } else {
    std::printf("memcpy of %zu MiB on %d thread(s): %.2f GB/s (median of %d)\n", size >> 20, threads, median, reps);
  }
  return 0;
}
