// Translation between torch's tensor types and reduce ops and Baton's.
#ifndef BATON_PYTHON_CSRC_TYPE_MAP_H_
#define BATON_PYTHON_CSRC_TYPE_MAP_H_

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "baton/baton.h"

namespace baton::torch_backend {

// Baton's type for `type`. Bool travels as uint8 (only for operations that
// do not reduce). Throws c10::Error naming the operation for other types.
baton_datatype_t DataTypeOf(at::ScalarType type, const char* op);

// Baton's reduction for `op` on `type`: SUM, PRODUCT, MIN, MAX and AVG.
// Throws for the bitwise ops, PREMUL_SUM and any reduction of bool tensors.
baton_redop_t RedOpOf(const c10d::ReduceOp& op, at::ScalarType type, const char* opname);

}  // namespace baton::torch_backend

#endif  // BATON_PYTHON_CSRC_TYPE_MAP_H_
