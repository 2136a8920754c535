#include "common/worker_pool.h"

#include "common/thread_name.h"

namespace baton {

WorkerPool::WorkerPool(int threads, std::string thread_name) {
  for (int i = 1; i < threads; ++i) {
    helpers_.emplace_back([this, thread_name] {
      if (!thread_name.empty()) NameThisThread(thread_name);
      Helper();
    });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void WorkerPool::Drain() {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < tasks_;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    (*task_)(i);
  }
}

void WorkerPool::Run(size_t n, const std::function<void(size_t)>& task) {
  std::unique_lock<std::mutex> run(run_mu_, std::try_to_lock);
  if (helpers_.empty() || n < 2 || !run.owns_lock()) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    tasks_ = n;
    next_.store(0, std::memory_order_relaxed);
    ++generation_;
  }
  wake_.notify_all();
  Drain();
  // The job's state must outlive every helper still inside it.
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return busy_helpers_ == 0 && next_.load(std::memory_order_relaxed) >= tasks_; });
  task_ = nullptr;
  tasks_ = 0;
}

void WorkerPool::Helper() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (task_ == nullptr) continue;  // the job finished before this helper woke
    ++busy_helpers_;
    lock.unlock();
    Drain();
    lock.lock();
    --busy_helpers_;
    if (busy_helpers_ == 0) done_.notify_all();
  }
}

}  // namespace baton
