#include "gpu/bounce_copy.h"

#include <string>

#include "gpu/cuda_check.h"
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
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  // Pushed and popped: the thread's own current context stays.
  ScopedContext scoped(*api, ScopedContext::PrimaryOf{device});
  BATON_RETURN_IF_ERROR(scoped.status().WithContext("copying a GPU buffer: "));
  const std::string what = "copying a GPU buffer through libbaton's bounce buffer (" + std::to_string(bytes) +
                           " bytes on device " + std::to_string(device) + ")";
  BATON_RETURN_IF_ERROR(FromCuDriver(api->memcpy_async(Address(dst), Address(src), bytes, nullptr), what));
  return FromCuDriver(api->stream_synchronize(nullptr), what);
}

}  // namespace baton::gpu
