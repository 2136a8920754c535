#include "gpu/device_memory.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/logging.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/driver_api.h"
#include "gpu/vmm_mapping.h"

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
  // Managed memory is asked first: whichever type the driver reports for
  // it, it is bounced on the device it was allocated against, so that
  // stream-ordered calls accept it too.
  unsigned int managed = 0;
  api->pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
  if (type != CU_MEMORYTYPE_DEVICE && managed == 0) return Status::Ok();  // pinned or registered host memory
  int ordinal = -1;
  const CUresult asked = api->pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  // Managed memory of no device (attached to the host): the CPU reads it
  // as host memory, and it is staged as such.
  if (managed != 0 && (asked != CUDA_SUCCESS || ordinal < 0)) return Status::Ok();
  BATON_RETURN_IF_ERROR(FromCuDriver(asked, "device of a pointer"));
  unsigned long long id = 0;
  BATON_RETURN_IF_ERROR(
      FromCuDriver(api->pointer_get_attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr), "buffer id of a pointer"));
  out->on_device = true;
  out->device = ordinal;
  out->buffer_id = id;
  if (managed != 0) {
    out->unshareable = "the buffer is CUDA managed memory, which CUDA IPC cannot share with batond";
    return Status::Ok();
  }
  unsigned int legacy = 1;  // a driver that cannot say: assume cudaMalloc memory, as before CUDA 11
  api->pointer_get_attribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ptr);
  if (legacy == 0) {
    CUmemoryPool pool = nullptr;
    api->pointer_get_attribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, ptr);
    if (pool != nullptr) {
      out->unshareable = "the buffer comes from a cudaMallocAsync memory pool, which batond cannot open";
      return Status::Ok();
    }
    // The unit batond maps is the mapping the pointer lies in (one
    // cuMemCreate allocation), not the whole reserved address range.
    CUdeviceptr mapping = 0;
    size_t mapping_size = 0;
    BATON_RETURN_IF_ERROR(FromCuDriver(
        api->pointer_get_attribute(&mapping, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, ptr), "mapping of a pointer"));
    BATON_RETURN_IF_ERROR(FromCuDriver(
        api->pointer_get_attribute(&mapping_size, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, ptr), "mapping size of a pointer"));
    out->base = static_cast<uintptr_t>(mapping);
    out->size = mapping_size;
    out->sharing = Sharing::kPosixFd;
    out->pieces = {{static_cast<uintptr_t>(mapping), mapping_size, id}};
    unsigned int handle_types = 0;
    api->pointer_get_attribute(&handle_types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, ptr);
    if ((handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
      out->unshareable = "the buffer is cuMemCreate memory that cannot be exported as a POSIX file descriptor "
                         "(requestedHandleTypes lacks CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), so batond cannot "
                         "open it";
    }
    return Status::Ok();
  }
  ScopedContext scoped(*api, ptr);
  BATON_RETURN_IF_ERROR(scoped.status());
  CUdeviceptr base = 0;
  size_t size = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->mem_get_address_range(&base, &size, ptr), "cuMemGetAddressRange"));
  out->sharing = Sharing::kCudaIpc;
  out->base = static_cast<uintptr_t>(base);
  out->size = size;
  return Status::Ok();
}

Status ExtendToCover(DevicePointer* ptr, uintptr_t end) {
  while (ptr->base + ptr->size < end) {
    const uintptr_t next = ptr->base + ptr->size;
    DevicePointer piece;
    const Status st = QueryPointer(reinterpret_cast<const void*>(next), &piece);
    if (!st.ok() || !piece.on_device || piece.sharing != Sharing::kPosixFd || piece.base != next ||
        piece.device != ptr->device) {
      return Status::InvalidArgument("the GPU buffer runs past the end of its " + std::to_string(ptr->size) +
                                     "-byte cuMemCreate mapping, and what follows is not another cuMemCreate "
                                     "mapping on the same GPU" + (st.ok() ? std::string() : ": " + st.message()));
    }
    if (ptr->unshareable.empty()) ptr->unshareable = piece.unshareable;
    if (ptr->unshareable.empty() && ptr->pieces.size() >= kMaxSpanPieces) {
      ptr->unshareable = "the GPU buffer spans more than " + std::to_string(kMaxSpanPieces) +
                         " cuMemCreate mappings, more than one registration with batond joins";
    }
    if (ptr->unshareable.empty()) ptr->pieces.push_back(piece.pieces.front());
    ptr->size += piece.size;
  }
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

Status ExportAllocation(const DevicePointer& ptr, ExportedAllocation* out) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  if (!ptr.unshareable.empty()) return Status::Internal("exporting memory batond cannot open: " + ptr.unshareable);
  const auto base = static_cast<CUdeviceptr>(ptr.base);
  if (ptr.sharing == Sharing::kPosixFd) {  // allocations of no context: none needed
    for (const MappedPiece& piece : ptr.pieces) {
      CUmemGenericAllocationHandle allocation = 0;
      BATON_RETURN_IF_ERROR(FromCuDriver(
          api->mem_retain_allocation_handle(&allocation, reinterpret_cast<void*>(piece.base)),
          "cuMemRetainAllocationHandle"));
      int fd = -1;
      Status exported = FromCuDriver(
          api->mem_export_to_shareable_handle(&fd, allocation, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          "exporting the GPU allocation as a file descriptor (cuMemExportToShareableHandle)");
      api->mem_release(allocation);  // the reference cuMemRetainAllocationHandle took
      BATON_RETURN_IF_ERROR(exported);
      out->fds.emplace_back(fd);
    }
  } else {
    ScopedContext scoped(*api, base);
    BATON_RETURN_IF_ERROR(scoped.status());
    CUipcMemHandle h{};
    BATON_RETURN_IF_ERROR(FromCuDriver(api->ipc_get_mem_handle(&h, base),
                                       "cuIpcGetMemHandle (memory from cudaMallocAsync pools or cuMemCreate cannot "
                                       "be exported this way; use cudaMalloc or baton_mem_alloc_device)"));
    static_assert(sizeof h == sizeof(IpcHandle));
    std::memcpy(out->ipc_handle.data(), &h, sizeof h);
  }
  CUdevice device = 0;
  BATON_RETURN_IF_ERROR(FromCuDriver(api->device_get(&device, ptr.device), "cuDeviceGet"));
  CUuuid id{};
  BATON_RETURN_IF_ERROR(FromCuDriver(api->device_get_uuid(&id, device), "cuDeviceGetUuid"));
  static_assert(sizeof id == sizeof(DeviceUuid));
  std::memcpy(out->uuid.data(), &id, sizeof id);
  return Status::Ok();
}

namespace {

// AllocateDevice's cuMemCreate allocations, by address, until FreeDevice.
struct MappedAllocations {
  std::mutex mu;
  std::map<uintptr_t, std::unique_ptr<VmmMapping>> by_address;
};
MappedAllocations& Mapped() {
  static auto* mapped = new MappedAllocations;  // never destroyed: frees may come from static destructors
  return *mapped;
}

}  // namespace

Status AllocateDevice(int device, uint64_t bytes, void** out, std::string* why_not_fd) {
  BATON_RETURN_IF_ERROR(RequireCuda("baton_mem_alloc_device"));
  if (device < 0 || device >= GetCudaSupport().device_count) {
    return Status::InvalidArgument("device " + std::to_string(device) + " does not exist (this process sees " +
                                   std::to_string(GetCudaSupport().device_count) + ")");
  }
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  PreserveCurrentContext keep(*api);
  BATON_CUDA_RETURN_IF_ERROR(cudaSetDevice(device), "cudaSetDevice");
  *why_not_fd = "device " + std::to_string(device) + " cannot export cuMemCreate memory as a POSIX file descriptor";
  if (SupportsShareableVmm(device)) {
    std::unique_ptr<VmmMapping> mapping;
    Status st = VmmMapping::Create(device, bytes, /*shareable=*/true, &mapping);
    if (st.ok()) {
      *out = mapping->data();
      std::lock_guard<std::mutex> lock(Mapped().mu);
      Mapped().by_address[reinterpret_cast<uintptr_t>(*out)] = std::move(mapping);
      return Status::Ok();
    }
    // A device that claims the support but whose driver (or sandbox)
    // refuses it: cudaMalloc memory serves as well, through CUDA IPC.
    *why_not_fd = st.ToString();
    static std::once_flag told;
    std::call_once(told, [&] {
      BATON_WARN("baton_mem_alloc_device: {}; using cudaMalloc (legacy CUDA IPC) instead", st.ToString());
    });
  }
  return FromCuda(cudaMalloc(out, bytes), "cudaMalloc of " + std::to_string(bytes) + " bytes");
}

Status FreeDevice(void* p) {
  const DriverApi* api = nullptr;
  BATON_RETURN_IF_ERROR(GetDriverApi(&api));
  std::unique_ptr<VmmMapping> mapping;
  {
    std::lock_guard<std::mutex> lock(Mapped().mu);
    if (auto it = Mapped().by_address.find(reinterpret_cast<uintptr_t>(p)); it != Mapped().by_address.end()) {
      mapping = std::move(it->second);
      Mapped().by_address.erase(it);
    }
  }
  if (mapping != nullptr) {
    mapping.reset();  // unmaps; the memory goes once batond has unmapped it too
    return Status::Ok();
  }
  PreserveCurrentContext keep(*api);
  return FromCuda(cudaFree(p), "cudaFree");
}

}  // namespace baton::gpu
