// Device memory as the client library sees it: telling device pointers from
// host ones, allocating memory the daemon can open, and exporting an
// allocation for the daemon (CUDA IPC).
#pragma once

#include <array>
#include <cstdint>

#include "common/status.h"

namespace baton::gpu {

using IpcHandle = std::array<uint8_t, 64>;   // cudaIpcMemHandle_t, as bytes
using DeviceUuid = std::array<uint8_t, 16>;  // names a device across processes (ordinals differ per process)

struct DevicePointer {
  bool on_device = false;  // false: host memory (always, without CUDA)
  int device = -1;
  uint64_t buffer_id = 0;  // the driver's id of the allocation; never reused within a process
  uintptr_t base = 0;      // the allocation holding the pointer
  uint64_t size = 0;
};

// Classifies `p`. Host memory (pageable or pinned) gives on_device = false;
// managed memory is refused (CUDA IPC cannot share it).
Status QueryPointer(const void* p, DevicePointer* out);

// False once the allocation `buffer_id` that started at `base` is gone
// (freed, or the address now belongs to another allocation).
bool StillAllocated(uintptr_t base, uint64_t buffer_id);

// The IPC handle of the allocation and the UUID of its device.
Status ExportAllocation(const DevicePointer& ptr, IpcHandle* handle, DeviceUuid* uuid);

// cudaMalloc on `device`: memory CUDA IPC can share by construction.
Status AllocateDevice(int device, uint64_t bytes, void** out);
Status FreeDevice(void* p);

}  // namespace baton::gpu
