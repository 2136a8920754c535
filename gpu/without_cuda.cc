// gpu/ in a build without CUDA (-DBATON_CUDA=OFF, or no toolkit found):
// every entry point reports that GPU support was not compiled in, and every
// pointer is host memory. Callers need no #ifdefs.
#include <string>

#include "gpu/bounce_copy.h"
#include "gpu/cuda_support.h"
#include "gpu/device_copy.h"
#include "gpu/device_memory.h"
#include "gpu/device_segment.h"
#include "gpu/pinned_pool.h"
#include "gpu/reduce_kernels.h"
#include "gpu/step_runner.h"
#include "gpu/stream_flags.h"
#include "gpu/vmm_mapping.h"

namespace baton::gpu {

const CudaSupport& GetCudaSupport() {
  static const CudaSupport support{false, false, 0, "this Baton was built without CUDA (-DBATON_CUDA=OFF)"};
  return support;
}

Status RequireCuda(const std::string& what) {
  return Status::Unavailable(what + " needs a GPU, but " + GetCudaSupport().reason);
}

Status QueryPointer(const void*, DevicePointer* out) {
  *out = {};
  return Status::Ok();
}
Status ExtendToCover(DevicePointer*, uintptr_t) { return RequireCuda("a device buffer"); }
bool StillAllocated(uintptr_t, uint64_t) { return false; }
Status ExportAllocation(const DevicePointer&, ExportedAllocation*) { return RequireCuda("a device buffer"); }
Status AllocateDevice(int, uint64_t, void**, std::string*) { return RequireCuda("baton_mem_alloc_device"); }
Status FreeDevice(void*) { return RequireCuda("freeing device memory"); }

Status FindDevice(const DeviceUuid&, int*) { return RequireCuda("a device buffer"); }
Status DeviceSegment::Open(const IpcHandle&, const DeviceUuid&, uint64_t, std::unique_ptr<DeviceSegment>*) {
  return RequireCuda("a device buffer");
}
Status DeviceSegment::Import(const std::vector<int>&, const std::vector<uint64_t>&, const DeviceUuid&,
                             std::unique_ptr<DeviceSegment>*) {
  return RequireCuda("a device buffer");
}
DeviceSegment::~DeviceSegment() = default;

// DeviceSegment's mapping_ is never set here; its destructor is needed all the same.
VmmMapping::~VmmMapping() = default;
bool SupportsShareableVmm(int) { return false; }

Status CopyToHost(void*, const void*, uint64_t, int) { return RequireCuda("a device buffer"); }
Status CopyToDevice(void*, const void*, uint64_t, int) { return RequireCuda("a device buffer"); }
Status QueueCopyToHost(void*, const void*, uint64_t, int) { return RequireCuda("a device buffer"); }
Status QueueCopyToDevice(void*, const void*, uint64_t, int) { return RequireCuda("a device buffer"); }
Status MarkCopies(int, CopyMark*) { return RequireCuda("a device buffer"); }
Status WaitForMark(const CopyMark&) { return RequireCuda("a device buffer"); }
void ForgetMarks() {}
Status WaitForCopies(int) { return RequireCuda("a device buffer"); }

Status PinnedRegion::Create(uint64_t, std::unique_ptr<PinnedRegion>*) { return RequireCuda("pinned staging memory"); }
PinnedRegion::~PinnedRegion() = default;

Status HostRegistration::Register(void*, size_t, void*) { return RequireCuda("a stream-ordered operation"); }
HostRegistration::~HostRegistration() = default;
Status StreamWriteFlag(void*, std::atomic<uint32_t>*, uint32_t) { return RequireCuda("a stream-ordered operation"); }
Status StreamWaitFlag(void*, std::atomic<uint32_t>*, uint32_t) { return RequireCuda("a stream-ordered operation"); }

Status QueueCopyOnStream(void*, void*, const void*, uint64_t) { return RequireCuda("a stream-ordered operation"); }
Status CopyOnDeviceAndWait(int, void*, const void*, uint64_t) { return RequireCuda("a device buffer"); }

Status LaunchReduce(DataType, RedOp, void*, const void*, const void*, uint64_t, void*) {
  return RequireCuda("a GPU reduction");
}
Status LaunchFold(DataType, RedOp, void*, const void* const*, size_t, uint64_t, void*) {
  return RequireCuda("a GPU reduction");
}
Status LaunchDivide(DataType, void*, uint64_t, uint64_t, void*) { return RequireCuda("a GPU reduction"); }

bool EnablePeerAccess(const std::vector<int>&) { return false; }
Status ThreadScratch(int, uint64_t, uint8_t**) { return RequireCuda("GPU scratch memory"); }
Status RunDeviceSteps(const std::vector<DeviceStep>&, DataType, RedOp) { return RequireCuda("a collective on GPUs"); }

}  // namespace baton::gpu
