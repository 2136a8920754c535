#include "gpu/cuda_support.h"

#include <dlfcn.h>

#include "gpu/cuda_check.h"

namespace baton::gpu {

Status FromCuda(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::Ok();
  const Code code = err == cudaErrorMemoryAllocation ? Code::kResourceExhausted
                    : err == cudaErrorInvalidValue || err == cudaErrorInvalidDevicePointer
                        ? Code::kInvalidArgument
                        : Code::kSystemError;
  return Status(code, what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

Status FromCuDriver(CUresult err, const std::string& what) {
  if (err == CUDA_SUCCESS) return Status::Ok();
  return Status::System(what + ": CUDA driver error " + std::to_string(static_cast<int>(err)));
}

namespace {

// The runtime reports a missing driver as "insufficient driver"; say what
// is really going on when there is none at all.
bool DriverLibraryPresent() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return false;
  ::dlclose(lib);
  return true;
}

}  // namespace

const CudaSupport& GetCudaSupport() {
  static const CudaSupport support = [] {
    CudaSupport s;
    s.built = true;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess && !DriverLibraryPresent()) {
      s.reason = "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)";
      cudaGetLastError();
    } else if (err != cudaSuccess) {
      s.reason = std::string("the CUDA driver or device is not usable (") + cudaGetErrorName(err) + ": " +
                 cudaGetErrorString(err) + ")";
      cudaGetLastError();  // clear the sticky-free error so later probes start clean
    } else if (count == 0) {
      s.reason = "the CUDA driver reports no devices";
    } else {
      s.available = true;
      s.device_count = count;
    }
    return s;
  }();
  return support;
}

Status RequireCuda(const std::string& what) {
  const CudaSupport& s = GetCudaSupport();
  if (s.available) return Status::Ok();
  return Status::Unavailable(what + " needs a GPU, but " + s.reason);
}

}  // namespace baton::gpu
