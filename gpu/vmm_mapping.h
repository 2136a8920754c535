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
// The mapping covers the allocation from its start: cuMemMap's offset is 0
// here and in every allocator that shares memory this way (PyTorch's
// expandable segments, NCCL's cuMem buffers). CUDA builds only.
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.h"

namespace baton::gpu {

class VmmMapping {
 public:
  // A new allocation of at least `bytes` (rounded up to the device's
  // granularity) on `device`; exportable as a POSIX fd when `shareable`.
  static Status Create(int device, uint64_t bytes, bool shareable, std::unique_ptr<VmmMapping>* out);
  // Maps the first `bytes` of the allocation another process exported as
  // `fd` (the fd may be closed afterwards). The allocation must be on
  // `device` (this process's ordinal), and `bytes` a multiple of its
  // granularity no larger than the allocation.
  static Status Import(int fd, int device, uint64_t bytes, std::unique_ptr<VmmMapping>* out);
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
  bool mapped_ = false;  // the range holds the allocation (else: reserved only)
};

// Whether `device` can allocate memory exportable as a POSIX fd.
bool SupportsShareableVmm(int device);

}  // namespace baton::gpu
