// Element-wise reduction kernels on host memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace baton {

// dst[i] = dst[i] (op) src[i] for i < count. kAvg reduces as a sum; the
// division happens once at the end (DivideBy), so partial results stay exact
// for integers. Integer sums and products wrap modulo 2^bits (as in NCCL).
// 16-bit floats are combined in float32 and rounded once per call.
void ReduceInto(DataType dtype, RedOp op, void* dst, const void* src, size_t count);

// dst[i] = a[i] (op) b[i]: a reduction whose result goes elsewhere, in one
// pass instead of a copy and then a reduction. dst may be a (then this is
// ReduceInto); otherwise dst must not overlap a or b.
void CombineInto(DataType dtype, RedOp op, void* dst, const void* a, const void* b, size_t count);

// dst[i] = dst[i] / divisor: the final step of kAvg. Integer types divide
// with truncation toward zero.
void DivideBy(DataType dtype, void* dst, size_t count, uint64_t divisor);

}  // namespace baton
