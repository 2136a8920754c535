#include "tests/collective_call.h"

#include <algorithm>

namespace baton::test {

RankCase MakeRankCase(const OpSignature& sig, int world, int rank) {
  RankCase c;
  c.sends.resize(world);
  for (int r = 0; r < world; ++r) c.sends[r] = reference::MakeSendBuffer(sig, world, r);
  c.want = reference::Expected(sig, world, rank, c.sends);
  BufferExtents ext;
  ComputeExtents(sig.collective, sig.count, world, rank, sig.root, &ext);
  const uint64_t es = DataTypeSize(sig.dtype);
  c.send_bytes = ext.send_elems * es;
  c.recv_bytes = ext.recv_elems * es;
  c.cap = std::max<uint64_t>({c.send_bytes, c.recv_bytes, 1});
  return c;
}

CallArguments PlaceArguments(const OpSignature& sig, int rank, bool in_place, uint8_t* send, uint8_t* recv,
                             uint64_t send_bytes, uint64_t recv_bytes) {
  CallArguments a{send, send, recv};
  if (!in_place) return a;
  const uint64_t block = static_cast<uint64_t>(rank) * sig.count * DataTypeSize(sig.dtype);
  switch (sig.collective) {
    case Collective::kAllGather:
    case Collective::kGather:
      if (recv_bytes > 0) a.input = recv + block, a.send = a.input;
      break;
    case Collective::kReduceScatter:
    case Collective::kScatter:
      if (send_bytes > 0) a.input = recv, a.send = recv, a.recv = recv + block;
      break;
    default:
      if (send_bytes > 0) a.input = recv;
      a.send = recv;
      break;
  }
  return a;
}

}  // namespace baton::test
