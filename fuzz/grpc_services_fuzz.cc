// Admin and Peer gRPC requests as any network caller can send them (the
// serialized protobuf), handled by the real services. The first byte picks
// the method. The registry holds no communicator here, so lookups by uid
// take their not-found paths; the request parsing and every handler's checks
// run as in a daemon.
#include <grpcpp/server_context.h>

#include <atomic>

#include "daemon/admin_service.h"
#include "daemon/comm_registry.h"
#include "daemon/metrics.h"
#include "daemon/peer_service.h"
#include "topology/topology.h"

using namespace baton;

namespace {

struct World {
  CommRegistry registry;
  Metrics metrics;
  topo::Topology topology;
  std::atomic<uint32_t> clients{0};
  std::string grpc_address = "127.0.0.1:1";
  AdminService admin{AdminContext{&registry, "fuzz", "fuzz", "127.0.0.1:2", "/run/baton/fuzz.sock",
                                  std::chrono::steady_clock::now(), &clients, std::chrono::milliseconds(5000),
                                  &metrics, [] { return uint64_t{0}; }, &topology}};
  PeerService peer{&registry, "fuzz"};
  World() { admin.SetGrpcAddress(&grpc_address); }
};

template <typename Request, typename Response, typename Service, typename Method>
void Call(Service& service, Method method, const uint8_t* data, size_t size) {
  Request req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  Response resp;
  grpc::ServerContext ctx;
  (void)(service.*method)(&ctx, &req, &resp);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* w = new World();
  if (size == 0) return 0;
  const uint8_t which = data[0] % 10;
  ++data;
  --size;
  namespace v1 = baton::v1;
  switch (which) {
    case 0: Call<v1::NodeInfoRequest, v1::NodeInfo>(w->admin, &AdminService::GetNodeInfo, data, size); break;
    case 1:
      Call<v1::ListCommunicatorsRequest, v1::ListCommunicatorsResponse>(w->admin, &AdminService::ListCommunicators,
                                                                        data, size);
      break;
    case 2: Call<v1::InflightRequest, v1::InflightResponse>(w->admin, &AdminService::ListInflight, data, size); break;
    case 3:
      Call<v1::AdminAbortRequest, v1::AdminAbortResponse>(w->admin, &AdminService::AbortCommunicator, data, size);
      break;
    case 4: Call<v1::TraceRequest, v1::TraceResponse>(w->admin, &AdminService::GetTrace, data, size); break;
    case 5: Call<v1::CountersRequest, v1::Counters>(w->admin, &AdminService::GetCounters, data, size); break;
    case 6: Call<v1::TopologyRequest, v1::TopologyResponse>(w->admin, &AdminService::GetTopology, data, size); break;
    case 7: Call<v1::AbortRequest, v1::AbortResponse>(w->peer, &PeerService::AbortCommunicator, data, size); break;
    case 8: Call<v1::ArrivalsRequest, v1::ArrivalsResponse>(w->peer, &PeerService::GetArrivals, data, size); break;
    default: Call<v1::HeartbeatRequest, v1::HeartbeatResponse>(w->peer, &PeerService::Heartbeat, data, size); break;
  }
  return 0;
}
