#include "common/poll_pause.h"

#include <sched.h>

#include <thread>

namespace baton {

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

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
