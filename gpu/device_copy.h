// Copies between GPU memory and (pinned) host memory for batond's staging
// path. Each returns once the copy finished. They run on a stream that
// belongs to the calling thread and device, so that copies of different
// communicators (different worker threads) overlap on the copy engines
// instead of queueing behind one another on the default stream.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace baton::gpu {

// Copies and waits for the copy. The calling thread's current CUDA context
// (its current device) is as it was on return: libbaton calls these on the
// application's threads (the fast path).
Status CopyToHost(void* host, const void* device_ptr, uint64_t bytes, int device);
Status CopyToDevice(void* device_ptr, const void* host, uint64_t bytes, int device);

// The same copies queued, not waited for, on the same stream: the copies
// one thread queues for one device run in the order queued.
Status QueueCopyToHost(void* host, const void* device_ptr, uint64_t bytes, int device);
Status QueueCopyToDevice(void* device_ptr, const void* host, uint64_t bytes, int device);

// A point in this thread's stream for one device: the copies queued before
// it. Marks are numbered from 0 after each ForgetMarks, which must only
// follow WaitForCopies on every device marked since the last one (a mark's
// CUDA event is then reused).
struct CopyMark {
  int device = -1;
  uint32_t index = 0;
};
Status MarkCopies(int device, CopyMark* out);
Status WaitForMark(const CopyMark& mark);
void ForgetMarks();
// Waits for every copy this thread queued for `device`.
Status WaitForCopies(int device);

}  // namespace baton::gpu
