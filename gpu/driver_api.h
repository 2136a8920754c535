// The CUDA driver calls Baton makes directly, looked up through the runtime
// at first use. Why not link libcuda: a binary linked against it does not
// even start on a machine without the driver, and batond and libbaton must
// start everywhere. Why the driver and not the runtime in libbaton: libbaton
// carries its own copy of the runtime, whose notion of "current device"
// knows nothing of the application's; driver calls made in the context of
// the application's pointer or stream cannot pick the wrong device, and
// never create a context in a process that has none. CUDA builds only.
#pragma once

#include <cuda.h>

#include "common/status.h"

namespace baton::gpu {

struct DriverApi {
  CUresult (*mem_get_address_range)(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) = nullptr;
  CUresult (*pointer_get_attribute)(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) = nullptr;
  CUresult (*ipc_get_mem_handle)(CUipcMemHandle* handle, CUdeviceptr ptr) = nullptr;
  CUresult (*device_get)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*device_get_uuid)(CUuuid* uuid, CUdevice device) = nullptr;
  CUresult (*ctx_get_current)(CUcontext* ctx) = nullptr;
  CUresult (*ctx_set_current)(CUcontext ctx) = nullptr;
  CUresult (*ctx_push_current)(CUcontext ctx) = nullptr;
  CUresult (*ctx_pop_current)(CUcontext* ctx) = nullptr;
  CUresult (*stream_get_ctx)(CUstream stream, CUcontext* ctx) = nullptr;
  CUresult (*primary_ctx_get_state)(CUdevice device, unsigned* flags, int* active) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice device) = nullptr;
  CUresult (*mem_host_register)(void* p, size_t bytes, unsigned flags) = nullptr;
  CUresult (*mem_host_unregister)(void* p) = nullptr;
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr* dptr, void* p, unsigned flags) = nullptr;
  CUresult (*stream_write_value32)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned flags) = nullptr;
  CUresult (*stream_wait_value32)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned flags) = nullptr;
  CUresult (*device_get_attribute)(int* value, CUdevice_attribute attribute, CUdevice device) = nullptr;
  CUresult (*memcpy_async)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) = nullptr;
  CUresult (*stream_synchronize)(CUstream stream) = nullptr;
  // Virtual memory management (cuMemCreate allocations, shared as POSIX fds).
  CUresult (*mem_create)(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                         unsigned long long flags) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle handle) = nullptr;
  CUresult (*mem_retain_allocation_handle)(CUmemGenericAllocationHandle* handle, void* addr) = nullptr;
  CUresult (*mem_export_to_shareable_handle)(void* shareable, CUmemGenericAllocationHandle handle,
                                             CUmemAllocationHandleType type, unsigned long long flags) = nullptr;
  CUresult (*mem_import_from_shareable_handle)(CUmemGenericAllocationHandle* handle, void* shareable,
                                               CUmemAllocationHandleType type) = nullptr;
  CUresult (*mem_get_allocation_properties_from_handle)(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) = nullptr;
  CUresult (*mem_get_allocation_granularity)(size_t* granularity, const CUmemAllocationProp* prop,
                                             CUmemAllocationGranularity_flags option) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                  unsigned long long flags) = nullptr;
  CUresult (*mem_address_free)(CUdeviceptr ptr, size_t size) = nullptr;
  CUresult (*mem_map)(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                      unsigned long long flags) = nullptr;
  CUresult (*mem_unmap)(CUdeviceptr ptr, size_t size) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) = nullptr;
};

// The entry points, or Unavailable when the driver lacks one.
Status GetDriverApi(const DriverApi** out);

// Makes `ctx` current on this thread for its lifetime (push/pop).
class ScopedContext {
 public:
  ScopedContext(const DriverApi& api, CUcontext ctx);
  // The context that owns device memory at `ptr` (cudaMalloc memory;
  // cuMemCreate and pool memory belong to no context).
  ScopedContext(const DriverApi& api, CUdeviceptr ptr);
  // The primary context of device `device` (the one the application's
  // runtime uses), retained for the scope, if this process has it active.
  struct PrimaryOf {
    int device;
  };
  ScopedContext(const DriverApi& api, PrimaryOf primary);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  Status status() const { return status_; }

 private:
  const DriverApi& api_;
  Status status_;
  CUdevice retained_primary_ = -1;  // released on destruction
};

// Restores the thread's current context on destruction, none included:
// around libbaton's own runtime calls (cudaSetDevice, cudaMalloc) on the
// application's threads, which would otherwise leave the thread on another
// device, as NCCL users expect no library call to.
class PreserveCurrentContext {
 public:
  explicit PreserveCurrentContext(const DriverApi& api);
  ~PreserveCurrentContext();
  PreserveCurrentContext(const PreserveCurrentContext&) = delete;
  PreserveCurrentContext& operator=(const PreserveCurrentContext&) = delete;

 private:
  const DriverApi& api_;
  bool known_ = false;  // false: the driver could not say; nothing is restored
  CUcontext saved_ = nullptr;
};

// Runs fn(api) with the context of `stream` (a cudaStream_t) current: the
// thread's current one already, for the legacy default stream (nullptr).
template <typename Fn>
Status InContextOfStream(void* stream, Fn fn) {
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

}  // namespace baton::gpu
