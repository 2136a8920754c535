// Ordering host-side work against a CUDA stream without blocking the host:
// the stream writes a flag in host memory when it reaches a point, and waits
// for a flag that the host (batond) writes. Both are CUDA stream memory
// operations (cuStreamWriteValue32 / cuStreamWaitValue32) on host memory
// registered for the device, so batond never needs the client's CUDA
// context and the client's host thread never waits.
//
// Everything here runs in the context of the caller's stream (the current
// context for the legacy default stream, nullptr), never in one of
// libbaton's choosing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace baton::gpu {

// Host memory registered so that every GPU can read and write it (portable,
// device-mapped); unregistered on destruction.
class HostRegistration {
 public:
  HostRegistration() = default;
  ~HostRegistration();
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  // Registers [p, p + bytes) in the context of `stream` (a cudaStream_t).
  Status Register(void* p, size_t bytes, void* stream);
  bool registered() const { return base_ != nullptr; }

 private:
  void* base_ = nullptr;
};

// Enqueues on `stream`: *flag = value, once the work before it on the
// stream completed. `flag` must lie in registered memory.
Status StreamWriteFlag(void* stream, std::atomic<uint32_t>* flag, uint32_t value);

// Enqueues on `stream`: wait until *flag >= value (as unsigned 32-bit)
// before later work on the stream runs.
Status StreamWaitFlag(void* stream, std::atomic<uint32_t>* flag, uint32_t value);

}  // namespace baton::gpu
