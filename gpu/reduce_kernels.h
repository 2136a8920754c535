// Element-wise reduction on GPU memory, with the semantics of the host
// kernels (collectives/reduce.h): integer sums and products wrap, kAvg
// reduces as a sum and divides once at the end, 16-bit floats combine in
// float32 and round once.
//
// `stream` is a cudaStream_t (nullptr: the legacy default stream). The calls
// only enqueue; errors of the launch itself come back, errors of the kernel
// surface at the next synchronisation.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "common/types.h"

namespace baton::gpu {

// dst[i] = a[i] (op) b[i] for i < count. dst may equal a or b.
Status LaunchReduce(DataType dtype, RedOp op, void* dst, const void* a, const void* b, uint64_t count,
                    void* stream);

// dst[i] = srcs[0][i] (op) srcs[1][i] (op) ... (op) srcs[n-1][i], combined
// left to right and each combination rounded as LaunchReduce rounds it, so
// the result is that of n-1 LaunchReduce calls into dst, bit for bit, from
// one launch that reads every operand once and writes dst once. 2 <= n <=
// kernels::kMaxFoldOperands (16); dst may equal srcs[0] and overlap no
// other operand.
Status LaunchFold(DataType dtype, RedOp op, void* dst, const void* const* srcs, size_t n, uint64_t count,
                  void* stream);

// dst[i] = dst[i] / divisor (the final step of kAvg).
Status LaunchDivide(DataType dtype, void* dst, uint64_t count, uint64_t divisor, void* stream);

}  // namespace baton::gpu
