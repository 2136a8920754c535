// Issuing any collective from a benchmark, given its signature: one switch
// over libbaton's calls instead of one in every tool.
#pragma once

#include "baton/baton.h"
#include "common/types.h"

namespace baton::bench {

// The blocking call for `sig` (a collective, not Send/Recv/Barrier/Split).
baton_result_t CallCollective(const OpSignature& sig, const void* send, void* recv, baton_comm_t comm);

// The stream-ordered call for `sig` on `stream` (a cudaStream_t).
baton_result_t CallCollectiveOnStream(const OpSignature& sig, const void* send, void* recv, baton_comm_t comm,
                                      baton_stream_t stream);

}  // namespace baton::bench
