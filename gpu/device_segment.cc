#include "gpu/device_segment.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "common/logging.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"
#include "gpu/vmm_mapping.h"

namespace baton::gpu {

Status FindDevice(const DeviceUuid& uuid, int* device) {
  BATON_RETURN_IF_ERROR(RequireCuda("a device buffer"));
  for (int d = 0; d < GetCudaSupport().device_count; ++d) {
    cudaDeviceProp prop{};
    BATON_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    if (std::memcmp(&prop.uuid, uuid.data(), uuid.size()) == 0) {
      *device = d;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("the buffer is on a GPU that batond cannot see (check CUDA_VISIBLE_DEVICES and "
                                 "the device cgroup of the batond service)");
}

Status DeviceSegment::Open(const IpcHandle& handle, const DeviceUuid& uuid, uint64_t claimed_size,
                           std::unique_ptr<DeviceSegment>* out) {
  int device = -1;
  BATON_RETURN_IF_ERROR(FindDevice(uuid, &device));
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, handle.data(), sizeof h);
  void* ptr = nullptr;
  BATON_CUDA_RETURN_IF_ERROR(cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess),
                             "opening the client's GPU buffer (cudaIpcOpenMemHandle)");
  // From here the mapping is owned: close it on every error path.
  std::unique_ptr<DeviceSegment> segment(new DeviceSegment(static_cast<uint8_t*>(ptr), 0, device));
  CUdeviceptr base = 0;
  size_t size = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_get_address_range(&base, &size, reinterpret_cast<CUdeviceptr>(ptr)),
                                     "cuMemGetAddressRange"));
  if (claimed_size == 0 || claimed_size > size) {
    return Status::InvalidArgument("the client registered a GPU buffer of " + std::to_string(claimed_size) +
                                   " bytes, but the allocation holds " + std::to_string(size));
  }
  segment->size_ = claimed_size;
  *out = std::move(segment);
  return Status::Ok();
}

Status DeviceSegment::Import(const std::vector<int>& fds, const std::vector<uint64_t>& sizes, const DeviceUuid& uuid,
                             std::unique_ptr<DeviceSegment>* out) {
  int device = -1;
  BATON_RETURN_IF_ERROR(FindDevice(uuid, &device));
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  std::unique_ptr<VmmMapping> mapping;
  BATON_RETURN_IF_ERROR(VmmMapping::Import(fds, sizes, device, &mapping)
                            .WithContext("opening the client's GPU allocation passed as a file descriptor: "));
  std::unique_ptr<DeviceSegment> segment(new DeviceSegment(mapping->data(), mapping->size(), device));
  segment->mapping_ = std::move(mapping);
  *out = std::move(segment);
  return Status::Ok();
}

DeviceSegment::~DeviceSegment() {
  if (mapping_ != nullptr) {
    (void)cudaSetDevice(device_);  // unmap with the device's context current
    mapping_.reset();
    return;
  }
  if (cudaSetDevice(device_) != cudaSuccess || cudaIpcCloseMemHandle(data_) != cudaSuccess) {
    BATON_WARN("closing a client's GPU buffer failed: {}", cudaGetErrorString(cudaGetLastError()));
  }
}

}  // namespace baton::gpu
