// LocalOp: one local rank's part of an operation, after validation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/mapping.h"
#include "common/types.h"
#include "daemon/device_staging.h"
#include "daemon/executor.h"
#include "daemon/submission_source.h"

namespace baton {

class Session;
class Communicator;

// Called when a split finishes for a rank: the new communicator (null for a
// negative color), the rank's place in it and its size.
using SplitDoneFn = std::function<void(const Status&, std::shared_ptr<Communicator>, int rank, int size)>;

struct LocalOp {
  int rank = -1;
  uint64_t seq = 0;
  OpSignature sig;
  RankBuffers bufs;
  // Keep the client's segments mapped while the operation is in flight,
  // even if the client frees them (or dies) meanwhile: the send and the
  // receive buffer's segments, and the ring for a stream-ordered op (its
  // readiness flag lies there). Named members, not a vector: no allocation
  // per operation.
  std::shared_ptr<Mapping> send_hold;
  std::shared_ptr<Mapping> recv_hold;
  std::shared_ptr<Mapping> ring_hold;
  std::weak_ptr<Session> session;
  // The same client, as the communicator's worker polls it (same object).
  std::weak_ptr<SubmissionSource> source;
  uint32_t completion = 0;
  // Set when a buffer is in GPU memory or the op is ordered on the client's
  // CUDA stream: the op then goes through the session's StreamGate.
  std::shared_ptr<DeviceStaging> device;

  // Only for Collective::kSplit.
  int32_t color = 0;
  int32_t key = 0;
  SplitDoneFn on_split;

  // Publishes the result to the client (if it is still connected), after
  // copying a device receive buffer's result back (DeviceStaging::Conclude).
  void Finish(const Status& st) const;
};

}  // namespace baton
