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

}  // namespace

// Reserves an address range, maps `handle` into it and grants `device`
// read/write access. The caller still releases `handle`: the mapping holds
// its own reference to the memory.
class VmmMapper {
 public:
  static Status Map(const DriverApi& api, CUmemGenericAllocationHandle handle, int device, uint64_t size,
                    uint64_t alignment, std::unique_ptr<VmmMapping>* out) {
    CUdeviceptr address = 0;
    BATON_RETURN_IF_ERROR(
        FromCuDriver(api.mem_address_reserve(&address, size, alignment, 0, 0), "cuMemAddressReserve"));
    // From here the destructor gives the range back on every path.
    std::unique_ptr<VmmMapping> mapping(new VmmMapping(static_cast<uintptr_t>(address), size, device));
    BATON_RETURN_IF_ERROR(FromCuDriver(api.mem_map(address, size, 0, handle, 0),
                                       "cuMemMap of " + std::to_string(size) +
                                           " bytes (is that more than the allocation holds?)"));
    mapping->mapped_ = true;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    BATON_RETURN_IF_ERROR(FromCuDriver(api.mem_set_access(address, size, &access, 1), "cuMemSetAccess"));
    *out = std::move(mapping);
    return Status::Ok();
  }
};

Status VmmMapping::Create(int device, uint64_t bytes, bool shareable, std::unique_ptr<VmmMapping>* out) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  const CUmemAllocationProp prop = DeviceMemory(device, shareable);
  uint64_t granularity = 0;
  BATON_RETURN_IF_ERROR(Granularity(*api, prop, &granularity));
  const uint64_t size = (std::max<uint64_t>(bytes, 1) + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_create(&handle, size, &prop, 0),
                                     "cuMemCreate of " + std::to_string(size) + " bytes on device " +
                                         std::to_string(device)));
  Status st = VmmMapper::Map(*api, handle, device, size, granularity, out);
  api->mem_release(handle);  // the mapping (if any) keeps the memory
  return st;
}

Status VmmMapping::Import(int fd, int device, uint64_t bytes, std::unique_ptr<VmmMapping>* out) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  CUmemGenericAllocationHandle handle = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(
      api->mem_import_from_shareable_handle(&handle, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
      "cuMemImportFromShareableHandle (is the fd an allocation exported by cuMemExportToShareableHandle?)"));
  auto imported = [&]() -> Status {
    CUmemAllocationProp prop{};
    BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_get_allocation_properties_from_handle(&prop, handle),
                                       "cuMemGetAllocationPropertiesFromHandle"));
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return Status::InvalidArgument("the allocation passed as a file descriptor is not GPU memory");
    }
    uint64_t granularity = 0;
    BATON_RETURN_IF_ERROR(Granularity(*api, prop, &granularity));
    if (bytes == 0 || bytes % granularity != 0) {
      return Status::InvalidArgument("the client registered " + std::to_string(bytes) +
                                     " bytes of a cuMemCreate allocation, which is not a multiple of its " +
                                     std::to_string(granularity) + "-byte granularity");
    }
    return VmmMapper::Map(*api, handle, device, bytes, granularity, out);
  }();
  api->mem_release(handle);
  return imported;
}

VmmMapping::~VmmMapping() {
  const DriverApi* api = nullptr;
  if (!GetDriverApi(&api).ok()) return;
  const auto address = static_cast<CUdeviceptr>(address_);
  if (mapped_) {
    if (Status st = FromCuDriver(api->mem_unmap(address, size_), "cuMemUnmap"); !st.ok()) {
      BATON_WARN("unmapping {} bytes of GPU memory failed: {}", size_, st.ToString());
    }
  }
  if (Status st = FromCuDriver(api->mem_address_free(address, size_), "cuMemAddressFree"); !st.ok()) {
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
