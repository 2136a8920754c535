// A torch Work for one Baton operation (or a group of them, for alltoall
// with uneven splits), completed by the process group's progress thread.
#ifndef BATON_PYTHON_CSRC_BATON_WORK_H_
#define BATON_PYTHON_CSRC_BATON_WORK_H_

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <exception>
#include <functional>
#include <vector>

namespace baton::torch_backend {

class BatonWork : public c10d::Work {
 public:
  // `outputs` are what the future's value and result() return.
  // `on_success` runs once the operation succeeded, before anyone waiting is
  // woken: it copies results out of temporaries into the caller's tensors.
  // `keep_alive` holds tensors the daemon reads or writes until then.
  BatonWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, std::function<void()> on_success,
            std::vector<at::Tensor> keep_alive);

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Called once by the progress thread: `error` is null on success.
  void Complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  std::function<void()> on_success_;
  std::vector<at::Tensor> keep_alive_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace baton::torch_backend

#endif  // BATON_PYTHON_CSRC_BATON_WORK_H_
