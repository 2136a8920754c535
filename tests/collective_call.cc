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

baton_result_t CallCollective(const OpSignature& s, const void* send, void* recv, baton_comm_t comm) {
  const auto t = static_cast<baton_datatype_t>(s.dtype);
  const auto op = static_cast<baton_redop_t>(s.redop);
  switch (s.collective) {
    case Collective::kAllReduce: return baton_allreduce(send, recv, s.count, t, op, comm, nullptr);
    case Collective::kBroadcast: return baton_broadcast(send, recv, s.count, t, s.root, comm, nullptr);
    case Collective::kReduce: return baton_reduce(send, recv, s.count, t, op, s.root, comm, nullptr);
    case Collective::kAllGather: return baton_allgather(send, recv, s.count, t, comm, nullptr);
    case Collective::kReduceScatter: return baton_reducescatter(send, recv, s.count, t, op, comm, nullptr);
    case Collective::kScatter: return baton_scatter(send, recv, s.count, t, s.root, comm, nullptr);
    case Collective::kGather: return baton_gather(send, recv, s.count, t, s.root, comm, nullptr);
    case Collective::kAllToAll: return baton_alltoall(send, recv, s.count, t, comm, nullptr);
    default: return baton_internal_error;
  }
}

}  // namespace baton::test
