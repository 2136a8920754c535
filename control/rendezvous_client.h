// JoinRendezvous: the daemon's side of rendezvous (one call per local rank).
#pragma once

#include <string>

#include "baton/v1/rendezvous.pb.h"
#include "common/status.h"

namespace baton {

Status JoinRendezvous(const std::string& address, const baton::v1::JoinRequest& req, baton::v1::JoinResponse* resp);

// Maps a gRPC status to a Baton status with the service's message.
Status FromGrpc(int grpc_code, const std::string& message, const std::string& context);

}  // namespace baton
