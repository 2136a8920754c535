#include "gpu/device_copy.h"

#include <cuda_runtime_api.h>

#include <map>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/driver_api.h"

namespace baton::gpu {
namespace {

// Streams of this thread, one per device, and the events that mark them,
// destroyed with the thread.
class ThreadStreams {
 public:
  ~ThreadStreams() {
    for (auto& [device, stream] : streams_) {
      cudaSetDevice(device);
      for (cudaEvent_t e : events_[device]) cudaEventDestroy(e);
      cudaStreamDestroy(stream);
    }
  }
  Status Get(int device, cudaStream_t* out) {
    auto it = streams_.find(device);
    if (it == streams_.end()) {
      cudaStream_t s = nullptr;
      BATON_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      it = streams_.emplace(device, s).first;
    }
    *out = it->second;
    return Status::Ok();
  }

  // The event for mark `index` on `device` (current), created when first needed.
  Status Event(int device, uint32_t index, cudaEvent_t* out) {
    std::vector<cudaEvent_t>& events = events_[device];
    while (events.size() <= index) {
      cudaEvent_t e = nullptr;
      BATON_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      events.push_back(e);
    }
    *out = events[index];
    return Status::Ok();
  }
  uint32_t& next_mark(int device) { return next_mark_[device]; }
  void ForgetMarks() { next_mark_.clear(); }

 private:
  std::map<int, cudaStream_t> streams_;
  std::map<int, std::vector<cudaEvent_t>> events_;
  std::map<int, uint32_t> next_mark_;
};

thread_local ThreadStreams t_streams;

Status Queue(void* dst, const void* src, uint64_t bytes, int device, cudaMemcpyKind kind, const char* what,
             cudaStream_t* stream) {
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  BATON_RETURN_IF_ERROR(t_streams.Get(device, stream));
  if (bytes == 0) return Status::Ok();
  return FromCuda(cudaMemcpyAsync(dst, src, bytes, kind, *stream), what);
}

constexpr const char* kToHost = "copying a GPU buffer to host staging";
constexpr const char* kToDevice = "copying host staging to a GPU buffer";

}  // namespace

Status CopyToHost(void* host, const void* device_ptr, uint64_t bytes, int device) {
  if (bytes == 0) return Status::Ok();
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  PreserveCurrentContext keep(*api);
  cudaStream_t s = nullptr;
  BATON_RETURN_IF_ERROR(Queue(host, device_ptr, bytes, device, cudaMemcpyDeviceToHost, kToHost, &s));
  return FromCuda(cudaStreamSynchronize(s), kToHost);
}

Status CopyToDevice(void* device_ptr, const void* host, uint64_t bytes, int device) {
  if (bytes == 0) return Status::Ok();
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  PreserveCurrentContext keep(*api);
  cudaStream_t s = nullptr;
  BATON_RETURN_IF_ERROR(Queue(device_ptr, host, bytes, device, cudaMemcpyHostToDevice, kToDevice, &s));
  return FromCuda(cudaStreamSynchronize(s), kToDevice);
}

Status QueueCopyToHost(void* host, const void* device_ptr, uint64_t bytes, int device) {
  cudaStream_t s = nullptr;
  return Queue(host, device_ptr, bytes, device, cudaMemcpyDeviceToHost, kToHost, &s);
}

Status QueueCopyToDevice(void* device_ptr, const void* host, uint64_t bytes, int device) {
  cudaStream_t s = nullptr;
  return Queue(device_ptr, host, bytes, device, cudaMemcpyHostToDevice, kToDevice, &s);
}

Status MarkCopies(int device, CopyMark* out) {
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = nullptr;
  BATON_RETURN_IF_ERROR(t_streams.Get(device, &s));
  const uint32_t index = t_streams.next_mark(device);
  cudaEvent_t e = nullptr;
  BATON_RETURN_IF_ERROR(t_streams.Event(device, index, &e));
  BATON_CUDA_RETURN_IF_ERROR(cudaEventRecord(e, s), "cudaEventRecord");
  ++t_streams.next_mark(device);
  *out = {device, index};
  return Status::Ok();
}

Status WaitForMark(const CopyMark& mark) {
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(mark.device), "cudaSetDevice");
  cudaEvent_t e = nullptr;
  BATON_RETURN_IF_ERROR(t_streams.Event(mark.device, mark.index, &e));
  return FromCuda(cudaEventSynchronize(e), kToHost);
}

void ForgetMarks() { t_streams.ForgetMarks(); }

Status WaitForCopies(int device) {
  cudaStream_t s = nullptr;
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  BATON_RETURN_IF_ERROR(t_streams.Get(device, &s));
  return FromCuda(cudaStreamSynchronize(s), "waiting for staging copies");
}

}  // namespace baton::gpu
