// The idle turn of a polling loop: what a thread does when it looked and
// the thread or process it waits for has not moved yet.
//
// Two choices. Yielding the core (sched_yield) lets the one we wait for run
// if it shares our core, but it is a system call: 1.2 us on our test VMs,
// longer than a whole 8-byte AllReduce of two ranks, and a waiter inside it
// notices the other side's progress that much late. Pausing (the CPU's
// spin-wait hint) notices it within a fraction of a microsecond but keeps
// the core: right only when whatever we wait for has a core of its own.
#pragma once

namespace baton {

// One idle turn: a few spin-wait hints when `own_cores` (every thread we may
// wait for can run on a core of its own: compare their number with
// UsableCpus(), common/cpus.h), otherwise a yield of the core.
void PollPause(bool own_cores);

}  // namespace baton
