// Futex wait/wake on a 32-bit word in shared memory (process-shared, so no
// FUTEX_PRIVATE_FLAG).
#pragma once

#include <atomic>
#include <cstdint>

namespace baton {

// Sleeps while *word == expected, at most timeout_ns (negative: no limit).
// Returns false on timeout.
bool FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns);
void FutexWakeAll(std::atomic<uint32_t>* word);

}  // namespace baton
