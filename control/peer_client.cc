#include "control/peer_client.h"

#include <grpcpp/grpcpp.h>

#include <thread>

#include "baton/v1/peer.grpc.pb.h"
#include "common/thread_name.h"
#include "control/grpc_security.h"
#include "control/rendezvous_client.h"

namespace baton {
namespace {

std::unique_ptr<baton::v1::Peer::Stub> Stub(const std::string& address) {
  return baton::v1::Peer::NewStub(grpc::CreateChannel(address, GrpcSecurity::ChannelCredentials()));
}

}  // namespace

void BroadcastAbort(std::vector<std::string> addresses, baton::v1::AbortRequest req) {
  std::thread([addresses = std::move(addresses), req = std::move(req)] {
    NameThisThread("batond-abort");
    std::vector<std::thread> calls;
    for (const auto& a : addresses) {
      calls.emplace_back([&a, &req] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
        baton::v1::AbortResponse resp;
        (void)Stub(a)->AbortCommunicator(&ctx, req, &resp);  // best effort: a dead peer has nothing to abort
      });
    }
    for (auto& t : calls) t.join();
  }).detach();
}

Status GetPeerArrivals(const std::string& address, uint64_t comm_uid, uint64_t seq, std::chrono::milliseconds deadline,
                       baton::v1::ArrivalsResponse* out) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  baton::v1::ArrivalsRequest req;
  req.set_comm_uid(comm_uid);
  req.set_seq(seq);
  grpc::Status st = Stub(address)->GetArrivals(&ctx, req, out);
  return FromGrpc(st.error_code(), st.error_message(), "peer " + address + ": ");
}

Status PingPeer(const std::string& address, const std::string& from_node, std::chrono::milliseconds deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  baton::v1::HeartbeatRequest req;
  req.set_from_node(from_node);
  baton::v1::HeartbeatResponse resp;
  grpc::Status st = Stub(address)->Heartbeat(&ctx, req, &resp);
  return FromGrpc(st.error_code(), st.error_message(), "peer " + address + ": ");
}

}  // namespace baton
