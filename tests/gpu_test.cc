// GPU tests (label gpu): device buffers through real daemons, checked
// element by element against the reference; the stream-ordering contract;
// the reduction kernels against the host kernels. Each test skips, saying
// why, on a machine without a usable GPU. Ranks are threads of this process
// sharing device 0 (the daemon opens their allocations through CUDA IPC).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/reference.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"
#include "gpu/reduce_kernels.h"
#include "gpu/vmm_mapping.h"
#include "tests/gpu_test_kernels.h"
#include "tests/collective_call.h"
#include "tests/rank_threads.h"

namespace baton::test {
namespace {
using namespace baton::reference;

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    if (!gpu::GetCudaSupport().available) GTEST_SKIP() << gpu::GetCudaSupport().reason; \
  } while (0)

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

// Where a test's device memory comes from.
enum class Allocator {
  kCudaMalloc,  // shared with batond as a CUDA IPC handle
  kBaton,       // baton_mem_alloc_device: cuMemCreate shared as an fd where the device can
  kVmm,         // the application's own cuMemCreate, exportable as a POSIX fd (as PyTorch's expandable segments)
  kVmmPrivate,  // cuMemCreate without a shareable handle type: batond cannot open it (bounce buffers)
  kManaged,     // cudaMallocManaged: bounced
  kAsyncPool,   // cudaMallocAsync from the device's default pool: bounced
};

const char* Name(Allocator a) {
  switch (a) {
    case Allocator::kCudaMalloc: return "cudaMalloc";
    case Allocator::kBaton: return "baton";
    case Allocator::kVmm: return "vmm";
    case Allocator::kVmmPrivate: return "vmm_private";
    case Allocator::kManaged: return "managed";
    case Allocator::kAsyncPool: return "async_pool";
  }
  return "?";
}

// Device memory owned by a test; freed on every path.
struct DeviceBuffer {
  void* ptr = nullptr;
  Allocator allocator = Allocator::kCudaMalloc;
  std::unique_ptr<gpu::VmmMapping> vmm;
  ~DeviceBuffer() {
    if (ptr == nullptr || vmm != nullptr) return;  // the mapping goes with `vmm`
    if (allocator == Allocator::kBaton) {
      baton_mem_free(ptr);
    } else if (allocator == Allocator::kAsyncPool) {
      cudaFreeAsync(ptr, nullptr);
      cudaStreamSynchronize(nullptr);
    } else {
      cudaFree(ptr);
    }
  }
  bool Allocate(Allocator a, baton_comm_t comm, size_t bytes) {
    allocator = a;
    switch (a) {
      case Allocator::kCudaMalloc: return cudaMalloc(&ptr, bytes) == cudaSuccess;
      case Allocator::kManaged: return cudaMallocManaged(&ptr, bytes) == cudaSuccess;
      case Allocator::kAsyncPool:
        return cudaMallocAsync(&ptr, bytes, nullptr) == cudaSuccess && cudaStreamSynchronize(nullptr) == cudaSuccess;
      case Allocator::kBaton: return baton_comm_mem_alloc_device(comm, &ptr, bytes, 0) == baton_success;
      case Allocator::kVmm:
      case Allocator::kVmmPrivate: {
        const Status st = gpu::VmmMapping::Create(0, bytes, a == Allocator::kVmm, &vmm);
        if (!st.ok()) ADD_FAILURE() << st.ToString();
        ptr = st.ok() ? vmm->data() : nullptr;
        return st.ok();
      }
    }
    return false;
  }
};

TEST(GpuKernels, ReduceMatchesTheHostKernelForEveryTypeAndReduction) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  for (uint32_t t = 0; t < kNumDataTypes; ++t) {
    for (uint32_t o = 0; o < kNumRedOps; ++o) {
      const auto dtype = static_cast<DataType>(t);
      const auto op = static_cast<RedOp>(o);
      const uint64_t es = DataTypeSize(dtype);
      // Aligned (vector path) and one element off (scalar path), with a tail.
      for (uint64_t offset : {0ull, 1ull}) {
        const uint64_t count = (1ull << 18) + 3;
        Bytes a(count * es), b(count * es);
        FillPattern(dtype, op, 0, 11, count, a.data());
        FillPattern(dtype, op, 1, 11, count, b.data());
        Bytes want = a;
        ReduceInto(dtype, op, want.data(), b.data(), count);
        uint8_t* dev = nullptr;
        CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dev), 3 * (count + offset) * es));
        uint8_t* da = dev + offset * es;
        uint8_t* db = da + (count + offset) * es;
        uint8_t* dd = db + (count + offset) * es;
        CUDA_OK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
        Status st = gpu::LaunchReduce(dtype, op, dd, da, db, count, nullptr);
        EXPECT_TRUE(st.ok()) << st.ToString();
        Bytes got(count * es);
        CUDA_OK(cudaMemcpy(got.data(), dd, got.size(), cudaMemcpyDeviceToHost));
        cudaFree(dev);
        std::string msg;
        EXPECT_EQ(FirstMismatch(dtype, got, want, &msg), -1)
            << DataTypeName(dtype) << " " << RedOpName(op) << " offset " << offset << ": " << msg;
      }
    }
  }
}

// A fused fold (what PlanDeviceSteps makes of a chain of folds into one
// region): the bits of the successive host reductions, for every type and
// reduction, 2, 5 and 16 operands, aligned and not, into a buffer of its
// own and in place (the destination its first operand).
TEST(GpuKernels, FoldIsTheSuccessiveReductionsBitForBit) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  for (uint32_t t = 0; t < kNumDataTypes; ++t) {
    for (uint32_t o = 0; o < kNumRedOps; ++o) {
      const auto dtype = static_cast<DataType>(t);
      const auto op = static_cast<RedOp>(o);
      const uint64_t es = DataTypeSize(dtype);
      for (size_t n : {2u, 5u, 16u}) {
        for (uint64_t offset : {0ull, 1ull}) {
          for (bool in_place : {false, true}) {
            const uint64_t count = (1ull << 16) + 3;
            const uint64_t slot = (count + 1) * es;  // each operand's room, 16-byte multiple or not
            std::vector<Bytes> in(n, Bytes(count * es));
            for (size_t k = 0; k < n; ++k) FillPattern(dtype, op, static_cast<int>(k), 11, count, in[k].data());
            if (dtype == DataType::kFloat32 && op == RedOp::kSum) {
              // Magnitudes from 1e-4 to 1e4: the sum's rounding depends on the order.
              std::mt19937 gen(static_cast<uint32_t>(n * 2 + offset));
              std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
              std::uniform_int_distribution<int> exponent(-4, 4);
              for (Bytes& b : in) {
                for (uint64_t i = 0; i < count; ++i) {
                  const float v = mantissa(gen) * std::pow(10.0f, static_cast<float>(exponent(gen)));
                  std::memcpy(b.data() + i * 4, &v, 4);
                }
              }
            }
            Bytes want = in[0];
            for (size_t k = 1; k < n; ++k) ReduceInto(dtype, op, want.data(), in[k].data(), count);
            uint8_t* dev = nullptr;
            CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dev), (n + 1) * slot + 16));
            std::vector<const void*> operands(n);
            for (size_t k = 0; k < n; ++k) {
              uint8_t* p = dev + offset * es + k * slot;
              CUDA_OK(cudaMemcpy(p, in[k].data(), in[k].size(), cudaMemcpyHostToDevice));
              operands[k] = p;
            }
            uint8_t* dst = in_place ? const_cast<uint8_t*>(static_cast<const uint8_t*>(operands[0]))
                                    : dev + offset * es + n * slot;
            const Status st = gpu::LaunchFold(dtype, op, dst, operands.data(), n, count, nullptr);
            EXPECT_TRUE(st.ok()) << st.ToString();
            Bytes got(count * es);
            CUDA_OK(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDeviceToHost));
            cudaFree(dev);
            EXPECT_TRUE(got == want) << DataTypeName(dtype) << " " << RedOpName(op) << ", " << n
                                     << " operands, offset " << offset << (in_place ? ", in place" : "");
          }
        }
      }
    }
  }
}

// Checked before any CUDA call: runs without a GPU too.
TEST(GpuKernels, AFoldOfTooFewOrTooManyOperandsIsRefused) {
  std::vector<const void*> operands(17, nullptr);
  for (size_t n : {0u, 1u, 17u}) {
    const Status st = gpu::LaunchFold(DataType::kFloat32, RedOp::kSum, nullptr, operands.data(), n, 8, nullptr);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << n;
    EXPECT_NE(st.message().find("a fused fold of " + std::to_string(n) + " operands (2 to 16)"), std::string::npos)
        << st.ToString();
  }
}

// The last step of an average within a node on the GPU: the division, bit
// for bit the host's (DivideBy), for every type, divisors 3 and 8.
TEST(GpuKernels, DivideMatchesTheHostKernelForEveryType) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  for (uint32_t t = 0; t < kNumDataTypes; ++t) {
    const auto dtype = static_cast<DataType>(t);
    const uint64_t es = DataTypeSize(dtype);
    for (uint64_t divisor : {3ull, 8ull}) {
      const uint64_t count = (1ull << 16) + 5;
      Bytes x(count * es);
      FillPattern(dtype, RedOp::kAvg, 0, 11, count, x.data());
      Bytes want = x;
      DivideBy(dtype, want.data(), count, divisor);
      uint8_t* dev = nullptr;
      CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dev), x.size()));
      CUDA_OK(cudaMemcpy(dev, x.data(), x.size(), cudaMemcpyHostToDevice));
      Status st = gpu::LaunchDivide(dtype, dev, count, divisor, nullptr);
      EXPECT_TRUE(st.ok()) << st.ToString();
      Bytes got(x.size());
      CUDA_OK(cudaMemcpy(got.data(), dev, got.size(), cudaMemcpyDeviceToHost));
      cudaFree(dev);
      std::string msg;
      EXPECT_EQ(FirstMismatch(dtype, got, want, &msg), -1) << DataTypeName(dtype) << " / " << divisor << ": " << msg;
    }
  }
}

std::vector<OpSignature> Matrix(int world) {
  std::vector<OpSignature> out;
  for (Collective c : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce, Collective::kAllGather,
                       Collective::kReduceScatter, Collective::kScatter, Collective::kGather,
                       Collective::kAllToAll}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16, DataType::kInt32}) {
      for (RedOp o : {RedOp::kSum, RedOp::kMax, RedOp::kAvg}) {
        if (!IsReduction(c) && o != RedOp::kSum) continue;
        for (uint64_t count : {1ull, 1027ull, 1ull << 20}) {
          out.push_back({c, t, o, HasRoot(c) ? world - 1 : -1, count});
        }
      }
    }
  }
  return out;
}

// How a rank holds its buffers in one test.
enum class Placement { kDevice, kHost, kDeviceSendHostRecv };

struct MatrixCase {
  const char* name;
  int nodes;
  std::vector<int> node_of_rank;
  std::vector<Placement> placement;  // per rank
  bool on_stream;
  std::vector<std::string> daemon_args = {};
  bool fd_only = false;  // only memory batond can take as an fd (the daemon runs --device-sharing fd-only)
};

const MatrixCase kCases[] = {
    {"1node_x2_device", 1, {0, 0}, {Placement::kDevice, Placement::kDevice}, false},
    {"1node_x2_device_stream", 1, {0, 0}, {Placement::kDevice, Placement::kDevice}, true},
    // A daemon that takes GPU memory only as file descriptors (cuMemCreate).
    {"1node_x2_device_fd_only", 1, {0, 0}, {Placement::kDevice, Placement::kDevice}, false,
     {"--device-sharing", "fd-only"}, true},
    // Within one node, all-device collectives run on the GPU (device_execution.h);
    // four ranks give schedules of many steps.
    {"1node_x4_device_stream", 1, {0, 0, 0, 0},
     {Placement::kDevice, Placement::kDevice, Placement::kDevice, Placement::kDevice}, true},
    // The AllReduce and the Reduce spread over the ranks (spread_allreduce.h,
    // spread_reduce.h: their scratch pieces share this one GPU), and
    // the Broadcast's copies (spread_copy_out.h), which the daemon picks for
    // ranks on several GPUs, forced on this one.
    {"1node_x4_device_stream_spread", 1, {0, 0, 0, 0},
     {Placement::kDevice, Placement::kDevice, Placement::kDevice, Placement::kDevice}, true,
     {"--gpu-allreduce", "spread"}},
    // ... and with a host buffer among them, the worker stages instead.
    {"1node_x3_mixed", 1, {0, 0, 0}, {Placement::kDevice, Placement::kHost, Placement::kDeviceSendHostRecv}, false},
    {"2nodes_x1_device_stream", 2, {0, 1}, {Placement::kDevice, Placement::kDevice}, true},
    // Two GPU ranks per node: the local ends of each schedule run on the
    // GPUs and only the network middle is staged (device_ends.h).
    {"2nodes_x2_device_stream", 2, {0, 0, 1, 1},
     {Placement::kDevice, Placement::kDevice, Placement::kDevice, Placement::kDevice}, true},
    // ... with an AllReduce's ends spread over the ranks (as on several GPUs).
    {"2nodes_x2_device_stream_spread", 2, {0, 0, 1, 1},
     {Placement::kDevice, Placement::kDevice, Placement::kDevice, Placement::kDevice}, true,
     {"--gpu-allreduce", "spread"}},
    // Three per node: an AllGather's and a Broadcast's copy-out spread too
    // (spread_copy_out.h; two ranks per node leave nothing to spread), and
    // the Reduce root node's head (spread_reduce.h).
    {"2nodes_x3_device_stream_spread", 2, {0, 0, 0, 1, 1, 1},
     {Placement::kDevice, Placement::kDevice, Placement::kDevice, Placement::kDevice, Placement::kDevice,
      Placement::kDevice},
     true, {"--gpu-allreduce", "spread"}},
    {"2nodes_x2_mixed", 2, {0, 0, 1, 1},
     {Placement::kDevice, Placement::kHost, Placement::kDeviceSendHostRecv, Placement::kDevice}, false},
};

class GpuCollectives : public ::testing::TestWithParam<size_t> {};

// Every collective on device buffers (from cudaMalloc, baton_mem_alloc_device
// and the application's own cuMemCreate in turn, in place and not),
// blocking or stream-ordered, checked element by element; mixed placements
// across ranks in one collective.
TEST_P(GpuCollectives, MatchReferenceElementByElement) {
  SKIP_WITHOUT_GPU();
  const MatrixCase& mc = kCases[GetParam()];
  auto cluster = StartCluster(mc.nodes, mc.daemon_args);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  const int world = static_cast<int>(mc.node_of_rank.size());
  const auto ops = Matrix(world);
  std::mutex mu;
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (failures.size() < 20) failures.push_back(what);
  };
  std::string err = RunRanks(*cluster, mc.node_of_rank, UniqueJob("gpu"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    const Placement placement = mc.placement[rank];
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpSignature& sig = ops[i];
      for (bool in_place : {false, true}) {
        if (in_place && placement != Placement::kDevice) continue;
        const auto& [sends, want, send_bytes, recv_bytes, cap] = MakeRankCase(sig, world, rank);
        DeviceBuffer dsend, drecv;
        Bytes hsend(cap), hrecv(cap, 0xCD);
        const Allocator allocator = mc.fd_only ? (i % 2 == 0 ? Allocator::kBaton : Allocator::kVmm)
                                               : std::array{Allocator::kCudaMalloc, Allocator::kBaton,
                                                            Allocator::kVmm}[i % 3];
        auto alloc = [&](DeviceBuffer* b) { return b->Allocate(allocator, comm, cap); };
        const bool send_dev = placement != Placement::kHost;
        const bool recv_dev = placement == Placement::kDevice;
        if ((send_dev && !alloc(&dsend)) || (recv_dev && !alloc(&drecv))) {
          fail("allocation failed: " + std::string(baton_get_last_error(comm)));
          return;
        }
        uint8_t* send = send_dev ? static_cast<uint8_t*>(dsend.ptr) : hsend.data();
        uint8_t* recv = recv_dev ? static_cast<uint8_t*>(drecv.ptr) : hrecv.data();
        if (recv_dev) cudaMemset(recv, 0xCD, cap);
        const CallArguments args = PlaceArguments(sig, rank, in_place, send, recv, send_bytes, recv_bytes);
        if (send_bytes) {
          if (send_dev) {
            cudaMemcpy(args.input, sends[rank].data(), send_bytes, cudaMemcpyHostToDevice);
          } else {
            std::memcpy(args.input, sends[rank].data(), send_bytes);
          }
        }
        baton_result_t rc = mc.on_stream ? bench::CallCollectiveOnStream(sig, args.send, args.recv, comm, stream)
                                         : CallCollective(sig, args.send, args.recv, comm);
        if (rc != baton_success) {
          fail(sig.ToString() + " rank " + std::to_string(rank) + ": " + baton_get_last_error(comm));
          return;
        }
        if (mc.on_stream) cudaStreamSynchronize(stream);
        baton_result_t async = baton_success;
        baton_comm_get_async_error(comm, &async);
        if (async != baton_success) {
          fail(sig.ToString() + " rank " + std::to_string(rank) + " async: " + baton_get_last_error(comm));
          return;
        }
        if (want.empty()) continue;
        Bytes got(want.size());
        if (recv_dev) {
          cudaMemcpy(got.data(), args.recv, got.size(), cudaMemcpyDeviceToHost);
        } else {
          std::memcpy(got.data(), args.recv, got.size());
        }
        std::string msg;
        if (FirstMismatch(sig.dtype, got, want, &msg) >= 0) {
          fail(sig.ToString() + (in_place ? " in place" : "") + " rank " + std::to_string(rank) + ": " + msg);
        }
      }
    }
    cudaStreamDestroy(stream);
  });
  ASSERT_EQ(err, "");
  for (const auto& f : failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(Placements, GpuCollectives, ::testing::Range<size_t>(0, std::size(kCases)),
                         [](const auto& info) { return std::string(kCases[info.param].name); });

// Bytes per transport in the daemon's counters (`batonctl counters`:
// "transport gpu  sent N B, received N B").
std::map<std::string, uint64_t> TransportBytes(const LocalCluster& cluster) {
  std::istringstream out(Batonctl("--address " + cluster.rendezvous() + " counters"));
  std::map<std::string, uint64_t> bytes;
  std::string line;
  while (std::getline(out, line)) {
    char name[16] = {};
    unsigned long long sent = 0;
    if (std::sscanf(line.c_str(), "transport %15s sent %llu B", name, &sent) == 2) bytes[name] = sent;
  }
  return bytes;
}

// Runs `run` on two nodes of fresh daemons, first as they start, then with
// --gpu-collectives off, and hands back each run's transport counters.
struct OnAndOff {
  std::map<std::string, uint64_t> on, off;
};
template <typename Run>
void RunOnAndOff(Run run, OnAndOff* out) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  run(*cluster);
  out->on = TransportBytes(*cluster);
  auto staging = StartCluster(2, {"--gpu-collectives", "off"});
  ASSERT_TRUE(staging->status().ok()) << staging->status().ToString();
  run(*staging);
  out->off = TransportBytes(*staging);
}

// Within one node, a collective of device buffers runs on the GPU: the
// daemon counts its local traffic under "gpu" and none through host memory
// ("shm"). With one rank's buffer in host memory the same collective is
// staged: "shm" grows, "gpu" does not; so with --gpu-collectives off.
// Results checked every time.
TEST(GpuOneNode, DeviceBuffersAreReducedOnTheGpuAndMixedOnesStaged) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kCount = 1 << 20;  // far above the fast path's limit
  auto run = [&](const LocalCluster& cluster, bool rank1_on_host) {
    std::string err = RunRanks(cluster, {0, 0}, UniqueJob("gpu-path"), [&](int rank, baton_comm_t comm) {
      cudaSetDevice(0);
      std::vector<float> host(kCount, static_cast<float>(rank + 1));
      DeviceBuffer buf;
      float* x = host.data();
      if (!(rank == 1 && rank1_on_host)) {
        ASSERT_EQ(cudaMalloc(&buf.ptr, kCount * sizeof(float)), cudaSuccess);
        x = static_cast<float*>(buf.ptr);
        cudaMemcpy(x, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
      }
      for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(baton_allreduce(x, x, kCount, baton_float32, baton_sum, comm, nullptr), baton_success)
            << baton_get_last_error(comm);
      }
      if (x != host.data()) cudaMemcpy(host.data(), x, kCount * sizeof(float), cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < kCount; ++i) {
        if (host[i] != 12.0f) {  // in place, three times: 1 + 2 = 3, 3 + 3 = 6, 6 + 6 = 12
          ADD_FAILURE() << "rank " << rank << " element " << i << ": got " << host[i] << ", want 12";
          break;
        }
      }
    });
    ASSERT_EQ(err, "");
  };
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  run(*cluster, /*rank1_on_host=*/false);
  const auto device_only = TransportBytes(*cluster);
  EXPECT_GE(device_only.at("gpu"), 3 * kCount * sizeof(float)) << "collectives of GPU buffers did not run on the GPU";
  EXPECT_EQ(device_only.at("shm"), 0u) << "collectives of GPU buffers went through host memory";
  run(*cluster, /*rank1_on_host=*/true);
  const auto mixed = TransportBytes(*cluster);
  EXPECT_EQ(mixed.at("gpu"), device_only.at("gpu"));
  EXPECT_GE(mixed.at("shm"), 3 * kCount * sizeof(float));

  auto staging = StartCluster(1, {"--gpu-collectives", "off"});
  ASSERT_TRUE(staging->status().ok()) << staging->status().ToString();
  run(*staging, /*rank1_on_host=*/false);
  const auto off = TransportBytes(*staging);
  EXPECT_EQ(off.at("gpu"), 0u) << "--gpu-collectives off, yet a collective ran on the GPU";
  EXPECT_GE(off.at("shm"), 3 * kCount * sizeof(float));
}

// Across two nodes of two GPU ranks, an AllReduce's local steps (the
// node's reduction and copy-out) run on the GPU (device_ends.h): node 0's
// daemon counts them under "gpu" besides its TCP traffic; with
// --gpu-collectives off they run on staged host memory, "gpu" stays 0.
// Results checked every time.
TEST(GpuTwoNodes, LocalStepsOfDeviceBuffersRunOnTheGpu) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kCount = 1 << 20;
  constexpr size_t kBytes = kCount * sizeof(float);
  auto run = [&](const LocalCluster& cluster) {
    std::string err = RunRanks(cluster, {0, 0, 1, 1}, UniqueJob("gpu-ends"), [&](int rank, baton_comm_t comm) {
      cudaSetDevice(0);
      std::vector<float> host(kCount, static_cast<float>(rank + 1));
      DeviceBuffer buf;
      ASSERT_EQ(cudaMalloc(&buf.ptr, kBytes), cudaSuccess);
      float* x = static_cast<float*>(buf.ptr);
      ASSERT_EQ(cudaMemcpy(x, host.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
      for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(baton_allreduce(x, x, kCount, baton_float32, baton_sum, comm, nullptr), baton_success)
            << baton_get_last_error(comm);
      }
      ASSERT_EQ(cudaMemcpy(host.data(), x, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < kCount; ++i) {
        if (host[i] != 160.0f) {  // in place, three times: 1 + 2 + 3 + 4 = 10, then 40, then 160
          ADD_FAILURE() << "rank " << rank << " element " << i << ": got " << host[i] << ", want 160";
          break;
        }
      }
    });
    ASSERT_EQ(err, "");
  };
  OnAndOff bytes;
  RunOnAndOff(run, &bytes);
  if (HasFatalFailure()) return;
  EXPECT_GE(bytes.on.at("gpu"), 3 * kBytes) << "the node's reduction of GPU buffers did not run on the GPU";
  EXPECT_GT(bytes.on.at("tcp"), 0u);
  EXPECT_EQ(bytes.off.at("gpu"), 0u) << "--gpu-collectives off, yet local steps ran on the GPU";
  EXPECT_GE(bytes.off.at("shm"), 3 * kBytes);
}

// Across nodes a ReduceScatter's work vector is scratch: with the ends on
// the GPUs the node's ranks are folded into GPU scratch (counted under
// gpu) and only that vector is staged; with --gpu-collectives off, every
// rank's input is staged and the host folds them. The result either way,
// element by element.
TEST(GpuTwoNodes, AReduceScatterFoldsTheNodeInGpuScratch) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kBlock = (1 << 18) + 5;  // one rank's output
  constexpr size_t kRanks = 4;
  auto run = [&](const LocalCluster& cluster) {
    std::string err = RunRanks(cluster, {0, 0, 1, 1}, UniqueJob("gpu-rs-ends"), [&](int rank, baton_comm_t comm) {
      cudaSetDevice(0);
      std::vector<float> input(kRanks * kBlock);
      for (size_t j = 0; j < input.size(); ++j) input[j] = static_cast<float>(rank + 1) + static_cast<float>(j % 7);
      DeviceBuffer send, recv;
      ASSERT_EQ(cudaMalloc(&send.ptr, input.size() * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&recv.ptr, kBlock * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(send.ptr, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(baton_reducescatter(send.ptr, recv.ptr, kBlock, baton_float32, baton_sum, comm, nullptr), baton_success)
          << baton_get_last_error(comm);
      std::vector<float> out(kBlock);
      ASSERT_EQ(cudaMemcpy(out.data(), recv.ptr, kBlock * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < kBlock; ++i) {
        const float want = 10.0f + 4.0f * static_cast<float>((rank * kBlock + i) % 7);  // 1 + 2 + 3 + 4, and 4 x (j % 7)
        if (out[i] != want) {
          ADD_FAILURE() << "rank " << rank << " element " << i << ": got " << out[i] << ", want " << want;
          break;
        }
      }
    });
    ASSERT_EQ(err, "");
  };
  OnAndOff bytes;
  RunOnAndOff(run, &bytes);
  if (HasFatalFailure()) return;
  EXPECT_GT(bytes.on.at("gpu"), 0u) << "the node's fold of GPU buffers did not run on the GPU";
  EXPECT_GT(bytes.on.at("tcp"), 0u);
  EXPECT_EQ(bytes.off.at("gpu"), 0u) << "--gpu-collectives off, yet local steps ran on the GPU";
}

// Send and Recv between device buffers of two ranks on one node, blocking
// and stream-ordered: matched in the daemon on staged host memory (they are
// never left to the worker's GPU path), every element checked.
TEST(GpuOneNode, SendRecvBetweenDeviceBuffers) {
  SKIP_WITHOUT_GPU();
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  constexpr size_t kCount = (1 << 18) + 3;
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-p2p"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    DeviceBuffer buf;
    ASSERT_EQ(cudaMalloc(&buf.ptr, kCount * sizeof(int32_t)), cudaSuccess);
    for (bool on_stream : {false, true}) {
      std::vector<int32_t> host(kCount);
      for (size_t i = 0; i < kCount; ++i) host[i] = rank == 0 ? static_cast<int32_t>(i * 7 + on_stream) : -1;
      cudaMemcpy(buf.ptr, host.data(), kCount * sizeof(int32_t), cudaMemcpyHostToDevice);
      baton_result_t rc = rank == 0
          ? (on_stream ? baton_send_stream(buf.ptr, kCount, baton_int32, 1, comm, stream)
                       : baton_send(buf.ptr, kCount, baton_int32, 1, comm, nullptr))
          : (on_stream ? baton_recv_stream(buf.ptr, kCount, baton_int32, 0, comm, stream)
                       : baton_recv(buf.ptr, kCount, baton_int32, 0, comm, nullptr));
      ASSERT_EQ(rc, baton_success) << baton_get_last_error(comm);
      if (on_stream) cudaStreamSynchronize(stream);
      baton_result_t async = baton_success;
      baton_comm_get_async_error(comm, &async);
      ASSERT_EQ(async, baton_success) << baton_get_last_error(comm);
      if (rank == 0) continue;
      cudaMemcpy(host.data(), buf.ptr, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < kCount; ++i) {
        if (host[i] != static_cast<int32_t>(i * 7 + on_stream)) {
          ADD_FAILURE() << (on_stream ? "stream-ordered" : "blocking") << " recv element " << i << ": got "
                        << host[i] << ", want " << i * 7 + on_stream;
          break;
        }
      }
    }
    cudaStreamDestroy(stream);
  });
  ASSERT_EQ(err, "");
}

// The ordering contract: the collective reads its input only after the
// kernel queued before it wrote it, work queued after it sees its output,
// and the host is not held up. The first kernel waits for a host gate that
// the test opens only after every rank's call returned, so "the call did not
// block" is checked without any timing: had it blocked, the test would hang.
TEST(GpuStreamOrdering, KernelBeforeIsIncludedAndKernelAfterSeesTheResult) {
  SKIP_WITHOUT_GPU();
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  constexpr size_t kCount = 1 << 20;
  uint32_t* gate = nullptr;
  CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&gate), sizeof(uint32_t), cudaHostAllocMapped));
  *reinterpret_cast<volatile uint32_t*>(gate) = 0;
  uint32_t* gate_dev = nullptr;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_dev), gate, 0));
  std::atomic<int> returned{0};
  std::vector<std::vector<float>> results(2);
  std::vector<cudaError_t> query(2, cudaSuccess);
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-order"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    DeviceBuffer buf;
    cudaMalloc(&buf.ptr, kCount * sizeof(float));
    auto* x = static_cast<float*>(buf.ptr);
    cudaMemsetAsync(x, 0, kCount * sizeof(float), stream);
    LaunchWaitThenFill(gate_dev, x, kCount, static_cast<float>(rank + 1), stream);  // input: 1 and 2
    if (baton_allreduce_stream(x, x, kCount, baton_float32, baton_sum, comm, stream) != baton_success) {
      ADD_FAILURE() << baton_get_last_error(comm);
    }
    LaunchScale(x, kCount, 10.0f, stream);  // after: (1 + 2) * 10
    query[rank] = cudaStreamQuery(stream);  // the gate is closed: cannot be done
    ++returned;
    if (rank == 0) {
      while (returned < 2) std::this_thread::yield();
      __atomic_store_n(gate, 1u, __ATOMIC_RELEASE);
    }
    cudaStreamSynchronize(stream);
    results[rank].resize(kCount);
    cudaMemcpy(results[rank].data(), x, kCount * sizeof(float), cudaMemcpyDeviceToHost);
    baton_result_t async = baton_success;
    baton_comm_get_async_error(comm, &async);
    EXPECT_EQ(async, baton_success) << baton_get_last_error(comm);
    cudaStreamDestroy(stream);
  });
  cudaFreeHost(gate);
  ASSERT_EQ(err, "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(query[r], cudaErrorNotReady) << "rank " << r;
    ASSERT_EQ(results[r].size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      if (results[r][i] != 30.0f) {
        ADD_FAILURE() << "rank " << r << " element " << i << ": got " << results[r][i] << ", want 30";
        break;
      }
    }
  }
}

// A stream-ordered call that fails (ranks disagree on the count) still
// releases the stream, and the error arrives through the async error with
// the daemon's message.
TEST(GpuStreamOrdering, AFailedOperationReleasesTheStreamAndReportsAsyncError) {
  SKIP_WITHOUT_GPU();
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  std::vector<baton_result_t> async(2, baton_success);
  std::vector<std::string> message(2);
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-fail"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    DeviceBuffer buf;
    cudaMalloc(&buf.ptr, 4096);
    baton_allreduce_stream(buf.ptr, buf.ptr, rank == 0 ? 16 : 32, baton_float32, baton_sum, comm, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // released, not stuck
    baton_comm_get_async_error(comm, &async[rank]);
    message[rank] = baton_get_last_error(comm);
    cudaStreamDestroy(stream);
  });
  ASSERT_EQ(err, "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(async[r], baton_mismatch) << message[r];
    EXPECT_NE(message[r].find("count"), std::string::npos) << message[r];
  }
}

// Application memory laid out as PyTorch's expandable segments lay theirs:
// several cuMemCreate allocations, shareable as POSIX fds, mapped side by
// side in one reserved address range. Replace() maps a fresh allocation in
// place of one, as such an allocator does after freeing and growing.
class SideBySideMappings {
 public:
  SideBySideMappings(int device, int pieces) : device_(device), handles_(pieces, 0) {
    status_ = gpu::GetDriverApi(&api_);
    if (!status_.ok()) return;
    size_t g = 0;
    const CUmemAllocationProp prop = Prop();
    status_ = gpu::FromCuDriver(api_->mem_get_allocation_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                                "granularity");
    piece_ = g;
    if (status_.ok()) {
      status_ = gpu::FromCuDriver(api_->mem_address_reserve(&base_, piece_ * pieces, g, 0, 0), "reserve");
    }
    for (int i = 0; i < pieces && status_.ok(); ++i) status_ = MapNew(i);
  }
  ~SideBySideMappings() {
    for (size_t i = 0; i < handles_.size(); ++i) Unmap(i);
    if (base_ != 0) api_->mem_address_free(base_, piece_ * handles_.size());
  }
  Status Replace(int i) {
    Unmap(i);
    return MapNew(i);
  }
  Status status() const { return status_; }
  uint8_t* data() const { return reinterpret_cast<uint8_t*>(base_); }
  uint64_t piece_bytes() const { return piece_; }

 private:
  CUmemAllocationProp Prop() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, device_};
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
  }
  Status MapNew(int i) {
    const CUmemAllocationProp prop = Prop();
    BATON_RETURN_IF_ERROR(gpu::FromCuDriver(api_->mem_create(&handles_[i], piece_, &prop, 0), "cuMemCreate"));
    BATON_RETURN_IF_ERROR(gpu::FromCuDriver(api_->mem_map(base_ + i * piece_, piece_, 0, handles_[i], 0), "cuMemMap"));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return gpu::FromCuDriver(api_->mem_set_access(base_ + i * piece_, piece_, &access, 1), "cuMemSetAccess");
  }
  void Unmap(size_t i) {
    if (handles_[i] == 0) return;
    api_->mem_unmap(base_ + i * piece_, piece_);
    api_->mem_release(handles_[i]);
    handles_[i] = 0;
  }

  const gpu::DriverApi* api_ = nullptr;
  int device_;
  std::vector<CUmemGenericAllocationHandle> handles_;
  CUdeviceptr base_ = 0;
  uint64_t piece_ = 0;
  Status status_;
};

// A buffer across three such mappings is one registration of three file
// descriptors, mapped side by side in batond; after the application maps a
// fresh allocation in the middle, the next collective registers the span
// again instead of using the old memory. Checked element by element.
TEST(GpuDeviceSharing, ABufferAcrossMappingsSideBySideIsOneRegistrationAndFollowsARemap) {
  SKIP_WITHOUT_GPU();
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-span"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    SideBySideMappings memory(0, 3);
    ASSERT_TRUE(memory.status().ok()) << memory.status().ToString();
    // From the middle of the first mapping to the middle of the third.
    const uint64_t count = memory.piece_bytes() * 2 / sizeof(float);
    float* x = reinterpret_cast<float*>(memory.data() + memory.piece_bytes() / 2);
    for (int round = 0; round < 2; ++round) {
      if (round == 1) {
        ASSERT_TRUE(memory.Replace(1).ok());  // new physical memory in the middle
      }
      std::vector<float> host(count);
      for (uint64_t i = 0; i < count; ++i) host[i] = static_cast<float>((i % 7) + rank + round);
      ASSERT_EQ(cudaMemcpy(x, host.data(), count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(baton_allreduce(x, x, count, baton_float32, baton_sum, comm, nullptr), baton_success)
          << baton_get_last_error(comm);
      ASSERT_EQ(cudaMemcpy(host.data(), x, count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      for (uint64_t i = 0; i < count; ++i) {
        const float want = static_cast<float>(2 * ((i % 7) + round) + 1);
        if (host[i] != want) {
          ADD_FAILURE() << "round " << round << " rank " << rank << " element " << i << ": " << host[i] << ", want "
                        << want;
          return;
        }
      }
    }
  });
  ASSERT_EQ(err, "");
}

// What batond cannot open (cuMemCreate memory with no shareable handle
// type) goes through libbaton's bounce buffers; what it may not open
// (cudaMalloc memory on a daemon that takes file descriptors only) is
// refused with the reason. On that daemon the application's
// own shareable cuMemCreate memory works, and the result is right.
TEST(GpuDeviceSharing, MemoryBatondCannotOpenIsBouncedAndMemoryItMayNotOpenIsRefused) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kCount = 1 << 20;  // above the fast path's limit: the daemon must open the buffers
  auto run = [&](const LocalCluster& cluster, Allocator allocator, std::vector<baton_result_t>* rc,
                 std::vector<std::string>* message) {
    return RunRanks(cluster, {0, 0}, UniqueJob("gpu-sharing"), [&](int rank, baton_comm_t comm) {
      cudaSetDevice(0);
      DeviceBuffer buf;
      ASSERT_TRUE(buf.Allocate(allocator, comm, kCount * sizeof(float)));
      std::vector<float> host(kCount, static_cast<float>(rank + 1));
      cudaMemcpy(buf.ptr, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
      (*rc)[rank] = baton_allreduce(buf.ptr, buf.ptr, kCount, baton_float32, baton_sum, comm, nullptr);
      (*message)[rank] = baton_get_last_error(comm);
      if ((*rc)[rank] != baton_success) return;
      cudaMemcpy(host.data(), buf.ptr, kCount * sizeof(float), cudaMemcpyDeviceToHost);
      for (size_t i = 0; i < kCount; ++i) {
        if (host[i] != 3.0f) {
          ADD_FAILURE() << "rank " << rank << " element " << i << ": " << host[i] << ", want 3";
          return;
        }
      }
    });
  };
  std::vector<baton_result_t> rc(2);
  std::vector<std::string> message(2);
  {
    auto cluster = StartCluster(1);
    ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
    // batond cannot open it: libbaton copies it through a bounce buffer
    // of its own, and the result (checked in `run`) is right all the same.
    ASSERT_EQ(run(*cluster, Allocator::kVmmPrivate, &rc, &message), "");
    for (int r = 0; r < 2; ++r) EXPECT_EQ(rc[r], baton_success) << message[r];
  }
  auto fd_only = StartCluster(1, {"--device-sharing", "fd-only"});
  ASSERT_TRUE(fd_only->status().ok()) << fd_only->status().ToString();
  ASSERT_EQ(run(*fd_only, Allocator::kCudaMalloc, &rc, &message), "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(rc[r], baton_permission_denied) << message[r];
    EXPECT_NE(message[r].find("(--device-sharing fd-only)"), std::string::npos) << message[r];
  }
  ASSERT_EQ(run(*fd_only, Allocator::kVmm, &rc, &message), "");
  for (int r = 0; r < 2; ++r) EXPECT_EQ(rc[r], baton_success) << message[r];
}

// Every kind of memory batond cannot open, as blocking and as stream-ordered
// calls: the bounce copies keep the ordering contract (the input written on
// the stream just before is included, the kernel just after sees the
// result) and the result is right element by element. Rank 0's buffer is
// bounced, rank 1's is cudaMalloc memory batond opens: one collective mixes
// both. A second call reuses the pooled bounce buffer.
struct BounceCase {
  Allocator allocator;
  bool stream;
};
void PrintTo(const BounceCase& c, std::ostream* os) { *os << Name(c.allocator) << (c.stream ? " stream" : " blocking"); }
class GpuBounce : public ::testing::TestWithParam<BounceCase> {};

TEST_P(GpuBounce, MemoryBatondCannotOpenGivesTheRightResultInStreamOrder) {
  SKIP_WITHOUT_GPU();
  const BounceCase c = GetParam();
  constexpr size_t kCount = (1 << 20) + 3;  // above the fast path's limit, not a multiple of the chunking
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-bounce"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    DeviceBuffer buf;
    ASSERT_TRUE(buf.Allocate(rank == 0 ? c.allocator : Allocator::kCudaMalloc, comm, kCount * sizeof(float)));
    auto* x = static_cast<float*>(buf.ptr);
    std::vector<float> host(kCount);
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>((i % 5) + rank + round);
      if (c.stream) {
        ASSERT_EQ(cudaMemcpyAsync(x, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, stream),
                  cudaSuccess);
        ASSERT_EQ(baton_allreduce_stream(x, x, kCount, baton_float32, baton_sum, comm, stream), baton_success)
            << baton_get_last_error(comm);
        LaunchScale(x, kCount, 10.0f, stream);
        ASSERT_EQ(cudaMemcpyAsync(host.data(), x, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        baton_result_t async = baton_success;
        baton_comm_get_async_error(comm, &async);
        ASSERT_EQ(async, baton_success) << baton_get_last_error(comm);
      } else {
        ASSERT_EQ(cudaMemcpy(x, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(baton_allreduce(x, x, kCount, baton_float32, baton_sum, comm, nullptr), baton_success)
            << baton_get_last_error(comm);
        ASSERT_EQ(cudaMemcpy(host.data(), x, kCount * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      }
      const float scale = c.stream ? 10.0f : 1.0f;
      for (size_t i = 0; i < kCount; ++i) {
        const float want = scale * static_cast<float>(2 * ((i % 5) + round) + 1);
        if (host[i] != want) {
          ADD_FAILURE() << Name(c.allocator) << " round " << round << " rank " << rank << " element " << i << ": "
                        << host[i] << ", want " << want;
          return;
        }
      }
    }
    cudaStreamDestroy(stream);
  });
  ASSERT_EQ(err, "");
}

INSTANTIATE_TEST_SUITE_P(Kinds, GpuBounce,
                         ::testing::Values(BounceCase{Allocator::kVmmPrivate, false},
                                           BounceCase{Allocator::kVmmPrivate, true},
                                           BounceCase{Allocator::kManaged, false},
                                           BounceCase{Allocator::kManaged, true},
                                           BounceCase{Allocator::kAsyncPool, false},
                                           BounceCase{Allocator::kAsyncPool, true}),
                         [](const ::testing::TestParamInfo<BounceCase>& info) {
                           return std::string(Name(info.param.allocator)) + (info.param.stream ? "_stream" : "_blocking");
                         });

// A small collective on device buffers (the fast path, which copies
// through host memory) leaves the calling thread's CUDA context as it found
// it: here a thread with none, which a cudaSetDevice inside libbaton would
// have left on device 0's primary context.
TEST(GpuOneNode, TheFastPathLeavesTheCallersContextAsItWas) {
  SKIP_WITHOUT_GPU();
  const gpu::DriverApi* api = nullptr;
  ASSERT_TRUE(gpu::GetDriverApi(&api).ok());
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  constexpr size_t kCount = 16;
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-context"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    DeviceBuffer buf;
    ASSERT_TRUE(buf.Allocate(Allocator::kCudaMalloc, comm, kCount * sizeof(float)));
    std::vector<float> host(kCount, static_cast<float>(rank + 1));
    ASSERT_EQ(cudaMemcpy(buf.ptr, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    CUcontext before = reinterpret_cast<CUcontext>(1), after = reinterpret_cast<CUcontext>(1);
    baton_result_t rc = baton_internal_error;
    std::thread fresh([&] {  // a new thread has no current context
      api->ctx_get_current(&before);
      rc = baton_allreduce(buf.ptr, buf.ptr, kCount, baton_float32, baton_sum, comm, nullptr);
      api->ctx_get_current(&after);
    });
    fresh.join();
    ASSERT_EQ(rc, baton_success) << baton_get_last_error(comm);
    EXPECT_EQ(before, nullptr);
    EXPECT_EQ(after, nullptr) << "rank " << rank << ": libbaton left a CUDA context current on the caller's thread";
    ASSERT_EQ(cudaMemcpy(host.data(), buf.ptr, kCount * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < kCount; ++i) EXPECT_EQ(host[i], 3.0f) << "rank " << rank << " element " << i;
  });
  ASSERT_EQ(err, "");
}

// A buffer across more mappings than batond imports for one buffer (128) is
// bounced, not refused: PyTorch's expandable segments make such spans for
// tensors of a few GiB. Checked element by element.
TEST(GpuDeviceSharing, ASpanOfMoreMappingsThanBatondImportsIsBounced) {
  SKIP_WITHOUT_GPU();
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("gpu-long-span"), [&](int rank, baton_comm_t comm) {
    cudaSetDevice(0);
    SideBySideMappings memory(0, 130);
    ASSERT_TRUE(memory.status().ok()) << memory.status().ToString();
    const uint64_t count = memory.piece_bytes() * 130 / sizeof(float);
    auto* x = reinterpret_cast<float*>(memory.data());
    std::vector<float> host(count);
    for (uint64_t i = 0; i < count; ++i) host[i] = static_cast<float>((i % 11) + rank);
    ASSERT_EQ(cudaMemcpy(x, host.data(), count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(baton_allreduce(x, x, count, baton_float32, baton_sum, comm, nullptr), baton_success)
        << baton_get_last_error(comm);
    ASSERT_EQ(cudaMemcpy(host.data(), x, count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (uint64_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(2 * (i % 11) + 1);
      if (host[i] != want) {
        ADD_FAILURE() << "rank " << rank << " element " << i << ": " << host[i] << ", want " << want;
        return;
      }
    }
  });
  ASSERT_EQ(err, "");
}

}  // namespace
}  // namespace baton::test
