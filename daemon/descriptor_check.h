// The checks a client's descriptor passes before the daemon acts on it.
// Pure functions of the descriptor's bytes (copied out of shared memory
// first) and the communicator's shape, so that they can be fuzzed alone.
#pragma once

#include <cstdint>

#include "common/ipc_protocol.h"
#include "common/status.h"
#include "common/types.h"

namespace baton {

// What a valid descriptor asks for, short of its buffers' segments.
struct CheckedDescriptor {
  OpSignature sig;
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
  bool stream_ordered = false;  // kDescStreamOrdered
};

// Enums, root or peer against `nranks`, and the buffer sizes the count
// implies for rank `my_rank` (without overflow). InvalidArgument otherwise.
Status CheckDescriptor(const ipc::Descriptor& d, int nranks, int my_rank, CheckedDescriptor* out);

// [offset, offset + bytes) lies within a segment of `segment_size` bytes.
Status CheckBufferRange(uint64_t offset, uint64_t bytes, uint64_t segment_size, const char* which);

}  // namespace baton
