#include "gpu/device_copy.h"

#include <cuda_runtime_api.h>

#include <map>

#include "gpu/cuda_check.h"

namespace baton::gpu {
namespace {

// Streams of this thread, one per device, destroyed with the thread.
class ThreadStreams {
 public:
  ~ThreadStreams() {
    for (auto& [device, stream] : streams_) {
      cudaSetDevice(device);
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

 private:
  std::map<int, cudaStream_t> streams_;
};

Status Copy(void* dst, const void* src, uint64_t bytes, int device, cudaMemcpyKind kind, const char* what) {
  if (bytes == 0) return Status::Ok();
  thread_local ThreadStreams streams;
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = nullptr;
  BATON_RETURN_IF_ERROR(streams.Get(device, &s));
  BATON_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, s), what);
  return FromCuda(cudaStreamSynchronize(s), what);
}

}  // namespace

Status CopyToHost(void* host, const void* device_ptr, uint64_t bytes, int device) {
  return Copy(host, device_ptr, bytes, device, cudaMemcpyDeviceToHost, "copying a GPU buffer to host staging");
}

Status CopyToDevice(void* device_ptr, const void* host, uint64_t bytes, int device) {
  return Copy(device_ptr, host, bytes, device, cudaMemcpyHostToDevice, "copying host staging to a GPU buffer");
}

}  // namespace baton::gpu
