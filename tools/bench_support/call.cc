#include "tools/bench_support/call.h"

namespace baton::bench {

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
    default: return baton_invalid_argument;
  }
}

baton_result_t CallCollectiveOnStream(const OpSignature& s, const void* send, void* recv, baton_comm_t comm,
                                      baton_stream_t stream) {
  const auto t = static_cast<baton_datatype_t>(s.dtype);
  const auto op = static_cast<baton_redop_t>(s.redop);
  switch (s.collective) {
    case Collective::kAllReduce: return baton_allreduce_stream(send, recv, s.count, t, op, comm, stream);
    case Collective::kBroadcast: return baton_broadcast_stream(send, recv, s.count, t, s.root, comm, stream);
    case Collective::kReduce: return baton_reduce_stream(send, recv, s.count, t, op, s.root, comm, stream);
    case Collective::kAllGather: return baton_allgather_stream(send, recv, s.count, t, comm, stream);
    case Collective::kReduceScatter: return baton_reducescatter_stream(send, recv, s.count, t, op, comm, stream);
    case Collective::kScatter: return baton_scatter_stream(send, recv, s.count, t, s.root, comm, stream);
    case Collective::kGather: return baton_gather_stream(send, recv, s.count, t, s.root, comm, stream);
    case Collective::kAllToAll: return baton_alltoall_stream(send, recv, s.count, t, comm, stream);
    default: return baton_invalid_argument;
  }
}

}  // namespace baton::bench
