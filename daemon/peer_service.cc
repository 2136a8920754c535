#include "daemon/peer_service.h"

#include <algorithm>

#include "control/grpc_security.h"

namespace baton {

grpc::Status PeerService::AbortCommunicator(grpc::ServerContext* ctx, const baton::v1::AbortRequest* req,
                                            baton::v1::AbortResponse* resp) {
  if (Status allowed = GrpcSecurity::AuthorizePeer(*ctx); !allowed.ok()) {
    return {grpc::StatusCode::PERMISSION_DENIED, allowed.message()};
  }
  auto comm = registry_->Find(req->comm_uid());
  resp->set_known(comm != nullptr);
  if (!comm) return grpc::Status::OK;
  Code code = static_cast<Code>(req->code());
  if (code == Code::kOk || req->code() < 0 || req->code() > static_cast<int>(Code::kUnavailable)) {
    code = Code::kAborted;
  }
  // The reason is the other node's diagnosis, passed on verbatim (bounded).
  std::string reason = req->reason().substr(0, 2000);
  comm->AbortFromPeer(Status(code, reason));
  return grpc::Status::OK;
}

grpc::Status PeerService::GetArrivals(grpc::ServerContext* ctx, const baton::v1::ArrivalsRequest* req,
                                      baton::v1::ArrivalsResponse* resp) {
  if (Status allowed = GrpcSecurity::AuthorizePeer(*ctx); !allowed.ok()) {
    return {grpc::StatusCode::PERMISSION_DENIED, allowed.message()};
  }
  resp->set_node(node_name_);
  auto comm = registry_->Find(req->comm_uid());
  resp->set_known(comm != nullptr);
  if (!comm) return grpc::Status::OK;
  const CommSnapshot snap = comm->Snapshot();
  const auto inflight = comm->Inflight();
  auto op = std::find_if(inflight.begin(), inflight.end(), [&](const InflightSnapshot& s) { return s.seq == req->seq(); });
  for (int r : snap.local_ranks) {
    auto* a = resp->add_ranks();
    a->set_rank(r);
    a->set_last_completed_seq(snap.last_completed_seq);
    if (op != inflight.end()) {
      auto it = std::find(op->arrived.begin(), op->arrived.end(), r);
      a->set_arrived(it != op->arrived.end());
      if (it != op->arrived.end()) a->set_arrival_unix_us(op->arrival_us[it - op->arrived.begin()]);
      a->set_waited_seconds(op->waiting_seconds);
    } else {
      // Not pending here: either done already, or no local rank called it yet.
      a->set_arrived(snap.last_completed_seq >= req->seq());
    }
  }
  return grpc::Status::OK;
}

grpc::Status PeerService::Heartbeat(grpc::ServerContext* ctx, const baton::v1::HeartbeatRequest*,
                                    baton::v1::HeartbeatResponse* resp) {
  if (Status allowed = GrpcSecurity::AuthorizePeer(*ctx); !allowed.ok()) {
    return {grpc::StatusCode::PERMISSION_DENIED, allowed.message()};
  }
  resp->set_node(node_name_);
  return grpc::Status::OK;
}

}  // namespace baton
