// PeerService: the daemon-to-daemon control service (proto/baton/v1/peer.proto).
#pragma once

#include <string>

#include "baton/v1/peer.grpc.pb.h"
#include "daemon/comm_registry.h"

namespace baton {

class PeerService final : public baton::v1::Peer::Service {
 public:
  PeerService(CommRegistry* registry, std::string node_name) : registry_(registry), node_name_(std::move(node_name)) {}

  grpc::Status AbortCommunicator(grpc::ServerContext*, const baton::v1::AbortRequest* req,
                                 baton::v1::AbortResponse* resp) override;
  grpc::Status GetArrivals(grpc::ServerContext*, const baton::v1::ArrivalsRequest* req,
                           baton::v1::ArrivalsResponse* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const baton::v1::HeartbeatRequest* req,
                         baton::v1::HeartbeatResponse* resp) override;

 private:
  CommRegistry* registry_;
  std::string node_name_;
};

}  // namespace baton
