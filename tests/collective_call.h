// Issuing a collective from a test: where a rank's arguments point, and the
// call itself through libbaton's blocking C API, so that tests can run a
// matrix of signatures over any kind of buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "baton/baton.h"
#include "collectives/reference.h"
#include "common/types.h"
#include "tools/bench_support/call.h"

namespace baton::test {

// One rank's part of a checked call: every rank's reference input, what
// this rank must receive, and its buffer sizes (cap: the larger, at least 1).
struct RankCase {
  std::vector<reference::Bytes> sends;
  reference::Bytes want;
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
  uint64_t cap = 1;
};
RankCase MakeRankCase(const OpSignature& sig, int world, int rank);

// A rank's arguments for `sig`, given its send and receive buffers.
struct CallArguments {
  uint8_t* input;       // where the rank's input must be written before the call
  const uint8_t* send;  // the call's send argument
  uint8_t* recv;        // the call's receive argument, where the result lands
};

// Out of place: the buffers themselves. In place, baton.h's convention:
// AllReduce, Broadcast, Reduce and AllToAll pass the receive buffer twice;
// AllGather and Gather put the input at recv + rank*count; ReduceScatter and
// Scatter take their input in the receive buffer and put the output at
// rank*count within it.
CallArguments PlaceArguments(const OpSignature& sig, int rank, bool in_place, uint8_t* send, uint8_t* recv,
                             uint64_t send_bytes, uint64_t recv_bytes);

// The call itself: bench::CallCollective (tools/bench_support/call.h).
using bench::CallCollective;

}  // namespace baton::test
