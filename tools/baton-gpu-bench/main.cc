// baton-gpu-bench: how close Baton's GPU paths come to what the device
// allows, measured as ratios in one run.
//
//   baton-gpu-bench kernels [-b MIN] [-e MAX]
//     The device's copy bandwidth (cudaMemcpy device to device, bytes read
//     + written per second) against the reduction kernel's (two arrays read,
//     one written), float32 and bfloat16 sum, per size; and a fold of 8
//     float32 inputs as the GPU plan runs it (one fused kernel) against the
//     copy and 7 reductions it replaces (the speed-up). No daemon needed.
//
//   baton-run --nodes N --ranks-per-node R -- baton-gpu-bench COLLECTIVE [-b MIN] [-e MAX] [-f F] [-n ITERS]
//     The collective (float32 sum, out of place, root 0) on device buffers,
//     stream-ordered, against the same sizes on host buffers from
//     baton_mem_alloc, called blocking, same ranks, same run; size and busbw
//     as nccl-tests defines them (tools/bench_support/sizes.h). Every size's
//     result is checked element by element in both columns. Rank r uses
//     device BATON_LOCAL_RANK % (devices): several ranks may share one GPU.
//     --host-only runs the host column alone, with no CUDA call, so that the
//     benchmark itself is tested where there is no GPU (the CPU suite does).
#include <cuda_runtime_api.h>

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
#include "gpu/reduce_kernels.h"
#include "tools/bench_support/call.h"
#include "tools/bench_support/sizes.h"

namespace {

const char* kUsage = R"(usage: baton-gpu-bench kernels [-b MIN] [-e MAX] [-f F] [-n ITERS]
       baton-run ... -- baton-gpu-bench COLLECTIVE [-b MIN] [-e MAX] [-f F] [-n ITERS] [--host-only]
COLLECTIVE: allreduce broadcast reduce allgather reducescatter scatter gather alltoall
  -b MIN       smallest size in bytes (K/M/G suffixes)   default 1M (kernels), 8 (collectives)
  -e MAX       largest size                             default 256M (kernels), 64M (collectives)
  -f F         size multiplier between rows             default 2
  -n ITERS     timed iterations per size                default 20
  --host-only  the host column alone, no CUDA call (checks the benchmark without a GPU)
)";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "baton-gpu-bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) Die(std::string(what) + ": " + cudaGetErrorString(err));
}

// Mean seconds per call of `body` on `stream`, timed with CUDA events.
template <typename Body>
double TimeOnStream(cudaStream_t stream, int iters, Body body) {
  cudaEvent_t start, stop;
  Check(cudaEventCreate(&start), "cudaEventCreate");
  Check(cudaEventCreate(&stop), "cudaEventCreate");
  body();  // warm up
  Check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) body();
  Check(cudaEventRecord(stop, stream), "cudaEventRecord");
  Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1e3 / iters;
}

int Kernels(uint64_t min_bytes, uint64_t max_bytes, double factor, int iters) {
  Check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  // d, then the fold's 8 inputs (the first two are the reduction's a and b).
  constexpr int kFold = 8;
  uint8_t* mem = nullptr;
  Check(cudaMalloc(reinterpret_cast<void**>(&mem), (kFold + 1) * max_bytes), "cudaMalloc");
  Check(cudaMemset(mem, 0, (kFold + 1) * max_bytes), "cudaMemset");
  uint8_t* d = mem;
  std::vector<const void*> inputs(kFold);
  for (int k = 0; k < kFold; ++k) inputs[k] = mem + (k + 1) * max_bytes;
  const uint8_t* a = static_cast<const uint8_t*>(inputs[0]);
  const uint8_t* b = static_cast<const uint8_t*>(inputs[1]);
  std::printf("# baton-gpu-bench kernels on %s: GB/s counts bytes read + written\n", prop.name);
  std::printf("#%12s %11s %14s %14s %9s %9s %15s %13s\n", "size(B)", "copy GB/s", "f32 sum GB/s", "bf16 sum GB/s",
              "f32/copy", "bf16/copy", "fold8 f32 GB/s", "fold8 fused x");
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes); s *= factor) {
    const uint64_t n = static_cast<uint64_t>(s) / 4 * 4;  // whole float32 elements
    const double copy = TimeOnStream(stream, iters, [&] {
      Check(cudaMemcpyAsync(d, a, n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    });
    auto reduce = [&](baton::DataType t) {
      return TimeOnStream(stream, iters, [&] {
        baton::Status st = baton::gpu::LaunchReduce(t, baton::RedOp::kSum, d, a, b,
                                                    n / baton::DataTypeSize(t), stream);
        if (!st.ok()) Die(st.ToString());
      });
    };
    const double f32 = reduce(baton::DataType::kFloat32);
    const double bf16 = reduce(baton::DataType::kBfloat16);
    const uint64_t count = n / 4;
    const double fused = TimeOnStream(stream, iters, [&] {
      baton::Status st = baton::gpu::LaunchFold(baton::DataType::kFloat32, baton::RedOp::kSum, d, inputs.data(),
                                                inputs.size(), count, stream);
      if (!st.ok()) Die(st.ToString());
    });
    const double chained = TimeOnStream(stream, iters, [&] {
      Check(cudaMemcpyAsync(d, a, n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
      for (int k = 1; k < kFold; ++k) {
        baton::Status st = baton::gpu::LaunchReduce(baton::DataType::kFloat32, baton::RedOp::kSum, d, d, inputs[k],
                                                    count, stream);
        if (!st.ok()) Die(st.ToString());
      }
    });
    const double copy_bw = 2.0 * n / copy / 1e9;
    const double f32_bw = 3.0 * n / f32 / 1e9;
    const double bf16_bw = 3.0 * n / bf16 / 1e9;
    const double fold_bw = (kFold + 1.0) * n / fused / 1e9;
    std::printf(" %12llu %11.1f %14.1f %14.1f %9.2f %9.2f %15.1f %13.2f\n", static_cast<unsigned long long>(n),
                copy_bw, f32_bw, bf16_bw, f32_bw / copy_bw, bf16_bw / copy_bw, fold_bw, chained / fused);
  }
  cudaFree(mem);
  cudaStreamDestroy(stream);
  return 0;
}

// One column of the collective benchmark: the buffers it runs on and how
// it calls. The device column allocates GPU memory (baton_mem_alloc_device)
// and calls stream-ordered; the host column allocates baton_mem_alloc memory
// and calls blocking, as a CPU training process would.
struct Column {
  bool on_device = false;
  void* send = nullptr;
  void* recv = nullptr;
};

struct CollectiveRun {
  baton_comm_t comm = nullptr;
  int rank = 0;
  int world = 0;
  cudaStream_t stream = nullptr;  // the device column's

  void Call(const baton::OpSignature& sig, const Column& c) const {
    const baton_result_t rc = c.on_device ? baton::bench::CallCollectiveOnStream(sig, c.send, c.recv, comm, stream)
                                          : baton::bench::CallCollective(sig, c.send, c.recv, comm);
    if (rc != baton_success) Die(sig.ToString() + ": " + baton_get_last_error(comm));
  }
  // Returns when what the column queued has completed.
  void Finish(const Column& c) const {
    if (!c.on_device) return;
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    baton_result_t async = baton_success;
    baton_comm_get_async_error(comm, &async);
    if (async != baton_success) Die(std::string("stream-ordered collective failed: ") + baton_get_last_error(comm));
  }
  // Mean microseconds per call over `iters` back-to-back calls (after a
  // barrier and two untimed calls, the first of which may register buffers).
  double Time(const baton::OpSignature& sig, const Column& c, int iters) const {
    for (int w = 0; w < 2; ++w) Call(sig, c);
    Finish(c);
    baton_barrier(comm, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) Call(sig, c);
    Finish(c);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  }
  // One call on the reference input, its result compared element by
  // element with the reference; returns the wrong elements.
  uint64_t WrongElements(const baton::OpSignature& sig, const Column& c, uint64_t buffer_bytes) const {
    namespace ref = baton::reference;
    std::vector<ref::Bytes> sends(world);
    for (int r = 0; r < world; ++r) sends[r] = ref::MakeSendBuffer(sig, world, r);
    const ref::Bytes want = ref::Expected(sig, world, rank, sends);
    if (c.on_device) {
      Check(cudaMemset(c.recv, 0xCD, buffer_bytes), "cudaMemset");
      if (!sends[rank].empty()) {
        Check(cudaMemcpy(c.send, sends[rank].data(), sends[rank].size(), cudaMemcpyHostToDevice), "cudaMemcpy");
      }
    } else {
      std::memset(c.recv, 0xCD, buffer_bytes);
      if (!sends[rank].empty()) std::memcpy(c.send, sends[rank].data(), sends[rank].size());
    }
    Call(sig, c);
    Finish(c);
    ref::Bytes got(want.size());
    if (c.on_device && !got.empty()) {
      Check(cudaMemcpy(got.data(), c.recv, got.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    } else if (!got.empty()) {
      std::memcpy(got.data(), c.recv, got.size());
    }
    const uint64_t es = baton::DataTypeSize(sig.dtype);
    uint64_t wrong = 0;
    for (uint64_t e = 0; e < want.size() / es; ++e) wrong += std::memcmp(&got[e * es], &want[e * es], es) != 0;
    return wrong;
  }
};

struct SweepOptions {
  baton::Collective collective = baton::Collective::kAllReduce;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64ull << 20;
  double factor = 2;
  int iters = 20;
  bool host_only = false;
};

int CollectiveSweep(const SweepOptions& o) {
  using baton::bench::CountForSize;
  CollectiveRun run;
  if (baton_comm_init_from_env(&run.comm) != baton_success) {
    Die(std::string("init: ") + baton_get_last_error(run.comm));
  }
  baton_comm_user_rank(run.comm, &run.rank);
  baton_comm_count(run.comm, &run.world);
  const baton::Collective coll = o.collective;
  const uint64_t es = sizeof(float);
  const uint64_t max_count = std::max<uint64_t>(CountForSize(coll, o.max_bytes, es, run.world), 1);
  const uint64_t buffer_bytes = std::max<uint64_t>(baton::bench::SizeOfCount(coll, max_count, es, run.world), 64);
  Column device{true}, host{false};
  if (!o.host_only) {
    int devices = 0;
    Check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    const char* local = std::getenv("BATON_LOCAL_RANK");
    const int gpu = (local ? std::atoi(local) : run.rank) % devices;
    Check(cudaSetDevice(gpu), "cudaSetDevice");
    Check(cudaStreamCreateWithFlags(&run.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    if (baton_mem_alloc_device(&device.send, buffer_bytes, gpu) != baton_success ||
        baton_mem_alloc_device(&device.recv, buffer_bytes, gpu) != baton_success) {
      Die(std::string("device allocation: ") + baton_get_last_error(run.comm));
    }
  }
  if (baton_mem_alloc(&host.send, buffer_bytes) != baton_success ||
      baton_mem_alloc(&host.recv, buffer_bytes) != baton_success) {
    Die(std::string("host allocation: ") + baton_get_last_error(run.comm));
  }
  const double bus_factor = baton::bench::BusBandwidthFactor(coll, run.world);
  if (run.rank == 0) {
    std::printf("# baton-gpu-bench %s: %d ranks, float32 sum, out of place, root 0; size and busbw as nccl-tests "
                "(busbw = size/time * %.3f)%s\n",
                baton::CollectiveName(coll), run.world, bus_factor,
                o.host_only ? "; host buffers only (--host-only)" : "");
    std::printf("#%12s %12s %12s %12s %12s %12s %9s %7s\n", "size(B)", "count", "device us", "device busbw",
                "host us", "host busbw", "dev/host", "#wrong");
  }
  uint64_t all_wrong = 0;
  for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes); s *= o.factor) {
    const uint64_t count = CountForSize(coll, static_cast<uint64_t>(s), es, run.world);
    if (count == 0) continue;  // less than one element per rank
    const uint64_t size = baton::bench::SizeOfCount(coll, count, es, run.world);
    const baton::OpSignature sig{coll, baton::DataType::kFloat32, baton::RedOp::kSum, baton::HasRoot(coll) ? 0 : -1,
                                 count};
    double us[2] = {o.host_only ? 0 : run.Time(sig, device, o.iters), run.Time(sig, host, o.iters)};
    uint64_t wrong = (o.host_only ? 0 : run.WrongElements(sig, device, buffer_bytes)) +
                     run.WrongElements(sig, host, buffer_bytes);
    double slowest[2] = {0, 0};
    uint64_t total_wrong = 0;
    if (baton_allreduce(us, slowest, 2, baton_float64, baton_max, run.comm, nullptr) != baton_success ||
        baton_allreduce(&wrong, &total_wrong, 1, baton_uint64, baton_sum, run.comm, nullptr) != baton_success) {
      Die(std::string("allreduce of the results: ") + baton_get_last_error(run.comm));
    }
    all_wrong += total_wrong;
    if (run.rank == 0) {
      const double host_bw = size / (slowest[1] * 1e3) * bus_factor;
      if (o.host_only) {
        std::printf(" %12llu %12llu %12s %12s %12.1f %12.3f %9s %7llu\n", static_cast<unsigned long long>(size),
                    static_cast<unsigned long long>(count), "-", "-", slowest[1], host_bw, "-",
                    static_cast<unsigned long long>(total_wrong));
      } else {
        const double dev_bw = size / (slowest[0] * 1e3) * bus_factor;
        std::printf(" %12llu %12llu %12.1f %12.3f %12.1f %12.3f %9.2f %7llu\n", static_cast<unsigned long long>(size),
                    static_cast<unsigned long long>(count), slowest[0], dev_bw, slowest[1], host_bw,
                    dev_bw / host_bw, static_cast<unsigned long long>(total_wrong));
      }
      std::fflush(stdout);
    }
  }
  if (run.rank == 0) {
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(all_wrong),
                all_wrong ? "FAILED" : "OK");
  }
  for (void* p : {device.send, device.recv, host.send, host.recv}) {
    if (p != nullptr) baton_mem_free(p);
  }
  if (run.stream != nullptr) cudaStreamDestroy(run.stream);
  baton_comm_destroy(run.comm);
  return all_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const bool kernels = std::strcmp(argv[1], "kernels") == 0;
  SweepOptions o;
  if (!kernels) {
    const auto parsed = baton::ParseCollective(argv[1]);
    if (!parsed || *parsed == baton::Collective::kSend || *parsed == baton::Collective::kRecv ||
        *parsed == baton::Collective::kBarrier || *parsed == baton::Collective::kSplit) {
      std::fprintf(stderr, "baton-gpu-bench: unknown collective '%s'\n%s", argv[1], kUsage);
      return 2;
    }
    o.collective = *parsed;
  } else {
    o.min_bytes = 1ull << 20;
    o.max_bytes = 256ull << 20;
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--host-only" && !kernels) {
      o.host_only = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "baton-gpu-bench: %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    const std::string v = argv[++i];
    bool ok = true;
    if (a == "-b") ok = baton::ParseByteSize(v, &o.min_bytes);
    else if (a == "-e") ok = baton::ParseByteSize(v, &o.max_bytes);
    else if (a == "-f") ok = (o.factor = std::atof(v.c_str())) > 1;
    else if (a == "-n") ok = (o.iters = std::atoi(v.c_str())) > 0;
    else ok = false;
    if (!ok || o.min_bytes == 0 || o.min_bytes > o.max_bytes) {
      std::fprintf(stderr, "baton-gpu-bench: bad option %s %s\n%s", a.c_str(), v.c_str(), kUsage);
      return 2;
    }
  }
  if (o.host_only) return CollectiveSweep(o);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "baton-gpu-bench: no usable GPU here (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 77;  // "skipped" for scripts
  }
  return kernels ? Kernels(o.min_bytes, o.max_bytes, o.factor, o.iters) : CollectiveSweep(o);
}
