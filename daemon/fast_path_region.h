// FastPathRegion: batond's side of a communicator's small-message fast path
// (common/fast_path_layout.h): it creates the shared region that the
// communicator's ranks run small blocking collectives in, hands its fd to
// each rank, and marks it failed when the communicator fails so that ranks
// waiting in it stop waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/fast_path_layout.h"
#include "common/mapping.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace baton {

class FastPathRegion {
 public:
  // A region for `nranks` ranks whose inputs of up to `slot_bytes` take the
  // fast path. nranks must be 1..ipc::kFastPathMaxRanks.
  static Status Create(int nranks, uint64_t slot_bytes, std::chrono::milliseconds timeout,
                       std::unique_ptr<FastPathRegion>* out);

  // The memfd to pass to a rank (the region keeps its own).
  int fd() const { return fd_.get(); }

  // Records the first failure and wakes every rank waiting in the region.
  // Not thread-safe: the communicator calls it under its lock.
  void Fail(const Status& reason);

 private:
  FastPathRegion() = default;

  UniqueFd fd_;
  Mapping mapping_;
  ipc::FastPathView view_;
};

}  // namespace baton
