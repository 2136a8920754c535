#include "baton_work.h"

#include <utility>

namespace baton::torch_backend {

BatonWork::BatonWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                     std::function<void()> on_success, std::vector<at::Tensor> keep_alive)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      on_success_(std::move(on_success)),
      keep_alive_(std::move(keep_alive)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

void BatonWork::Complete(std::exception_ptr error) {
  if (!error && on_success_) {
    try {
      on_success_();
    } catch (...) {
      error = std::current_exception();
    }
  }
  keep_alive_.clear();
  on_success_ = nullptr;
  // Waiters on the Work first, then the future's callbacks (DDP's comm hook
  // continuations run here, on the progress thread, as with Gloo).
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

}  // namespace baton::torch_backend
