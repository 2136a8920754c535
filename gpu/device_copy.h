// Copies between GPU memory and (pinned) host memory for batond's staging
// path. Each returns once the copy finished. They run on a stream that
// belongs to the calling thread and device, so that copies of different
// communicators (different worker threads) overlap on the copy engines
// instead of queueing behind one another on the default stream.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace baton::gpu {

Status CopyToHost(void* host, const void* device_ptr, uint64_t bytes, int device);
Status CopyToDevice(void* device_ptr, const void* host, uint64_t bytes, int device);

}  // namespace baton::gpu
