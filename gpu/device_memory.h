// Device memory as the client library sees it: telling device pointers from
// host ones, allocating memory the daemon can open, and exporting an
// allocation for the daemon (docs/gpu.md, "Which memory batond accepts").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ipc_protocol.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace baton::gpu {

using IpcHandle = std::array<uint8_t, 64>;   // cudaIpcMemHandle_t, as bytes
using DeviceUuid = std::array<uint8_t, 16>;  // names a device across processes (ordinals differ per process)

// How an allocation reaches batond (the wire value of RegisterDeviceRequest).
enum class Sharing : uint32_t {
  kCudaIpc = 0,  // cudaMalloc memory: a legacy CUDA IPC handle, 64 bytes
  kPosixFd = 1,  // cuMemCreate memory exportable as a POSIX fd, passed over the Unix socket
};

// One cuMemCreate mapping (Sharing::kPosixFd).
struct MappedPiece {
  uintptr_t base = 0;
  uint64_t size = 0;
  uint64_t buffer_id = 0;  // changes when the range is unmapped and mapped again
};
// The most mappings one registration joins (ExtendToCover): as many as one
// RegisterDevice request carries.
inline constexpr size_t kMaxSpanPieces = ipc::kMaxDevicePieces;

struct DevicePointer {
  bool on_device = false;  // false: host memory (always, without CUDA)
  int device = -1;
  uint64_t buffer_id = 0;  // the driver's id of the allocation; never reused within a process
  uintptr_t base = 0;      // the allocation holding the pointer (for cuMemCreate memory: its mapping)
  uint64_t size = 0;       //   and its size (of all pieces, for a span)
  Sharing sharing = Sharing::kCudaIpc;
  std::vector<MappedPiece> pieces;  // kPosixFd: the mappings side by side from `base` (one, unless extended)
  // Why batond cannot open this memory; empty when it can. Such memory
  // (managed, from a cudaMallocAsync pool, cuMemCreate without a POSIX fd
  // handle type, a span of more than kMaxSpanPieces mappings) is still
  // device memory that libbaton can copy; base and size are then only
  // meaningful for cuMemCreate memory.
  std::string unshareable;
};

// Classifies `p`. Host memory (pageable or pinned) gives on_device = false;
// device memory batond cannot open gives on_device with `unshareable` set.
Status QueryPointer(const void* p, DevicePointer* out);

// For cuMemCreate memory: extends `ptr` over the mappings that follow its
// own without a gap (allocators such as PyTorch's expandable segments map
// many allocations side by side in one reserved range), until it reaches
// `end`. Refused with the reason when the next bytes are not such a mapping
// of the same GPU. Past kMaxSpanPieces mappings, or over one that cannot be
// exported, it goes on checking the range but sets `unshareable`.
Status ExtendToCover(DevicePointer* ptr, uintptr_t end);

// False once the allocation `buffer_id` that started at `base` is gone
// (freed, or the address now belongs to another allocation).
bool StillAllocated(uintptr_t base, uint64_t buffer_id);

// What batond needs to open an allocation.
struct ExportedAllocation {
  IpcHandle ipc_handle{};    // Sharing::kCudaIpc
  std::vector<UniqueFd> fds;  // Sharing::kPosixFd: one per piece
  DeviceUuid uuid{};          // the device it is on
};
Status ExportAllocation(const DevicePointer& ptr, ExportedAllocation* out);

// Memory for baton_mem_alloc_device on `device`: from cuMemCreate,
// exportable as a POSIX fd, where the device supports that; from cudaMalloc
// otherwise, with the reason in *why_not_fd (for a batond that takes fds
// only). Either way batond can open it.
Status AllocateDevice(int device, uint64_t bytes, void** out, std::string* why_not_fd);
// Frees memory from AllocateDevice.
Status FreeDevice(void* p);

}  // namespace baton::gpu
