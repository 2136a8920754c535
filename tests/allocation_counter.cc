#include "tests/allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local int t_counters = 0;  // AllocationCounters alive on this thread
thread_local int t_allocations = 0;
}  // namespace

// Every plain (not over-aligned) form is replaced, so that each allocation
// and its release go through the same pair here, malloc and free (a
// sanitizer checks that they match). In a file of their own, so that the
// compiler does not pair these with the library's at call sites.
namespace {
void* Allocate(std::size_t bytes) {
  if (t_counters > 0) ++t_allocations;
  return std::malloc(bytes == 0 ? 1 : bytes);
}
void* AllocateOrThrow(std::size_t bytes) {
  if (void* p = Allocate(bytes)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t bytes) { return AllocateOrThrow(bytes); }
void* operator new[](std::size_t bytes) { return AllocateOrThrow(bytes); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept { return Allocate(bytes); }
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept { return Allocate(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace baton::testing {

AllocationCounter::AllocationCounter() {
  if (t_counters++ == 0) t_allocations = 0;
}
AllocationCounter::~AllocationCounter() { --t_counters; }
int AllocationCounter::count() const { return t_allocations; }

}  // namespace baton::testing
