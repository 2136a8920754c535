// Small kernels the GPU tests put on a stream around a collective.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton::test {

// Waits until *gate (host memory mapped for the device) is nonzero, then
// sets out[i] = value for i < n. Lets a test hold a stream at a known point
// without timing: the kernel cannot finish before the host opens the gate.
void LaunchWaitThenFill(const volatile uint32_t* gate, float* out, size_t n, float value, void* stream);

// x[i] *= factor.
void LaunchScale(float* x, size_t n, float factor, void* stream);

}  // namespace baton::test
