// baton-gpu-bench: how close Baton's GPU paths come to what the device
// allows, measured as ratios in one run.
//
//   baton-gpu-bench kernels [-b MIN] [-e MAX]
//     The device's copy bandwidth (cudaMemcpy device to device, bytes read
//     + written per second) against the reduction kernel's (two arrays read,
//     one written), float32 and bfloat16 sum, per size. No daemon needed.
//
//   baton-run --nodes N --ranks-per-node R -- baton-gpu-bench allreduce [-b MIN] [-e MAX] [-n ITERS]
//     AllReduce (float32 sum) on device buffers, stream-ordered, against the
//     same sizes on host buffers from baton_mem_alloc, same ranks, same run;
//     every size's device result is checked element by element. Rank r uses
//     device BATON_LOCAL_RANK % (devices): several ranks may share one GPU.
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
#include "gpu/reduce_kernels.h"

namespace {

const char* kUsage = R"(usage: baton-gpu-bench kernels [-b MIN] [-e MAX]
       baton-run ... -- baton-gpu-bench allreduce [-b MIN] [-e MAX] [-n ITERS]
  -b MIN    smallest size in bytes (K/M/G suffixes)   default 1M (kernels), 8 (allreduce)
  -e MAX    largest size                             default 256M (kernels), 64M (allreduce)
  -n ITERS  timed iterations per size                default 20
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

int Kernels(uint64_t min_bytes, uint64_t max_bytes, int iters) {
  Check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t stream;
  Check(cudaStreamCreate(&stream), "cudaStreamCreate");
  uint8_t* mem = nullptr;
  Check(cudaMalloc(reinterpret_cast<void**>(&mem), 3 * max_bytes), "cudaMalloc");
  Check(cudaMemset(mem, 0, 3 * max_bytes), "cudaMemset");
  uint8_t* a = mem;
  uint8_t* b = mem + max_bytes;
  uint8_t* d = mem + 2 * max_bytes;
  std::printf("# baton-gpu-bench kernels on %s: GB/s counts bytes read + written\n", prop.name);
  std::printf("#%12s %11s %14s %14s %9s %9s\n", "size(B)", "copy GB/s", "f32 sum GB/s", "bf16 sum GB/s",
              "f32/copy", "bf16/copy");
  for (uint64_t n = min_bytes; n <= max_bytes; n *= 2) {
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
    const double copy_bw = 2.0 * n / copy / 1e9;
    const double f32_bw = 3.0 * n / f32 / 1e9;
    const double bf16_bw = 3.0 * n / bf16 / 1e9;
    std::printf(" %12llu %11.1f %14.1f %14.1f %9.2f %9.2f\n", static_cast<unsigned long long>(n), copy_bw, f32_bw,
                bf16_bw, f32_bw / copy_bw, bf16_bw / copy_bw);
  }
  cudaFree(mem);
  cudaStreamDestroy(stream);
  return 0;
}

int AllReduce(uint64_t min_bytes, uint64_t max_bytes, int iters) {
  baton_comm_t comm = nullptr;
  if (baton_comm_init_from_env(&comm) != baton_success) Die(std::string("init: ") + baton_get_last_error(comm));
  int rank = 0, world = 0, devices = 0;
  baton_comm_user_rank(comm, &rank);
  baton_comm_count(comm, &world);
  Check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const char* local = std::getenv("BATON_LOCAL_RANK");
  const int device = (local ? std::atoi(local) : rank) % devices;
  Check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream;
  Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  void* dbuf = nullptr;
  void* hbuf = nullptr;
  if (baton_mem_alloc_device(&dbuf, max_bytes, device) != baton_success ||
      baton_mem_alloc(&hbuf, max_bytes) != baton_success) {
    Die(std::string("allocation: ") + baton_get_last_error(comm));
  }
  auto sync_all = [&] { baton_barrier(comm, nullptr); };
  if (rank == 0) {
    std::printf("# baton-gpu-bench allreduce: %d ranks, float32 sum, busbw = size/time * 2(n-1)/n\n", world);
    std::printf("#%12s %12s %12s %12s %12s %9s %7s\n", "size(B)", "device us", "device busbw", "host us",
                "host busbw", "dev/host", "#wrong");
  }
  const double factor = world > 1 ? 2.0 * (world - 1) / world : 1.0;
  uint64_t all_wrong = 0;
  for (uint64_t n = std::max<uint64_t>(min_bytes, 4); n <= max_bytes; n *= 2) {
    const uint64_t count = n / 4;
    // Device: stream-ordered, timed on the host around a stream sync.
    sync_all();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (baton_allreduce_stream(dbuf, dbuf, count, baton_float32, baton_sum, comm, stream) != baton_success) {
        Die(std::string("allreduce_stream: ") + baton_get_last_error(comm));
      }
    }
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    double dev_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    // Host buffers, same sizes.
    sync_all();
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (baton_allreduce(hbuf, hbuf, count, baton_float32, baton_sum, comm, nullptr) != baton_success) {
        Die(std::string("allreduce: ") + baton_get_last_error(comm));
      }
    }
    double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    // Check one device run against the reference.
    baton::OpSignature sig{baton::Collective::kAllReduce, baton::DataType::kFloat32, baton::RedOp::kSum, -1, count};
    std::vector<baton::reference::Bytes> sends(world);
    for (int r = 0; r < world; ++r) sends[r] = baton::reference::MakeSendBuffer(sig, world, r);
    Check(cudaMemcpy(dbuf, sends[rank].data(), n, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (baton_allreduce_stream(dbuf, dbuf, count, baton_float32, baton_sum, comm, stream) != baton_success) {
      Die(std::string("allreduce_stream: ") + baton_get_last_error(comm));
    }
    baton::reference::Bytes got(n);
    Check(cudaMemcpyAsync(got.data(), dbuf, n, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    baton_result_t async = baton_success;
    baton_comm_get_async_error(comm, &async);
    if (async != baton_success) Die(std::string("async error: ") + baton_get_last_error(comm));
    const baton::reference::Bytes want = baton::reference::Expected(sig, world, rank, sends);
    uint64_t wrong = 0;
    for (uint64_t e = 0; e < count; ++e) wrong += std::memcmp(&got[e * 4], &want[e * 4], 4) != 0;
    double slow[2] = {dev_us, host_us}, slowest[2] = {0, 0};
    uint64_t total_wrong = 0;
    baton_allreduce(slow, slowest, 2, baton_float64, baton_max, comm, nullptr);
    baton_allreduce(&wrong, &total_wrong, 1, baton_uint64, baton_sum, comm, nullptr);
    all_wrong += total_wrong;
    if (rank == 0) {
      const double dev_bw = n / (slowest[0] * 1e3) * factor;
      const double host_bw = n / (slowest[1] * 1e3) * factor;
      std::printf(" %12llu %12.1f %12.3f %12.1f %12.3f %9.2f %7llu\n", static_cast<unsigned long long>(n), slowest[0],
                  dev_bw, slowest[1], host_bw, dev_bw / host_bw, static_cast<unsigned long long>(total_wrong));
      std::fflush(stdout);
    }
  }
  if (rank == 0) std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(all_wrong),
                             all_wrong ? "FAILED" : "OK");
  baton_mem_free(dbuf);
  baton_mem_free(hbuf);
  cudaStreamDestroy(stream);
  baton_comm_destroy(comm);
  return all_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "kernels") != 0 && std::strcmp(argv[1], "allreduce") != 0)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const bool kernels = std::strcmp(argv[1], "kernels") == 0;
  uint64_t min_bytes = kernels ? 1ull << 20 : 8, max_bytes = kernels ? 256ull << 20 : 64ull << 20;
  int iters = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    bool ok = true;
    if (a == "-b") ok = baton::ParseByteSize(v, &min_bytes);
    else if (a == "-e") ok = baton::ParseByteSize(v, &max_bytes);
    else if (a == "-n") ok = (iters = std::atoi(v.c_str())) > 0;
    else ok = false;
    if (!ok || min_bytes == 0 || min_bytes > max_bytes) {
      std::fprintf(stderr, "baton-gpu-bench: bad option %s %s\n%s", a.c_str(), v.c_str(), kUsage);
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "baton-gpu-bench: no usable GPU here (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 77;  // "skipped" for scripts
  }
  return kernels ? Kernels(min_bytes, max_bytes, iters) : AllReduce(min_bytes, max_bytes, iters);
}
