#include "gpu/vmm_mapping.h"

#include <cuda.h>

#include <algorithm>
#include <string>

#include "common/logging.h"
#include "gpu/cuda_check.h"
#include "gpu/driver_api.h"

namespace baton::gpu {
namespace {

CUmemAllocationProp DeviceMemory(int device, bool shareable) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = shareable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

Status Granularity(const DriverApi& api, const CUmemAllocationProp& prop, uint64_t* out) {
  size_t g = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api.mem_get_allocation_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                                     "cuMemGetAllocationGranularity"));
  if (g == 0) return Status::Internal("the CUDA driver reports an allocation granularity of 0");
  *out = g;
  return Status::Ok();
}

// An allocation handle released on every path (the mapping keeps its own
// reference to the memory).
struct HeldHandle {
  const DriverApi& api;
  CUmemGenericAllocationHandle handle = 0;
  ~HeldHandle() {
    if (handle != 0) api.mem_release(handle);
  }
};

}  // namespace

// Reserves the range, then maps allocations into it and grants the device
// read/write access to each.
class VmmMapper {
 public:
  static Status Reserve(const DriverApi& api, int device, uint64_t size, uint64_t alignment,
                        std::unique_ptr<VmmMapping>* out) {
    CUdeviceptr address = 0;
    BATON_RETURN_IF_ERROR(
        FromCuDriver(api.mem_address_reserve(&address, size, alignment, 0, 0), "cuMemAddressReserve"));
    // From here the destructor gives the range back on every path.
    out->reset(new VmmMapping(static_cast<uintptr_t>(address), size, device));
    return Status::Ok();
  }

  static Status Map(const DriverApi& api, CUmemGenericAllocationHandle handle, uint64_t offset, uint64_t size,
                    VmmMapping* mapping) {
    const CUdeviceptr at = static_cast<CUdeviceptr>(mapping->address_ + offset);
    BATON_RETURN_IF_ERROR(FromCuDriver(api.mem_map(at, size, 0, handle, 0),
                                       "cuMemMap of " + std::to_string(size) +
                                           " bytes (is that more than the allocation holds?)"));
    mapping->mapped_.emplace_back(offset, size);
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = mapping->device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return FromCuDriver(api.mem_set_access(at, size, &access, 1), "cuMemSetAccess");
  }
};

Status VmmMapping::Create(int device, uint64_t bytes, bool shareable, std::unique_ptr<VmmMapping>* out) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  const CUmemAllocationProp prop = DeviceMemory(device, shareable);
  uint64_t granularity = 0;
  BATON_RETURN_IF_ERROR(Granularity(*api, prop, &granularity));
  const uint64_t size = (std::max<uint64_t>(bytes, 1) + granularity - 1) / granularity * granularity;
  HeldHandle held{*api};
  BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_create(&held.handle, size, &prop, 0),
                                     "cuMemCreate of " + std::to_string(size) + " bytes on device " +
                                         std::to_string(device)));
  std::unique_ptr<VmmMapping> mapping;
  BATON_RETURN_IF_ERROR(VmmMapper::Reserve(*api, device, size, granularity, &mapping));
  BATON_RETURN_IF_ERROR(VmmMapper::Map(*api, held.handle, 0, size, mapping.get()));
  *out = std::move(mapping);
  return Status::Ok();
}

Status VmmMapping::Import(const std::vector<int>& fds, const std::vector<uint64_t>& sizes, int device,
                          std::unique_ptr<VmmMapping>* out) {
  if (fds.empty() || fds.size() != sizes.size()) {
    return Status::InvalidArgument("importing GPU memory: " + std::to_string(fds.size()) + " file descriptors for " +
                                   std::to_string(sizes.size()) + " pieces");
  }
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;  // the caller bounds each (ipc_protocol.h)
  std::unique_ptr<VmmMapping> mapping;
  uint64_t offset = 0;
  for (size_t i = 0; i < fds.size(); ++i) {
    HeldHandle held{*api};
    BATON_RETURN_IF_ERROR(FromCuDriver(
        api->mem_import_from_shareable_handle(&held.handle, reinterpret_cast<void*>(static_cast<intptr_t>(fds[i])),
                                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        "cuMemImportFromShareableHandle (is the fd an allocation exported by cuMemExportToShareableHandle?)"));
    CUmemAllocationProp prop{};
    BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_get_allocation_properties_from_handle(&prop, held.handle),
                                       "cuMemGetAllocationPropertiesFromHandle"));
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return Status::InvalidArgument("the allocation passed as a file descriptor is not GPU memory");
    }
    uint64_t granularity = 0;
    BATON_RETURN_IF_ERROR(Granularity(*api, prop, &granularity));
    if (sizes[i] == 0 || sizes[i] % granularity != 0) {
      return Status::InvalidArgument("the client registered " + std::to_string(sizes[i]) +
                                     " bytes of a cuMemCreate allocation, which is not a multiple of its " +
                                     std::to_string(granularity) + "-byte granularity");
    }
    if (mapping == nullptr) BATON_RETURN_IF_ERROR(VmmMapper::Reserve(*api, device, total, granularity, &mapping));
    BATON_RETURN_IF_ERROR(VmmMapper::Map(*api, held.handle, offset, sizes[i], mapping.get()));
    offset += sizes[i];
  }
  *out = std::move(mapping);
  return Status::Ok();
}

VmmMapping::~VmmMapping() {
  const DriverApi* api = nullptr;
  if (!GetDriverApi(&api).ok()) return;
  for (const auto& [offset, bytes] : mapped_) {
    if (Status st = FromCuDriver(api->mem_unmap(static_cast<CUdeviceptr>(address_ + offset), bytes), "cuMemUnmap");
        !st.ok()) {
      BATON_WARN("unmapping {} bytes of GPU memory failed: {}", bytes, st.ToString());
    }
  }
  if (Status st = FromCuDriver(api->mem_address_free(static_cast<CUdeviceptr>(address_), size_), "cuMemAddressFree");
      !st.ok()) {
    BATON_WARN("freeing a GPU address range of {} bytes failed: {}", size_, st.ToString());
  }
}

bool SupportsShareableVmm(int device) {
  const DriverApi* api = nullptr;
  if (!GetDriverApi(&api).ok()) return false;
  CUdevice dev = 0;
  int vmm = 0;
  int posix_fd = 0;
  return api->device_get(&dev, device) == CUDA_SUCCESS &&
         api->device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) ==
             CUDA_SUCCESS &&
         api->device_get_attribute(&posix_fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev) ==
             CUDA_SUCCESS &&
         vmm != 0 && posix_fd != 0;
}

}  // namespace baton::gpu
