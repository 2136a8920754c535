#include <cuda_runtime.h>

#include "tests/gpu_test_kernels.h"

namespace baton::test {
namespace {

__global__ void WaitThenFill(const volatile uint32_t* gate, float* out, size_t n, float value) {
  if (threadIdx.x == 0) {
    while (*gate == 0) __nanosleep(1000);
  }
  __syncthreads();
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

__global__ void Scale(float* x, size_t n, float factor) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] *= factor;
  }
}

}  // namespace

// One block for the gated kernel: every thread must see the gate open, and
// one block cannot be split across a grid that is only partly resident.
void LaunchWaitThenFill(const volatile uint32_t* gate, float* out, size_t n, float value, void* stream) {
  WaitThenFill<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(gate, out, n, value);
}

void LaunchScale(float* x, size_t n, float factor, void* stream) {
  Scale<<<64, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, n, factor);
}

}  // namespace baton::test
