// WorkerPool: a few helper threads that share the memory-bound work of one
// large collective (copies and reductions of the local ranks' buffers) with
// the communicator worker that runs it.
//
// Sized to the cores the daemon is given (--reduce-threads). One collective
// uses the pool at a time; a worker that finds it busy runs its blocks
// itself, so communicators never wait for each other's reductions.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace baton {

class WorkerPool {
 public:
  // `threads` counts the caller: threads - 1 helpers are started (none for
  // 1), named `thread_name` unless it is empty (common/thread_name.h).
  explicit WorkerPool(int threads, std::string thread_name = {});
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  // Calls task(i) for every i in [0, n), on the calling thread and the
  // helpers, and returns when all calls returned. Tasks must not throw.
  void Run(size_t n, const std::function<void(size_t)>& task);

 private:
  void Helper();
  void Drain();  // runs tasks of the current job until none is left

  std::vector<std::thread> helpers_;
  std::mutex run_mu_;  // held by the one caller whose job the helpers serve

  std::mutex mu_;
  std::condition_variable wake_;  // helpers: a job (or stop) is posted
  std::condition_variable done_;  // caller: every helper left the job
  uint64_t generation_ = 0;       // bumped per job
  int busy_helpers_ = 0;          // helpers inside the current job
  bool stop_ = false;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t tasks_ = 0;
  std::atomic<size_t> next_{0};
};

}  // namespace baton
