// AllocationCounter: counts the operator new calls of the calling thread
// while it lives, for tests that a hot path allocates nothing. The test
// binary that links allocation_counter.cc gets its operator new (which
// forwards to malloc, and counts only on threads with a counter alive).
#pragma once

namespace baton::testing {

class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;

  int count() const;
};

}  // namespace baton::testing
