#include "daemon/stream_gate.h"

#include "common/logging.h"
#include "common/thread_name.h"
#include "daemon/device_execution.h"

namespace baton {

StreamGate::StreamGate(std::shared_ptr<gpu::PinnedPool> pool) : state_(std::make_shared<State>()) {
  state_->pool = std::move(pool);
  thread_ = std::thread([state = state_] { Run(state); });
}

StreamGate::~StreamGate() {
  Stop();
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // it holds the state and ends after the queue drains
  } else {
    thread_.join();
  }
}

void StreamGate::Stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);  // so that Run cannot miss the notification
    state_->stopping = true;
  }
  state_->cv.notify_all();
}

void StreamGate::Retire() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->retiring = true;
  }
  state_->cv.notify_all();
}

bool StreamGate::busy() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return !state_->queue.empty() || state_->in_hand > 0;
}

void StreamGate::Push(LocalOp op, std::shared_ptr<Communicator> comm, std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queue.push_back({std::move(op), std::move(comm), deadline});
  }
  state_->cv.notify_one();
}

void StreamGate::Run(const std::shared_ptr<State>& state) {
  NameThisThread(kThreadName);
  for (;;) {
    Entry e;
    {
      std::unique_lock<std::mutex> lock(state->mu);
      state->cv.wait(lock, [&] { return state->stopping || state->retiring || !state->queue.empty(); });
      if (state->queue.empty()) return;  // stopping or retired, nothing left
      e = std::move(state->queue.front());
      state->queue.pop_front();
      ++state->in_hand;
    }
    Status st = Status::Ok();
    if (state->stopping) {
      st = Status::Aborted("the client disconnected before its CUDA stream reached this operation");
    } else if (e.op.device) {
      const bool defer = WorkerDecidesStaging(e.op);
      st = e.op.device->Prepare(*state->pool, &e.op.bufs, e.deadline, state->stopping, defer);
    }
    if (st.ok()) {
      e.comm->Submit(std::move(e.op));
    } else {
      const Status failed(st.code(), "rank " + std::to_string(e.op.rank) + " of " + e.comm->Describe() + ", op #" +
                                         std::to_string(e.op.seq) + " (" + e.op.sig.ToString() + "): " + st.message());
      BATON_WARN("{}", failed.message());
      e.op.Finish(failed);
      // Its peers would wait for this rank forever: fail the communicator.
      if (e.op.sig.collective != Collective::kSend && e.op.sig.collective != Collective::kRecv) e.comm->Abort(failed);
    }
    e = Entry{};  // let go of the session's memory before taking the lock
    std::lock_guard<std::mutex> lock(state->mu);
    --state->in_hand;
  }
}

}  // namespace baton
