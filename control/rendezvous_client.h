// JoinRendezvous: the daemon's side of rendezvous (one call per local rank).
#pragma once

#include <mutex>
#include <string>

#include "baton/v1/rendezvous.pb.h"
#include "common/status.h"

namespace grpc {
class ClientContext;
}

namespace baton {

// Lets another thread abandon a join in progress (its client went away):
// the call returns Aborted at once, and the rendezvous service frees the
// rank's slot so that a restarted rank can join.
class JoinCancel {
 public:
  void Cancel();

 private:
  friend Status JoinRendezvous(const std::string&, const baton::v1::JoinRequest&, baton::v1::JoinResponse*,
                               JoinCancel*);
  std::mutex mu_;
  grpc::ClientContext* call_ = nullptr;  // while the call runs
  bool cancelled_ = false;
};

Status JoinRendezvous(const std::string& address, const baton::v1::JoinRequest& req, baton::v1::JoinResponse* resp,
                      JoinCancel* cancel = nullptr);

// Maps a gRPC status to a Baton status with the service's message.
Status FromGrpc(int grpc_code, const std::string& message, const std::string& context);

}  // namespace baton
