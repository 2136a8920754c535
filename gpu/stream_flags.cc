#include "gpu/stream_flags.h"

#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"

namespace baton::gpu {
namespace {

// Runs fn(api) with the context of `stream` current (the current one
// already, for the legacy default stream).
template <typename Fn>
Status InContextOf(void* stream, Fn fn) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  CUcontext ctx = nullptr;
  if (api->stream_get_ctx(static_cast<CUstream>(stream), &ctx) != CUDA_SUCCESS || ctx == nullptr) {
    return Status::InvalidArgument(
        "cannot tell which GPU the CUDA stream belongs to (the default stream was passed on a thread with no "
        "current CUDA context: call cudaSetDevice first, or pass a stream from cudaStreamCreate)");
  }
  ScopedContext scoped(*api, ctx);
  BATON_RETURN_IF_ERROR(scoped.status());
  return fn(*api);
}

// Enqueues one stream memory operation on `stream` for `flag`.
template <typename Op>
Status OnStream(void* stream, std::atomic<uint32_t>* flag, const char* what, Op op) {
  return InContextOf(stream, [&](const DriverApi& api) {
    CUdeviceptr addr = 0;
    BATON_RETURN_IF_ERROR(
        FromCuDriver(api.mem_host_get_device_pointer(&addr, flag, 0), "device address of a completion flag"));
    return FromCuDriver(op(api, static_cast<CUstream>(stream), addr), what);
  });
}

}  // namespace

Status HostRegistration::Register(void* p, size_t bytes, void* stream) {
  BATON_RETURN_IF_ERROR(RequireCuda("a stream-ordered operation"));
  BATON_RETURN_IF_ERROR(InContextOf(stream, [&](const DriverApi& api) {
    return FromCuDriver(api.mem_host_register(p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
                        "registering the completion slots with CUDA (cuMemHostRegister)");
  }));
  base_ = p;
  return Status::Ok();
}

HostRegistration::~HostRegistration() {
  const DriverApi* api = nullptr;
  // At process exit the driver may already be shutting down: nothing to do then.
  if (base_ != nullptr && GetDriverApi(&api).ok()) api->mem_host_unregister(base_);
}

Status StreamWriteFlag(void* stream, std::atomic<uint32_t>* flag, uint32_t value) {
  return OnStream(stream, flag, "cuStreamWriteValue32", [&](const DriverApi& api, CUstream s, CUdeviceptr addr) {
    return api.stream_write_value32(s, addr, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  });
}

Status StreamWaitFlag(void* stream, std::atomic<uint32_t>* flag, uint32_t value) {
  return OnStream(stream, flag, "cuStreamWaitValue32", [&](const DriverApi& api, CUstream s, CUdeviceptr addr) {
    return api.stream_wait_value32(s, addr, value, CU_STREAM_WAIT_VALUE_GEQ);
  });
}

}  // namespace baton::gpu
