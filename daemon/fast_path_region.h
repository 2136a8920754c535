// FastPathRegion: batond's side of a communicator's small-message fast path
// (common/fast_path_layout.h): it creates the shared region that the
// communicator's ranks run small blocking collectives in, hands its fd to
// each rank, and marks it failed when the communicator fails so that ranks
// waiting in it stop waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

  // An operation some ranks have reached and others not (what `batonctl
  // inflight` shows for the fast path), if any.
  struct Pending {
    uint32_t seq = 0;
    std::string op;
    std::vector<int> arrived, missing;
    std::vector<int64_t> arrival_unix_us;  // per entry of `arrived`
    double waiting_seconds = 0;
  };
  std::optional<Pending> Waiting() const;

  // How many fast-path operations every rank has reached (published its
  // input for), as the ranks wrote it: a figure to show, never trusted.
  uint32_t OpsEveryRankReached() const;

  // Records the first failure and wakes every rank waiting in the region.
  // Not thread-safe: the communicator calls it under its lock.
  void Fail(const Status& reason);

 private:
  FastPathRegion() = default;

  UniqueFd fd_;
  int nranks_ = 0;  // ours: the header's copy is writable by the ranks
  bool failed_ = false;
  Mapping mapping_;
  ipc::FastPathView view_;
};

}  // namespace baton
