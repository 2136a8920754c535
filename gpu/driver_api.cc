#include "gpu/driver_api.h"

#include <cuda_runtime_api.h>

#include <string>

#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"

namespace baton::gpu {
namespace {

// The ABI version of the entry points we want: CUDA 12.0 signatures.
constexpr unsigned kDriverAbi = 12000;

template <typename Fn>
Status Lookup(const char* symbol, Fn* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  Status st = FromCuda(cudaGetDriverEntryPointByVersion(symbol, &fn, kDriverAbi, cudaEnableDefault, &found),
                       std::string("looking up the CUDA driver's ") + symbol);
  if (st.ok() && (found != cudaDriverEntryPointSuccess || fn == nullptr)) {
    st = Status::Unavailable(std::string("the CUDA driver has no ") + symbol + " (driver older than CUDA 12?)");
  }
  if (st.ok()) *out = reinterpret_cast<Fn>(fn);
  return st;
}

}  // namespace

Status GetDriverApi(const DriverApi** out) {
  static Status status;
  static const DriverApi api = [] {
    DriverApi a;
    status = RequireCuda("a CUDA driver call");
    auto get = [&](const char* symbol, auto* fn) {
      if (status.ok()) status = Lookup(symbol, fn);
    };
    get("cuMemGetAddressRange", &a.mem_get_address_range);
    get("cuPointerGetAttribute", &a.pointer_get_attribute);
    get("cuIpcGetMemHandle", &a.ipc_get_mem_handle);
    get("cuDeviceGet", &a.device_get);
    get("cuDeviceGetUuid", &a.device_get_uuid);
    get("cuCtxGetCurrent", &a.ctx_get_current);
    get("cuCtxSetCurrent", &a.ctx_set_current);
    get("cuCtxPushCurrent", &a.ctx_push_current);
    get("cuCtxPopCurrent", &a.ctx_pop_current);
    get("cuStreamGetCtx", &a.stream_get_ctx);
    get("cuDevicePrimaryCtxGetState", &a.primary_ctx_get_state);
    get("cuDevicePrimaryCtxRetain", &a.primary_ctx_retain);
    get("cuDevicePrimaryCtxRelease", &a.primary_ctx_release);
    get("cuMemHostRegister", &a.mem_host_register);
    get("cuMemHostUnregister", &a.mem_host_unregister);
    get("cuMemHostGetDevicePointer", &a.mem_host_get_device_pointer);
    get("cuStreamWriteValue32", &a.stream_write_value32);
    get("cuStreamWaitValue32", &a.stream_wait_value32);
    get("cuDeviceGetAttribute", &a.device_get_attribute);
    get("cuMemcpyAsync", &a.memcpy_async);
    get("cuStreamSynchronize", &a.stream_synchronize);
    get("cuMemCreate", &a.mem_create);
    get("cuMemRelease", &a.mem_release);
    get("cuMemRetainAllocationHandle", &a.mem_retain_allocation_handle);
    get("cuMemExportToShareableHandle", &a.mem_export_to_shareable_handle);
    get("cuMemImportFromShareableHandle", &a.mem_import_from_shareable_handle);
    get("cuMemGetAllocationPropertiesFromHandle", &a.mem_get_allocation_properties_from_handle);
    get("cuMemGetAllocationGranularity", &a.mem_get_allocation_granularity);
    get("cuMemAddressReserve", &a.mem_address_reserve);
    get("cuMemAddressFree", &a.mem_address_free);
    get("cuMemMap", &a.mem_map);
    get("cuMemUnmap", &a.mem_unmap);
    get("cuMemSetAccess", &a.mem_set_access);
    return a;
  }();
  *out = &api;
  return status;
}

ScopedContext::ScopedContext(const DriverApi& api, CUcontext ctx) : api_(api) {
  status_ = FromCuDriver(api_.ctx_push_current(ctx), "cuCtxPushCurrent");
}

ScopedContext::ScopedContext(const DriverApi& api, CUdeviceptr ptr) : api_(api) {
  CUcontext ctx = nullptr;
  status_ = FromCuDriver(api_.pointer_get_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, ptr), "context of a pointer");
  if (status_.ok()) status_ = FromCuDriver(api_.ctx_push_current(ctx), "cuCtxPushCurrent");
}

ScopedContext::ScopedContext(const DriverApi& api, PrimaryOf primary) : api_(api) {
  // Retaining a primary context that is already active creates nothing;
  // one that is not would be created, so that is refused instead.
  CUdevice device = 0;
  unsigned flags = 0;
  int active = 0;
  status_ = FromCuDriver(api_.device_get(&device, primary.device), "cuDeviceGet");
  if (status_.ok()) {
    status_ = FromCuDriver(api_.primary_ctx_get_state(device, &flags, &active), "cuDevicePrimaryCtxGetState");
  }
  if (status_.ok() && active == 0) {
    status_ = Status::InvalidArgument("this process has no primary CUDA context active on device " +
                                      std::to_string(primary.device) + " (call cudaSetDevice and cudaFree(0) first)");
  }
  CUcontext ctx = nullptr;
  if (status_.ok()) status_ = FromCuDriver(api_.primary_ctx_retain(&ctx, device), "cuDevicePrimaryCtxRetain");
  if (!status_.ok()) return;
  retained_primary_ = device;
  status_ = FromCuDriver(api_.ctx_push_current(ctx), "cuCtxPushCurrent");
}

ScopedContext::~ScopedContext() {
  CUcontext popped = nullptr;
  if (status_.ok()) api_.ctx_pop_current(&popped);
  if (retained_primary_ >= 0) api_.primary_ctx_release(retained_primary_);
}

PreserveCurrentContext::PreserveCurrentContext(const DriverApi& api) : api_(api) {
  known_ = api_.ctx_get_current(&saved_) == CUDA_SUCCESS;
}

PreserveCurrentContext::~PreserveCurrentContext() {
  if (known_) api_.ctx_set_current(saved_);
}

}  // namespace baton::gpu
