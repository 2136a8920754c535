// baton-bench: an nccl-tests-style sweep of one collective. Run every rank
// under baton-run:
//   baton-run --nodes 2 --ranks-per-node 2 -- baton-bench allreduce -b 8 -e 64M -f 4
//
// Columns follow nccl-tests: size is the operation's size in bytes as
// nccl-tests defines it per collective; time is the mean over -n iterations
// (the slowest rank's mean); algbw = size / time; busbw = algbw * factor,
// the factor that makes busbw comparable to the link speed (2(n-1)/n for
// allreduce, (n-1)/n for allgather/reducescatter/alltoall/gather/scatter,
// 1 for broadcast/reduce/sendrecv). #wrong counts elements that differ
// from the exactly predictable reference (collectives/reference.h). With
// -p 1, two more columns give the median and 99th percentile of single
// calls' times (the slowest rank's), for latency spread the mean hides.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/baton.h"
#include "collectives/reference.h"
#include "common/byte_size.h"
#include "common/types.h"
#include "tools/bench_support/call.h"
#include "tools/bench_support/sizes.h"

namespace {

using baton::Collective;
using baton::DataType;
using baton::OpSignature;
using baton::RedOp;

const char* kUsage = R"(usage: baton-bench COLLECTIVE [options]   (run under baton-run)

COLLECTIVE: allreduce broadcast reduce allgather reducescatter scatter gather
            alltoall sendrecv
options:
  -b MIN      smallest size (bytes; K/M/G suffixes)     default 8
  -e MAX      largest size                             default 64M
  -f FACTOR   size multiplier between rows             default 2
  -n ITERS    timed iterations per size                default 20
  -w WARMUP   untimed iterations per size              default 5
  -p 1        also print p50 and p99 of single calls   default 0
  -c CHECK    1: check results against the reference   default 1
  -d DTYPE    int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32 float64 (default float32)
  -o OP       sum prod min max avg                     default sum
  -r ROOT     root rank for rooted collectives         default 0
  --json FILE write the rows as JSON
)";

void Die(const char* what, baton_comm_t comm) {
  std::fprintf(stderr, "baton-bench: %s: %s\n", what, baton_get_last_error(comm));
  std::exit(1);
}

struct Row {
  uint64_t size;
  uint64_t count;
  double time_us;
  double algbw;
  double busbw;
  uint64_t wrong;
  double p50_us;  // with -p 1
  double p99_us;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string coll_name = argv[1];
  const bool sendrecv = coll_name == "sendrecv";
  auto parsed = baton::ParseCollective(coll_name);
  if (!sendrecv && (!parsed || *parsed == Collective::kSend || *parsed == Collective::kRecv ||
                    *parsed == Collective::kBarrier || *parsed == Collective::kSplit)) {
    std::fprintf(stderr, "baton-bench: unknown collective '%s'\n%s", coll_name.c_str(), kUsage);
    return 2;
  }
  const Collective coll = sendrecv ? Collective::kSend : *parsed;
  uint64_t min_bytes = 8, max_bytes = 64ull << 20;
  double factor = 2;
  int iters = 20, warmup = 5, check = 1, root = 0, percentiles = 0;
  DataType dtype = DataType::kFloat32;
  RedOp op = RedOp::kSum;
  std::string json;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "baton-bench: %s needs a value\n", a.c_str());
      return 2;
    }
    std::string v = argv[++i];
    bool ok = true;
    if (a == "-b") ok = baton::ParseByteSize(v, &min_bytes);
    else if (a == "-e") ok = baton::ParseByteSize(v, &max_bytes);
    else if (a == "-f") ok = (factor = std::atof(v.c_str())) > 1;
    else if (a == "-n") ok = (iters = std::atoi(v.c_str())) > 0;
    else if (a == "-w") ok = (warmup = std::atoi(v.c_str())) >= 0;
    else if (a == "-c") check = std::atoi(v.c_str());
    else if (a == "-p") percentiles = std::atoi(v.c_str());
    else if (a == "-r") root = std::atoi(v.c_str());
    else if (a == "-d") { auto t = baton::ParseDataType(v); ok = t.has_value(); if (ok) dtype = *t; }
    else if (a == "-o") { auto o = baton::ParseRedOp(v); ok = o.has_value(); if (ok) op = *o; }
    else if (a == "--json") json = v;
    else ok = false;
    if (!ok) {
      std::fprintf(stderr, "baton-bench: bad option %s %s\n%s", a.c_str(), v.c_str(), kUsage);
      return 2;
    }
  }

  baton_comm_t comm = nullptr;
  if (baton_comm_init_from_env(&comm) != baton_success) Die("init", comm);
  int rank = 0, world = 0;
  baton_comm_user_rank(comm, &rank);
  baton_comm_count(comm, &world);
  if (root < 0 || root >= world) root = 0;
  const uint64_t es = baton::DataTypeSize(dtype);
  const auto bt = static_cast<baton_datatype_t>(dtype);

  auto count_for = [&](uint64_t size) { return baton::bench::CountForSize(coll, size, es, world); };
  const double bus_factor = baton::bench::BusBandwidthFactor(coll, world);
  // Buffers: the largest vector any rank needs.
  const uint64_t max_count = count_for(max_bytes) ? count_for(max_bytes) : 1;
  const uint64_t buf_bytes = std::max<uint64_t>(max_count * es * static_cast<uint64_t>(world), 64);
  void* sbuf = nullptr;
  void* rbuf = nullptr;
  if (baton_mem_alloc(&sbuf, buf_bytes) != baton_success || baton_mem_alloc(&rbuf, buf_bytes) != baton_success) {
    Die("baton_mem_alloc", comm);
  }
  std::memset(sbuf, 0, buf_bytes);

  auto run_once = [&](uint64_t count) -> baton_result_t {
    if (!sendrecv) {
      const OpSignature sig{coll, dtype, op, baton::HasRoot(coll) ? root : -1, count};
      return baton::bench::CallCollective(sig, sbuf, rbuf, comm);
    }
    // sendrecv: a ring of sends, like nccl-tests' sendrecv
    baton_group_start();
    baton_send(sbuf, count, bt, (rank + 1) % world, comm, nullptr);
    baton_recv(rbuf, count, bt, (rank - 1 + world) % world, comm, nullptr);
    return baton_group_end();
  };
  // Checks one run on pattern data against the reference; returns wrong elements.
  auto check_once = [&](uint64_t count) -> uint64_t {
    namespace ref = baton::reference;
    OpSignature sig{coll, dtype, op, baton::HasRoot(coll) ? root : -1, count};
    std::vector<ref::Bytes> sends(world);
    for (int r = 0; r < world; ++r) {
      if (sendrecv) {
        sends[r].resize(count * es);
        ref::FillPattern(dtype, op, r, 0, count, sends[r].data());
      } else {
        sends[r] = ref::MakeSendBuffer(sig, world, r);
      }
    }
    if (!sends[rank].empty()) std::memcpy(sbuf, sends[rank].data(), sends[rank].size());
    if (run_once(count) != baton_success) Die(coll_name.c_str(), comm);
    ref::Bytes want = sendrecv ? sends[(rank - 1 + world) % world] : ref::Expected(sig, world, rank, sends);
    const auto* got = static_cast<const uint8_t*>(rbuf);
    uint64_t wrong = 0;
    for (uint64_t e = 0; e < want.size() / es; ++e) {
      if (std::memcmp(got + e * es, want.data() + e * es, es) != 0) ++wrong;
    }
    return wrong;
  };

  if (rank == 0) {
    std::printf("# baton-bench %s: %d ranks, dtype %s, op %s, %d iterations (+%d warmup)\n", coll_name.c_str(), world,
                baton::DataTypeName(dtype), baton::RedOpName(op), iters, warmup);
    std::printf("#%13s %13s %9s %7s %6s %11s %9s %9s %7s%s\n", "size", "count", "type", "redop", "root", "time",
                "algbw", "busbw", "#wrong", percentiles ? "       p50       p99" : "");
    std::printf("#%13s %13s %9s %7s %6s %11s %9s %9s %7s%s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                "(GB/s)", "", percentiles ? "      (us)      (us)" : "");
  }
  std::vector<Row> rows;
  double bus_sum = 0;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes); s *= factor) {
    const uint64_t count = count_for(static_cast<uint64_t>(s));
    const uint64_t size = baton::bench::SizeOfCount(coll, count, es, world);
    for (int w = 0; w < warmup; ++w) {
      if (run_once(count) != baton_success) Die(coll_name.c_str(), comm);
    }
    baton_barrier(comm, nullptr);
    std::vector<double> call_us(percentiles ? static_cast<size_t>(iters) : 0);
    const auto t0 = std::chrono::steady_clock::now();
    auto last = t0;
    for (int it = 0; it < iters; ++it) {
      if (run_once(count) != baton_success) Die(coll_name.c_str(), comm);
      if (percentiles) {
        const auto now = std::chrono::steady_clock::now();
        call_us[it] = std::chrono::duration<double, std::micro>(now - last).count();
        last = now;
      }
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    double pct[2] = {0, 0};  // p50, p99 of this rank's calls, then the slowest rank's
    if (percentiles) {
      std::sort(call_us.begin(), call_us.end());
      const double mine[2] = {call_us[call_us.size() / 2], call_us[call_us.size() * 99 / 100]};
      if (baton_allreduce(mine, pct, 2, baton_float64, baton_max, comm, nullptr) != baton_success) {
        Die("allreduce of percentiles", comm);
      }
    }
    // Report the slowest rank's time, and the total of wrong elements.
    double slowest = 0;
    if (baton_allreduce(&us, &slowest, 1, baton_float64, baton_max, comm, nullptr) != baton_success) {
      Die("allreduce of timings", comm);
    }
    uint64_t wrong = check ? check_once(count) : 0;
    uint64_t total_wrong = 0;
    if (baton_allreduce(&wrong, &total_wrong, 1, baton_uint64, baton_sum, comm, nullptr) != baton_success) {
      Die("allreduce of #wrong", comm);
    }
    const double algbw = slowest > 0 ? static_cast<double>(size) / (slowest * 1e3) : 0;  // GB/s
    const double busbw = algbw * bus_factor;
    bus_sum += busbw;
    rows.push_back({size, count, slowest, algbw, busbw, total_wrong, pct[0], pct[1]});
    if (rank == 0) {
      char extra[32] = "";
      if (percentiles) std::snprintf(extra, sizeof extra, " %9.2f %9.2f", pct[0], pct[1]);
      std::printf(" %13llu %13llu %9s %7s %6d %11.2f %9.3f %9.3f %7llu%s\n", static_cast<unsigned long long>(size),
                  static_cast<unsigned long long>(count), baton::DataTypeName(dtype),
                  baton::IsReduction(coll) ? baton::RedOpName(op) : "none", baton::HasRoot(coll) ? root : -1,
                  slowest, algbw, busbw, static_cast<unsigned long long>(total_wrong), extra);
      std::fflush(stdout);
    }
  }
  uint64_t all_wrong = 0;
  for (const Row& r : rows) all_wrong += r.wrong;
  if (rank == 0) {
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(all_wrong),
                all_wrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %.3f\n", rows.empty() ? 0.0 : bus_sum / rows.size());
    if (!json.empty()) {
      FILE* f = std::fopen(json.c_str(), "w");
      if (f == nullptr) {
        std::perror("baton-bench: --json");
        return 1;
      }
      std::fprintf(f, "{\"collective\": \"%s\", \"ranks\": %d, \"dtype\": \"%s\", \"op\": \"%s\", \"rows\": [",
                   coll_name.c_str(), world, baton::DataTypeName(dtype), baton::RedOpName(op));
      for (size_t k = 0; k < rows.size(); ++k) {
        std::fprintf(f, "%s\n  {\"size\": %llu, \"count\": %llu, \"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, "
                     "\"wrong\": %llu", k ? "," : "", static_cast<unsigned long long>(rows[k].size),
                     static_cast<unsigned long long>(rows[k].count), rows[k].time_us, rows[k].algbw, rows[k].busbw,
                     static_cast<unsigned long long>(rows[k].wrong));
        if (percentiles) std::fprintf(f, ", \"p50_us\": %.3f, \"p99_us\": %.3f", rows[k].p50_us, rows[k].p99_us);
        std::fprintf(f, "}");
      }
      std::fprintf(f, "\n]}\n");
      std::fclose(f);
    }
  }
  baton_mem_free(sbuf);
  baton_mem_free(rbuf);
  baton_comm_destroy(comm);
  return all_wrong ? 1 : 0;
}
