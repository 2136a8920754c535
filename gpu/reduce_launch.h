// The kernels' side of gpu/reduce_kernels.h: plain types only, because .cu
// files are compiled as C++17 (see the top-level CMakeLists.txt) and cannot
// include common/. `dtype` and `op` are baton::DataType and baton::RedOp
// values, already validated; the result is a cudaError_t.
#pragma once

#include <cstdint>

namespace baton::gpu::kernels {

int LaunchReduce(uint32_t dtype, uint32_t op, void* dst, const void* a, const void* b, uint64_t count, void* stream);
// The most operands one LaunchFold takes (baton::kMaxFusedOperands).
constexpr int kMaxFoldOperands = 16;
// `n` is in [2, kMaxFoldOperands].
int LaunchFold(uint32_t dtype, uint32_t op, void* dst, const void* const* srcs, int n, uint64_t count, void* stream);
int LaunchDivide(uint32_t dtype, void* dst, uint64_t count, uint64_t divisor, void* stream);

}  // namespace baton::gpu::kernels
