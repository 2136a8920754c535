#include "gpu/stream_flags.h"

#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"

namespace baton::gpu {
namespace {

// Enqueues one stream memory operation on `stream` for `flag`.
template <typename Op>
Status OnStream(void* stream, std::atomic<uint32_t>* flag, const char* what, Op op) {
  return InContextOfStream(stream, [&](const DriverApi& api) {
    CUdeviceptr addr = 0;
    BATON_RETURN_IF_ERROR(
        FromCuDriver(api.mem_host_get_device_pointer(&addr, flag, 0), "device address of a completion flag"));
    return FromCuDriver(op(api, static_cast<CUstream>(stream), addr), what);
  });
}

}  // namespace

Status HostRegistration::Register(void* p, size_t bytes, void* stream) {
  BATON_RETURN_IF_ERROR(RequireCuda("a stream-ordered operation"));
  BATON_RETURN_IF_ERROR(InContextOfStream(stream, [&](const DriverApi& api) {
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
