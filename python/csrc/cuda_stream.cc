#include "cuda_stream.h"

#include <c10/util/Exception.h>

#if defined(BATON_TORCH_CUDA)
#include <c10/cuda/CUDAStream.h>
#endif

namespace baton::torch_backend {

bool BuiltWithCuda() {
#if defined(BATON_TORCH_CUDA)
  return true;
#else
  return false;
#endif
}

baton_stream_t CurrentCudaStream(const c10::Device& device) {
#if defined(BATON_TORCH_CUDA)
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
#else
  TORCH_CHECK(false, "baton: a CUDA tensor on ", device.str(),
              ", but this build of the backend was built against a torch without CUDA");
#endif
}

}  // namespace baton::torch_backend
