#include "gpu/reduce_kernels.h"

#include <cuda_runtime_api.h>

#include <string>

#include "gpu/cuda_check.h"
#include "gpu/reduce_launch.h"

namespace baton::gpu {

static_assert(static_cast<uint32_t>(RedOp::kSum) == 0 && static_cast<uint32_t>(RedOp::kProd) == 1 &&
                  static_cast<uint32_t>(RedOp::kMin) == 2 && static_cast<uint32_t>(RedOp::kMax) == 3 &&
                  static_cast<uint32_t>(RedOp::kAvg) == 4,
              "reduce_kernels.cu spells these values out");
static_assert(static_cast<uint32_t>(DataType::kFloat16) == 6 && static_cast<uint32_t>(DataType::kBfloat16) == 7 &&
                  static_cast<uint32_t>(DataType::kFloat64) == 9,
              "reduce_kernels.cu spells these values out");

Status LaunchReduce(DataType dtype, RedOp op, void* dst, const void* a, const void* b, uint64_t count,
                    void* stream) {
  if (count == 0) return Status::Ok();
  if (!IsValidDataType(static_cast<uint32_t>(dtype))) return Status::InvalidArgument("unknown datatype");
  if (!IsValidRedOp(static_cast<uint32_t>(op))) return Status::InvalidArgument("unknown reduction");
  const int err = kernels::LaunchReduce(static_cast<uint32_t>(dtype), static_cast<uint32_t>(op), dst, a, b, count,
                                        stream);
  return FromCuda(static_cast<cudaError_t>(err), std::string("reduce kernel (") + DataTypeName(dtype) + ", " +
                                                     RedOpName(op) + ", " + std::to_string(count) + " elements)");
}

Status LaunchFold(DataType dtype, RedOp op, void* dst, const void* const* srcs, size_t n, uint64_t count,
                  void* stream) {
  if (count == 0) return Status::Ok();
  if (n < 2 || n > static_cast<size_t>(kernels::kMaxFoldOperands)) {
    return Status::InvalidArgument("a fused fold of " + std::to_string(n) + " operands (2 to " +
                                   std::to_string(kernels::kMaxFoldOperands) + ")");
  }
  if (!IsValidDataType(static_cast<uint32_t>(dtype))) return Status::InvalidArgument("unknown datatype");
  if (!IsValidRedOp(static_cast<uint32_t>(op))) return Status::InvalidArgument("unknown reduction");
  const int err = kernels::LaunchFold(static_cast<uint32_t>(dtype), static_cast<uint32_t>(op), dst, srcs,
                                      static_cast<int>(n), count, stream);
  return FromCuda(static_cast<cudaError_t>(err), std::string("fold kernel (") + DataTypeName(dtype) + ", " +
                                                     RedOpName(op) + ", " + std::to_string(n) + " operands, " +
                                                     std::to_string(count) + " elements)");
}

Status LaunchDivide(DataType dtype, void* dst, uint64_t count, uint64_t divisor, void* stream) {
  if (count == 0) return Status::Ok();
  if (divisor == 0) return Status::InvalidArgument("divide by zero");
  if (!IsValidDataType(static_cast<uint32_t>(dtype))) return Status::InvalidArgument("unknown datatype");
  const int err = kernels::LaunchDivide(static_cast<uint32_t>(dtype), dst, count, divisor, stream);
  return FromCuda(static_cast<cudaError_t>(err), std::string("divide kernel (") + DataTypeName(dtype) + ")");
}

}  // namespace baton::gpu
