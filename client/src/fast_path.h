// FastPath: one rank's side of a communicator's small-message fast path
// (common/fast_path_layout.h explains the region).
//
// When all ranks of a communicator are on one node, a blocking collective
// whose per-rank input fits a slot runs among the ranks in shared memory:
// no descriptor, no daemon thread, no wake-up of another process that is
// not a rank. Every rank must take the same path for the same operation,
// so Accepts depends only on what all ranks agree on (the signature and the
// region's size limit); the caller adds the conditions that are part of
// the call's kind (blocking, outside a group, not on a stream).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/fast_path_layout.h"
#include "common/mapping.h"
#include "common/status.h"
#include "common/types.h"
#include "common/unique_fd.h"

namespace baton::client {

class FastPath {
 public:
  // Maps the region batond passed with the CommInit reply.
  static Status Map(UniqueFd fd, int nranks, int rank, std::unique_ptr<FastPath>* out);

  // True if a blocking `sig` takes the fast path on this communicator.
  bool Accepts(const OpSignature& sig) const;

  // Publishes how many collectives this rank has submitted to batond, so
  // that a rank waiting here can tell a peer that took the other path.
  void NoteDaemonOps(uint64_t submitted);

  // What a waiting rank checks while it sleeps (every 100 ms): an error
  // ends the wait (batond died, say).
  using Check = std::function<Status()>;

  // Runs `sig` with host buffers (sizes as baton::ComputeExtents gives).
  // `daemon_ops`: collectives this rank submitted to batond before this
  // one. `where` names the communicator in errors. Fails with kMismatch if
  // the ranks called different collectives, kTimeout naming the ranks that
  // did not call it, or the communicator's failure recorded by batond.
  Status Run(const OpSignature& sig, const void* send, void* recv, uint64_t daemon_ops, const std::string& where,
             const Check& check);

 private:
  FastPath() = default;
  // Waits until every rank has published op `seq`.
  Status WaitForAll(uint32_t seq, const OpSignature& sig, uint64_t daemon_ops, const std::string& where,
                    const Check& check);
  Status CheckSignatures(uint32_t seq, const OpSignature& mine, const std::string& where) const;
  void ComputeOutput(uint32_t seq, const OpSignature& sig, void* recv) const;

  Mapping mapping_;
  ipc::FastPathView view_;
  int nranks_ = 0;
  int rank_ = 0;
  // Every rank can run on a core of its own (as many usable CPUs as ranks):
  // a waiting rank then polls without yielding its core (common/poll_pause.h).
  bool own_cores_ = false;
  uint32_t seq_ = 0;  // the last op this rank ran here
};

}  // namespace baton::client
