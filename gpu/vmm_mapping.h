// VmmMapping: one allocation of CUDA's virtual memory management API
// (cuMemCreate) mapped into this process, readable and writable from its
// device; unmapped, and its address range freed, on destruction.
//
// Why batond cares: such an allocation can be exported as a POSIX file
// descriptor, and the fd is a capability the kernel checks. A client hands
// batond the fd itself over the Unix socket, so batond maps memory only a
// process that owns it could give. A legacy CUDA IPC handle is 64 bytes
// anyone who saw them can present (docs/security.md).
//
// A mapping covers each allocation from its start: cuMemMap's offset is 0
// here and in every allocator that shares memory this way (PyTorch's
// expandable segments, NCCL's cuMem buffers). One range may hold several
// allocations side by side, as the client's address space holds them
// (gpu/device_memory.h, ExtendToCover). CUDA builds only.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/status.h"

namespace baton::gpu {

class VmmMapping {
 public:
  // A new allocation of at least `bytes` (rounded up to the device's
  // granularity) on `device`; exportable as a POSIX fd when `shareable`.
  static Status Create(int device, uint64_t bytes, bool shareable, std::unique_ptr<VmmMapping>* out);
  // Maps allocations another process exported as `fds`, side by side in one
  // address range: the first `sizes[i]` bytes of allocation i follow those
  // of allocation i-1 (the fds may be closed afterwards). Each must be GPU
  // memory, accessed here from `device` (this process's ordinal), and each
  // size a multiple of its granularity no larger than its allocation.
  static Status Import(const std::vector<int>& fds, const std::vector<uint64_t>& sizes, int device,
                       std::unique_ptr<VmmMapping>* out);
  ~VmmMapping();
  VmmMapping(const VmmMapping&) = delete;
  VmmMapping& operator=(const VmmMapping&) = delete;

  uint8_t* data() const { return reinterpret_cast<uint8_t*>(address_); }
  uint64_t size() const { return size_; }
  int device() const { return device_; }

 private:
  friend class VmmMapper;
  VmmMapping(uintptr_t address, uint64_t size, int device) : address_(address), size_(size), device_(device) {}

  uintptr_t address_;  // start of the reserved range (a CUdeviceptr)
  uint64_t size_;
  int device_;
  std::vector<std::pair<uint64_t, uint64_t>> mapped_;  // (offset, bytes) of each allocation mapped so far
};

// Whether `device` can allocate memory exportable as a POSIX fd.
bool SupportsShareableVmm(int device);

}  // namespace baton::gpu
