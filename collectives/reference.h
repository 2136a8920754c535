// Reference data and results for collectives, computed the obvious way
// (loop over ranks), so that schedules, the daemon, the client (tests) and
// baton-bench (-c) can check results element by element.
//
// Inputs are small integers (|v| <= 5, products of 1s and 2s), exactly
// representable in every data type and with exactly representable sums,
// products and averages-before-division. So every data type, float16 and
// bfloat16 included, can be compared bit for bit: the only rounding is the
// final division of kAvg, which the reference performs identically.
#pragma once

#include <cstdint>
#include <vector>

#include "common/types.h"

namespace baton::reference {

using Bytes = std::vector<uint8_t>;

// Element i of the pattern for `rank`: a small integer converted to `dtype`.
void FillPattern(DataType dtype, RedOp op, int rank, uint64_t salt, uint64_t count, uint8_t* out);
Bytes MakeSendBuffer(const OpSignature& sig, int nranks, int rank);

// The receive buffer rank `rank` must hold after `sig` on `nranks` ranks
// whose send buffers are `sends`. Empty for ranks that receive nothing.
Bytes Expected(const OpSignature& sig, int nranks, int rank, const std::vector<Bytes>& sends);

// Index of the first differing element, or -1. `out_msg` describes it.
int64_t FirstMismatch(DataType dtype, const Bytes& got, const Bytes& want, std::string* out_msg);

}  // namespace baton::reference
