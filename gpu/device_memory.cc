#include "gpu/device_memory.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"

namespace baton::gpu {

Status QueryPointer(const void* p, DevicePointer* out) {
  *out = {};
  if (!GetCudaSupport().available) return Status::Ok();  // no GPU: every pointer is host memory
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  // Driver queries only: they find the pointer's own context and never
  // create one (a CPU-only program on a GPU machine keeps its GPU memory).
  const auto ptr = reinterpret_cast<CUdeviceptr>(p);
  unsigned int type = 0;
  if (api->pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS) {
    return Status::Ok();  // not known to CUDA: plain host memory
  }
  if (type != CU_MEMORYTYPE_DEVICE) return Status::Ok();  // pinned or registered host memory
  unsigned int managed = 0;
  api->pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
  if (managed != 0) {
    return Status::InvalidArgument("the buffer is CUDA managed memory, which CUDA IPC cannot share with batond; "
                                   "use cudaMalloc or baton_mem_alloc_device");
  }
  int ordinal = -1;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
                                     "device of a pointer"));
  unsigned long long id = 0;
  BATON_RETURN_IF_ERROR(
      FromCuDriver(api->pointer_get_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr), "buffer id of a pointer"));
  ScopedContext scoped(*api, ptr);
  BATON_RETURN_IF_ERROR(scoped.status());
  CUdeviceptr base = 0;
  size_t size = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_get_address_range(&base, &size, ptr), "cuMemGetAddressRange"));
  out->on_device = true;
  out->device = ordinal;
  out->buffer_id = id;
  out->base = static_cast<uintptr_t>(base);
  out->size = size;
  return Status::Ok();
}

bool StillAllocated(uintptr_t base, uint64_t buffer_id) {
  const DriverApi* api = nullptr;
  if (!GetDriverApi(&api).ok()) return false;
  unsigned long long id = 0;
  return api->pointer_get_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, static_cast<CUdeviceptr>(base)) ==
             CUDA_SUCCESS &&
         id == buffer_id;
}

Status ExportAllocation(const DevicePointer& ptr, IpcHandle* handle, DeviceUuid* uuid) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  const auto base = static_cast<CUdeviceptr>(ptr.base);
  ScopedContext scoped(*api, base);
  BATON_RETURN_IF_ERROR(scoped.status());
  CUipcMemHandle h{};
  BATON_RETURN_IF_ERROR(FromCuDriver(api->ipc_get_mem_handle(&h, base),
                                     "cuIpcGetMemHandle (memory from cudaMallocAsync pools or cuMemCreate without "
                                     "a shareable handle type cannot be exported; use cudaMalloc or "
                                     "baton_mem_alloc_device)"));
  static_assert(sizeof h == sizeof(IpcHandle));
  std::memcpy(handle->data(), &h, sizeof h);
  CUdevice device = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->device_get(&device, ptr.device), "cuDeviceGet"));
  CUuuid id{};
  BATON_RETURN_IF_ERROR(FromCuDriver(api->device_get_uuid(&id, device), "cuDeviceGetUuid"));
  static_assert(sizeof id == sizeof(DeviceUuid));
  std::memcpy(uuid->data(), &id, sizeof id);
  return Status::Ok();
}

Status AllocateDevice(int device, uint64_t bytes, void** out) {
  BATON_RETURN_IF_ERROR(RequireCuda("baton_mem_alloc_device"));
  if (device < 0 || device >= GetCudaSupport().device_count) {
    return Status::InvalidArgument("device " + std::to_string(device) + " does not exist (this process sees " +
                                   std::to_string(GetCudaSupport().device_count) + ")");
  }
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  PreserveCurrentContext keep(*api);
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  return FromCuda(cudaMalloc(out, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
}

Status FreeDevice(void* p) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  PreserveCurrentContext keep(*api);
  return FromCuda(cudaFree(p), "cudaFree");
}

}  // namespace baton::gpu
