// Issues the collective `sig` describes through libbaton's blocking C API,
// so that tests can run a matrix of signatures.
#pragma once

#include "baton/baton.h"
#include "common/types.h"

namespace baton::test {

baton_result_t CallCollective(const OpSignature& sig, const void* send, void* recv, baton_comm_t comm);

}  // namespace baton::test
