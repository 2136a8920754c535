// Copies between the application's device memory and libbaton's bounce
// buffers: device memory of libbaton's own (baton_mem_alloc_device) that
// stands in, for batond, for device memory batond cannot open (managed
// memory, cudaMallocAsync pools, cuMemCreate memory without a POSIX fd
// handle type, spans of more mappings than one registration joins; see
// DevicePointer::unshareable). Driver calls, made in the context of the
// caller's stream or of the memory, as everything libbaton does on the GPU
// (gpu/driver_api.h says why). CUDA builds only; without CUDA they fail.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace baton::gpu {

// Enqueues on `stream` (a cudaStream_t; nullptr: the legacy default stream
// of the thread's current context) a copy of `bytes` from `src` to `dst`,
// after the work already on the stream. Returns at once.
Status QueueCopyOnStream(void* stream, void* dst, const void* src, uint64_t bytes);

// Copies `bytes` from `src` to `dst`, either of them device memory of
// `device`, on that device's legacy default stream, and waits for the copy
// (the blocking and request forms of the API: their input must be ready
// when the call is made, and their output is read once it returns).
Status CopyOnDeviceAndWait(int device, void* dst, const void* src, uint64_t bytes);

}  // namespace baton::gpu
