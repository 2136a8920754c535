// Tells ThreadSanitizer about an ordering that goes through another process.
//
// Two daemon threads can write the same shared-memory word one after the
// other, correctly ordered: the first publishes with a release store, the
// client process acquires it, reuses the memory and publishes again, and
// the second daemon thread acquires that. TSan sees only the daemon's half of
// the chain, so it reports a race that cannot happen. A thread about to write
// such memory calls CrossProcessAcquire on it, and one that has written it
// calls CrossProcessRelease; outside a TSan build both compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace baton {

inline void CrossProcessAcquire([[maybe_unused]] void* addr) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(addr);
#endif
}

inline void CrossProcessRelease([[maybe_unused]] void* addr) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(addr);
#endif
}

}  // namespace baton
