// StreamCopy: a memory copy whose stores bypass the cache (non-temporal).
//
// Why: an ordinary store to a line that is not in cache first reads the line
// from memory (read for ownership), so copying S bytes out of cache moves 3S
// through memory: S read, S read for ownership, S written. When the copy's
// destination is not read again soon (a rank's output at the end of a large
// collective), non-temporal stores skip the read for ownership and the copy
// moves 2S. For destinations that are read again soon they are a loss (the
// data is no longer in cache), so callers use them only for large copies
// whose destination nothing else in the same run of steps reads.
#pragma once

#include <cstdint>

namespace baton {

// Copies `bytes` from `src` to `dst` (regions must not overlap) with
// non-temporal stores where the CPU has them (x86-64: SSE2); elsewhere,
// memcpy. The calling thread sees the data at once; other threads only
// after it calls StreamFence (non-temporal stores are weakly ordered), which
// costs a wait for the stores to drain: call it once after a batch of copies.
void StreamCopy(uint8_t* dst, const uint8_t* src, uint64_t bytes);
void StreamFence();

}  // namespace baton
