#include "tests/allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local int t_counters = 0;  // AllocationCounters alive on this thread
thread_local int t_allocations = 0;
}  // namespace

// In a file of their own, so that the compiler does not pair these with
// the library's allocation functions at call sites.
void* operator new(std::size_t bytes) {
  if (t_counters > 0) ++t_allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace baton::testing {

AllocationCounter::AllocationCounter() {
  if (t_counters++ == 0) t_allocations = 0;
}
AllocationCounter::~AllocationCounter() { --t_counters; }
int AllocationCounter::count() const { return t_allocations; }

}  // namespace baton::testing
