#include "type_map.h"

#include <c10/util/Exception.h>

namespace baton::torch_backend {

baton_datatype_t DataTypeOf(at::ScalarType type, const char* op) {
  switch (type) {
    case at::kFloat: return baton_float32;
    case at::kDouble: return baton_float64;
    case at::kHalf: return baton_float16;
    case at::kBFloat16: return baton_bfloat16;
    case at::kInt: return baton_int32;
    case at::kLong: return baton_int64;
    case at::kChar: return baton_int8;
    case at::kByte: return baton_uint8;
    case at::kBool: return baton_uint8;
    default:
      TORCH_CHECK(false, "baton ", op, ": tensors of type ", c10::toString(type),
                  " are not supported (use float32/64, float16, bfloat16, int8/32/64, uint8 or bool)");
  }
}

baton_redop_t RedOpOf(const c10d::ReduceOp& op, at::ScalarType type, const char* opname) {
  TORCH_CHECK(type != at::kBool, "baton ", opname, ": reducing bool tensors is not supported; convert to uint8");
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return baton_sum;
    case c10d::ReduceOp::AVG: return baton_avg;
    case c10d::ReduceOp::PRODUCT: return baton_prod;
    case c10d::ReduceOp::MIN: return baton_min;
    case c10d::ReduceOp::MAX: return baton_max;
    default:
      TORCH_CHECK(false, "baton ", opname,
                  ": reduce op ", static_cast<int>(op.op_),
                  " is not supported (SUM, AVG, PRODUCT, MIN and MAX are; BAND/BOR/BXOR and PREMUL_SUM are not)");
  }
}

}  // namespace baton::torch_backend
