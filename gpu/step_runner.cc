#include "gpu/step_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "common/logging.h"
#include "gpu/cuda_check.h"
#include "gpu/reduce_kernels.h"
#include "gpu/reduce_launch.h"

namespace baton::gpu {
namespace {

static_assert(kMaxFusedOperands == static_cast<size_t>(kernels::kMaxFoldOperands),
              "the plan fuses no more operands than a fold kernel takes");

// One device's stream, events and scratch, for one thread.
struct DeviceSet {
  cudaStream_t stream = nullptr;
  std::vector<cudaEvent_t> events;  // reused from call to call: every call ends synchronised
  size_t events_used = 0;           // in the current call
  void* scratch = nullptr;
  uint64_t scratch_bytes = 0;
};

class ThreadDevices {
 public:
  ThreadDevices() = default;
  ThreadDevices(const ThreadDevices&) = delete;
  ThreadDevices& operator=(const ThreadDevices&) = delete;
  ~ThreadDevices() {
    for (auto& [device, set] : sets_) {
      if (cudaSetDevice(device) != cudaSuccess) continue;
      for (cudaEvent_t e : set.events) cudaEventDestroy(e);
      if (set.stream != nullptr) cudaStreamDestroy(set.stream);
      if (set.scratch != nullptr) cudaFree(set.scratch);
    }
  }

  // Also makes `device` current.
  Status Get(int device, DeviceSet** out) {
    BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
    DeviceSet& set = sets_[device];
    if (set.stream == nullptr) {
      BATON_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&set.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    *out = &set;
    return Status::Ok();
  }

  // An event of `set`'s device (current) not yet used in this call.
  static Status NextEvent(DeviceSet* set, cudaEvent_t* out) {
    if (set->events_used == set->events.size()) {
      cudaEvent_t e = nullptr;
      BATON_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      set->events.push_back(e);
    }
    *out = set->events[set->events_used++];
    return Status::Ok();
  }

 private:
  std::map<int, DeviceSet> sets_;
};

thread_local ThreadDevices t_devices;

Status Launch(const DeviceStep& s, DataType dtype, RedOp redop, cudaStream_t stream) {
  const uint64_t count = s.bytes / DataTypeSize(dtype);
  switch (s.kind) {
    case StepKind::kCopy:
      // cudaMemcpyDefault: the pointers say where they are (unified addressing),
      // another GPU's memory included.
      return FromCuda(cudaMemcpyAsync(s.dst, s.src, s.bytes, cudaMemcpyDefault, stream), "copying between GPU buffers");
    case StepKind::kReduce: {
      if (s.more.empty() && !s.from_src) return LaunchReduce(dtype, redop, s.dst, s.dst, s.src, count, stream);
      const std::vector<const uint8_t*> operands = FoldOperands(s);
      std::array<const void*, kernels::kMaxFoldOperands> p{};
      if (operands.size() > p.size()) return Status::Internal("a fused GPU step of too many operands");
      std::copy(operands.begin(), operands.end(), p.begin());
      return LaunchFold(dtype, redop, s.dst, p.data(), operands.size(), count, stream);
    }
    case StepKind::kDivide:
      return LaunchDivide(dtype, s.dst, count, s.divisor, stream);
    default:
      return Status::Internal("network step given to the GPU step runner");
  }
}

}  // namespace

bool EnablePeerAccess(const std::vector<int>& devices) {
  static std::mutex mu;
  static std::set<std::pair<int, int>> enabled;  // (from, to) done in this process
  std::lock_guard<std::mutex> lock(mu);
  for (int from : devices) {
    for (int to : devices) {
      if (from == to || enabled.contains({from, to})) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || can == 0) {
        cudaGetLastError();  // not sticky: clear it
        return false;
      }
      if (cudaSetDevice(from) != cudaSuccess) return false;
      const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
      if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) {
        BATON_WARN("GPU {} cannot enable peer access to GPU {} ({}); their ranks stage through host memory", from, to,
                   cudaGetErrorString(err));
        cudaGetLastError();
        return false;
      }
      cudaGetLastError();  // cudaErrorPeerAccessAlreadyEnabled is recorded as the last error
      enabled.insert({from, to});
    }
  }
  return true;
}

Status ThreadScratch(int device, uint64_t bytes, uint8_t** out) {
  DeviceSet* set = nullptr;
  BATON_RETURN_IF_ERROR(t_devices.Get(device, &set));
  if (set->scratch_bytes < bytes) {
    if (set->scratch != nullptr) {
      BATON_CUDA_RETURN_IF_ERROR(cudaFree(set->scratch), "freeing GPU scratch");
      set->scratch = nullptr;
      set->scratch_bytes = 0;
    }
    BATON_CUDA_RETURN_IF_ERROR(cudaMalloc(&set->scratch, bytes),
                               "allocating " + std::to_string(bytes) + " bytes of GPU scratch");
    set->scratch_bytes = bytes;
  }
  *out = static_cast<uint8_t*>(set->scratch);
  return Status::Ok();
}

Status RunDeviceSteps(const std::vector<DeviceStep>& steps, DataType dtype, RedOp redop) {
  std::vector<cudaEvent_t> done(steps.size(), nullptr);  // recorded after the steps that signal
  std::vector<std::pair<int, DeviceSet*>> used;
  Status st = Status::Ok();
  for (size_t j = 0; j < steps.size() && st.ok(); ++j) {
    const DeviceStep& s = steps[j];
    DeviceSet* set = nullptr;
    st = t_devices.Get(s.device, &set);
    if (!st.ok()) break;
    if (std::find_if(used.begin(), used.end(), [&](const auto& u) { return u.first == s.device; }) == used.end()) {
      set->events_used = 0;
      used.emplace_back(s.device, set);
    }
    for (uint32_t w : s.waits) {
      if (w >= j || done[w] == nullptr) {
        st = Status::Internal("GPU step " + std::to_string(j) + " waits for step " + std::to_string(w) +
                              ", which signals nothing");
        break;
      }
      st = FromCuda(cudaStreamWaitEvent(set->stream, done[w], 0), "cudaStreamWaitEvent");
      if (!st.ok()) break;
    }
    if (st.ok()) st = Launch(s, dtype, redop, set->stream);
    if (st.ok() && s.signals) {
      st = ThreadDevices::NextEvent(set, &done[j]);
      if (st.ok()) st = FromCuda(cudaEventRecord(done[j], set->stream), "cudaEventRecord");
    }
  }
  // Wait for everything queued, also after a failed launch: the events and
  // the scratch are reused by the next call.
  for (const auto& [device, set] : used) {
    Status sync = FromCuda(cudaSetDevice(device), "cudaSetDevice");
    if (sync.ok()) sync = FromCuda(cudaStreamSynchronize(set->stream), "running a collective on GPU " +
                                                                          std::to_string(device));
    if (st.ok() && !sync.ok()) st = sync;
  }
  return st;
}

}  // namespace baton::gpu
