#include "gpu/bounce_copy.h"

#include <string>

#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"

namespace baton::gpu {
namespace {

CUdeviceptr Address(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace

Status QueueCopyOnStream(void* stream, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  return InContextOfStream(stream, [&](const DriverApi& api) {
    return FromCuDriver(api.memcpy_async(Address(dst), Address(src), bytes, static_cast<CUstream>(stream)),
                        "copying a GPU buffer through libbaton's bounce buffer on the caller's stream "
                        "(cuMemcpyAsync of " + std::to_string(bytes) + " bytes)");
  });
}

Status CopyOnDeviceAndWait(int device, void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  BATON_RETURN_IF_ERROR(RequireCuda("copying a GPU buffer"));
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  CUdevice dev = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->device_get(&dev, device), "cuDeviceGet"));
  // The device's primary context: the one the application's runtime uses,
  // active in any process that holds memory there. Retained for the copy
  // only, pushed and popped: the thread's own current context stays.
  unsigned flags = 0;
  int active = 0;
  BATON_RETURN_IF_ERROR(
      FromCuDriver(api->primary_ctx_get_state(dev, &flags, &active), "cuDevicePrimaryCtxGetState"));
  if (active == 0) {
    return Status::InvalidArgument("copying a GPU buffer on device " + std::to_string(device) +
                                   ": this process has no primary CUDA context active there (call cudaSetDevice "
                                   "and cudaFree(0) first)");
  }
  CUcontext ctx = nullptr;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
  Status st;
  {
    ScopedContext scoped(*api, ctx);
    st = scoped.status();
    const std::string what = "copying a GPU buffer through libbaton's bounce buffer (" + std::to_string(bytes) +
                             " bytes on device " + std::to_string(device) + ")";
    if (st.ok()) st = FromCuDriver(api->memcpy_async(Address(dst), Address(src), bytes, nullptr), what);
    if (st.ok()) st = FromCuDriver(api->stream_synchronize(nullptr), what);
  }
  api->primary_ctx_release(dev);
  return st;
}

}  // namespace baton::gpu
