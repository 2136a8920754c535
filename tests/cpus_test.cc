#include "common/cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace baton {
namespace {

// UsableCpus sizes batond's reduction pool and decides whether a waiting
// rank may keep its core (client/src/fast_path.cc): it must follow the
// thread's own affinity, as a launcher that binds ranks sets it, not the
// machine's CPU count.
TEST(Cpus, UsableCpusFollowsTheThreadsAffinity) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(UsableCpus(), CPU_COUNT(&all));

  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  int bound = -1;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (::sched_setaffinity(0, sizeof one, &one) == 0) bound = UsableCpus();
  });
  t.join();
  EXPECT_EQ(bound, 1);
  EXPECT_EQ(UsableCpus(), CPU_COUNT(&all));  // the other thread's binding is its own
}

}  // namespace
}  // namespace baton
