#include "stream_work.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <utility>

namespace baton::torch_backend {
namespace {

// The stream torch queues `device`'s work on now (no CUDA headers needed:
// the device guard of the CUDA backend answers).
c10::Stream CurrentStream(const c10::Device& device) {
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

}  // namespace

BatonStreamWork::BatonStreamWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Device device)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      device_(device),
      done_(device.type()),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{device})) {
  done_.record(CurrentStream(device_));
  // A CUDA future records its own event on the current stream here, and
  // makes whoever uses its value wait for it.
  future_->markCompleted(c10::IValue(outputs_));
  finish();  // queued is all this Work ever waits for on the host
}

bool BatonStreamWork::isCompleted() { return done_.query(); }

bool BatonStreamWork::wait(std::chrono::milliseconds /*timeout*/) {
  synchronize();
  return true;
}

void BatonStreamWork::synchronize() { done_.block(CurrentStream(device_)); }

}  // namespace baton::torch_backend
