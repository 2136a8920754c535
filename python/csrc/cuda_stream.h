// The CUDA side of the baton backend: which stream a CUDA tensor's
// collective is ordered on. The only file that includes torch's CUDA
// headers, so that the backend also builds against a torch without CUDA
// (Debian's), where CUDA tensors are refused with the reason.
#ifndef BATON_PYTHON_CSRC_CUDA_STREAM_H_
#define BATON_PYTHON_CSRC_CUDA_STREAM_H_

#include <c10/core/Device.h>

#include "baton/baton.h"

namespace baton::torch_backend {

// Whether this build takes CUDA tensors: it was built against a torch with
// CUDA (CMake defines BATON_TORCH_CUDA then).
bool BuiltWithCuda();

// The current CUDA stream of `device`, the one torch queues that device's
// kernels on now, as Baton's stream handle.
baton_stream_t CurrentCudaStream(const c10::Device& device);

}  // namespace baton::torch_backend

#endif  // BATON_PYTHON_CSRC_CUDA_STREAM_H_
