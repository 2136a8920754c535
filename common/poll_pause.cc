#include "common/poll_pause.h"

#include <thread>

namespace baton {

void PollPause(bool own_cores) {
  if (!own_cores) {
    std::this_thread::yield();
    return;
  }
  // A handful of hints: long enough not to hammer the cache line we poll
  // (the writer's store gets it back sooner), short against the 1.2 us a
  // yield costs.
  for (int i = 0; i < 8; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  }
}

}  // namespace baton
