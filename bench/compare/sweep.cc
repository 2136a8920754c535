#include "bench/compare/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <sstream>
#include <vector>

#include "common/byte_size.h"
#include "common/types.h"
#include "tools/bench_support/sizes.h"

namespace baton::compare {
namespace {

// What every system implements (System): the collectives training uses most.
constexpr Collective kSweptOps[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                    Collective::kBroadcast};

const char* kUsage = R"(options (the same for every system):
  --ops LIST     allreduce,allgather,reducescatter,broadcast (default: all four)
  -b MIN         smallest size in bytes (K/M/G suffixes)     default 8
  -e MAX         largest size                               default 256M
  -f FACTOR      size multiplier between rows               default 4
  -n ITERS       timed runs per size (small sizes)          default 50
  --budget BYTES fewer runs for large sizes: at most BYTES/size, at least 3   default 512M
  -w WARMUP      untimed runs per size                      default 3
  --label TEXT   configuration label written into the JSON rows
  --json FILE    append one JSON object per row (rank 0)
)";

// Rank r's input element i: a small integer, so that sums over a few ranks
// are exact in float32 and every system must produce exactly this.
float Pattern(int r, uint64_t i) { return static_cast<float>((i * 7 + static_cast<uint64_t>(r) * 13) % 61); }

struct Buffers {
  float* send;
  float* recv;
};

bool RunOnce(System& s, Collective op, const Buffers& b, uint64_t count) {
  switch (op) {
    case Collective::kAllReduce: return s.AllReduce(b.send, b.recv, count);
    case Collective::kAllGather: return s.AllGather(b.send, b.recv, count);
    case Collective::kReduceScatter: return s.ReduceScatter(b.send, b.recv, count);
    case Collective::kBroadcast: return s.Broadcast(b.recv, count);
    default: return false;  // RunSweep takes only kSweptOps
  }
}

// Fills the inputs with the pattern, runs once, and counts wrong elements.
uint64_t CheckOnce(System& s, Collective op, const Buffers& b, uint64_t count, bool* ok) {
  const int n = s.size(), me = s.rank();
  const uint64_t in = op == Collective::kReduceScatter ? count * n : count;
  const uint64_t out = op == Collective::kAllGather ? count * n : count;
  for (uint64_t i = 0; i < in; ++i) b.send[i] = Pattern(me, i);
  for (uint64_t i = 0; i < out; ++i) b.recv[i] = -1;
  if (op == Collective::kBroadcast && me == 0) {
    for (uint64_t i = 0; i < count; ++i) b.recv[i] = Pattern(0, i);
  }
  *ok = RunOnce(s, op, b, count);
  if (!*ok) return 0;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < out; ++i) {
    float want = 0;
    switch (op) {
      case Collective::kAllReduce:
        for (int r = 0; r < n; ++r) want += Pattern(r, i);
        break;
      case Collective::kAllGather:
        want = Pattern(static_cast<int>(i / count), i % count);
        break;
      case Collective::kReduceScatter:
        for (int r = 0; r < n; ++r) want += Pattern(r, static_cast<uint64_t>(me) * count + i);
        break;
      default:  // Broadcast
        want = Pattern(0, i);
        break;
    }
    if (b.recv[i] != want) ++wrong;
  }
  return wrong;
}

}  // namespace

bool ParseSweepOptions(int argc, char** argv, SweepOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n%s", a.c_str(), kUsage);
      return false;
    }
    const std::string v = argv[++i];
    bool ok = true;
    if (a == "--ops") o->ops = v;
    else if (a == "-b") ok = ParseByteSize(v, &o->min_bytes);
    else if (a == "-e") ok = ParseByteSize(v, &o->max_bytes);
    else if (a == "-f") ok = (o->factor = std::atof(v.c_str())) > 1;
    else if (a == "-n") ok = (o->iters = std::atoi(v.c_str())) > 0;
    else if (a == "--budget") ok = ParseByteSize(v, &o->budget);
    else if (a == "-w") ok = (o->warmup = std::atoi(v.c_str())) >= 0;
    else if (a == "--label") o->label = v;
    else if (a == "--json") o->json = v;
    else ok = false;
    if (!ok) {
      std::fprintf(stderr, "bad option %s %s\n%s", a.c_str(), v.c_str(), kUsage);
      return false;
    }
  }
  return true;
}

int RunSweep(System& s, const SweepOptions& o) {
  std::vector<Collective> ops;
  std::stringstream list(o.ops);
  for (std::string item; std::getline(list, item, ',');) {
    const std::optional<Collective> op = ParseCollective(item);
    if (!op || std::find(std::begin(kSweptOps), std::end(kSweptOps), *op) == std::end(kSweptOps)) {
      std::fprintf(stderr, "unknown op '%s': say allreduce, allgather, reducescatter or broadcast\n", item.c_str());
      return 2;
    }
    ops.push_back(*op);
  }
  const int n = s.size(), me = s.rank();
  // Every op's input and output fit in max_bytes (nccl-tests' size is the
  // larger of the two), so two buffers of that size serve the whole sweep.
  const uint64_t elems = std::max<uint64_t>(o.max_bytes / sizeof(float), 1);
  Buffers b{s.Allocate(elems), s.Allocate(elems)};
  if (b.send == nullptr || b.recv == nullptr) return 1;
  std::memset(b.send, 0, elems * sizeof(float));
  std::memset(b.recv, 0, elems * sizeof(float));
  FILE* json = nullptr;
  if (me == 0 && !o.json.empty() && (json = std::fopen(o.json.c_str(), "a")) == nullptr) {
    std::perror(o.json.c_str());
    return 1;
  }
  if (me == 0) {
    std::printf("# %s, %d ranks%s%s\n# %-13s %12s %8s %12s %10s %10s %7s\n", s.name().c_str(), n,
                o.label.empty() ? "" : ", ", o.label.c_str(), "op", "size(B)", "runs", "time(us)", "algbw", "busbw",
                "#wrong");
  }
  uint64_t all_wrong = 0;
  bool failed = false;
  for (Collective op : ops) {
    for (double sz = static_cast<double>(o.min_bytes); sz <= static_cast<double>(o.max_bytes) && !failed;
         sz *= o.factor) {
      const uint64_t count = bench::CountForSize(op, static_cast<uint64_t>(sz), sizeof(float), n);
      if (count == 0) continue;
      const uint64_t bytes = bench::SizeOfCount(op, count, sizeof(float), n);
      const int runs = static_cast<int>(
          std::clamp<uint64_t>(o.budget / bytes, 3, static_cast<uint64_t>(std::max(o.iters, 3))));
      bool ok = true;
      uint64_t wrong = CheckOnce(s, op, b, count, &ok);
      for (int w = 0; w < o.warmup && ok; ++w) ok = RunOnce(s, op, b, count);
      ok = ok && s.Barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < runs && ok; ++it) ok = RunOnce(s, op, b, count);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / runs;
      if (!ok || !s.MaxDouble(&us) || !s.SumU64(&wrong)) {
        failed = true;
        break;
      }
      all_wrong += wrong;
      const double algbw = static_cast<double>(bytes) / (us * 1e3);
      const double busbw = algbw * bench::BusBandwidthFactor(op, n);
      if (me == 0) {
        std::printf("  %-13s %12llu %8d %12.2f %10.3f %10.3f %7llu\n", CollectiveName(op),
                    static_cast<unsigned long long>(bytes), runs, us, algbw, busbw,
                    static_cast<unsigned long long>(wrong));
        std::fflush(stdout);
        if (json != nullptr) {
          std::fprintf(json,
                       "{\"system\": \"%s\", \"config\": \"%s\", \"ranks\": %d, \"op\": \"%s\", \"bytes\": %llu, "
                       "\"runs\": %d, \"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %llu}\n",
                       s.name().c_str(), o.label.c_str(), n, CollectiveName(op), static_cast<unsigned long long>(bytes),
                       runs, us, algbw, busbw, static_cast<unsigned long long>(wrong));
        }
      }
    }
  }
  if (json != nullptr) std::fclose(json);
  s.Free(b.send);
  s.Free(b.recv);
  if (failed) {
    std::fprintf(stderr, "%s rank %d: a collective failed; see above\n", s.name().c_str(), me);
    return 1;
  }
  if (me == 0 && all_wrong) std::printf("# %llu wrong elements: FAILED\n", static_cast<unsigned long long>(all_wrong));
  return all_wrong ? 1 : 0;
}

}  // namespace baton::compare
