// A torch Work for an operation on CUDA tensors, which Baton orders on the
// tensors' current CUDA stream (baton_*_stream): the host never waits for
// it. As with ProcessGroupNCCL:
//  - wait() and synchronize() make the caller's current stream wait for the
//    operation (an event recorded on the stream right after it); they never
//    block the host;
//  - isCompleted() says whether the GPU went past the operation;
//  - the future is a CUDA future, completed at once: a callback or value
//    read through it waits for the operation on its own stream.
// Failures arrive later, asynchronously (docs/pytorch.md, "CUDA tensors").
#ifndef BATON_PYTHON_CSRC_STREAM_WORK_H_
#define BATON_PYTHON_CSRC_STREAM_WORK_H_

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <vector>

namespace baton::torch_backend {

class BatonStreamWork : public c10d::Work {
 public:
  // Called right after the operation was queued on `device`'s current stream.
  BatonStreamWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Device device);

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  void synchronize() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::Device device_;
  c10::Event done_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace baton::torch_backend

#endif  // BATON_PYTHON_CSRC_STREAM_WORK_H_
