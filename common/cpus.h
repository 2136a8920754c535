// How many CPUs this thread may run on: what sizes thread pools, splits a
// machine into simulated nodes, and tells a polling loop whether the ones
// it waits for have cores of their own (common/poll_pause.h).
#pragma once

namespace baton {

// The CPUs in this thread's affinity mask (as a launcher or cgroup cpuset
// narrows it, not the machine's count); at least 1.
int UsableCpus();

}  // namespace baton
