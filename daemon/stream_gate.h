// StreamGate: the operations of one client session on one communicator
// that cannot go to the communicator straight from the ring, because they
// must first wait for the client's CUDA stream and stage device memory
// (DeviceStaging::Prepare). The session keeps one per communicator.
//
// Why a thread of its own: that wait can be long (the stream runs the
// client's kernels first), and neither the session's I/O thread (it serves
// other clients) nor the communicator's worker (it serves the other ranks)
// may block on it. Order matters: a communicator takes each rank's
// collectives in sequence order, so once one operation of a session waits
// here, every later one of that session on that communicator queues behind
// it (first in, first out) until the gate is empty again.
//
// The thread owns the queue with the gate (shared state), because finishing
// an operation can drop the last reference to the session, and so destroy
// the gate, on the gate's own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/communicator.h"
#include "daemon/local_op.h"
#include "gpu/pinned_pool.h"

namespace baton {

class StreamGate {
 public:
  static constexpr const char* kThreadName = "batond-gate";

  explicit StreamGate(std::shared_ptr<gpu::PinnedPool> pool);
  ~StreamGate();  // Stop, then wait for the thread (unless on it)
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // Operations still queued, or waiting for their stream, finish with an
  // error (the client is gone). Returns at once.
  void Stop();
  // The communicator is gone: the thread ends as soon as the queue is
  // empty (at once if it is), instead of waiting for work that cannot come.
  // Queued operations still finish as they would have.
  void Retire();
  // True while an operation is queued or being prepared: later operations
  // of the session must then go through the gate too.
  bool busy() const;
  // Prepares `op` when its turn comes (waiting at most until `deadline`),
  // then submits it to `comm`; on failure finishes it and aborts `comm`.
  void Push(LocalOp op, std::shared_ptr<Communicator> comm, std::chrono::steady_clock::time_point deadline);

 private:
  struct Entry {
    LocalOp op;
    std::shared_ptr<Communicator> comm;
    std::chrono::steady_clock::time_point deadline;
  };
  struct State {
    std::shared_ptr<gpu::PinnedPool> pool;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Entry> queue;
    int in_hand = 0;  // popped, not yet submitted
    std::atomic<bool> stopping{false};
    bool retiring = false;
  };
  static void Run(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace baton
