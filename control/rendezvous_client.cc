#include "control/rendezvous_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "baton/v1/rendezvous.grpc.pb.h"
#include "control/grpc_security.h"

namespace baton {

Status FromGrpc(int grpc_code, const std::string& message, const std::string& context) {
  switch (static_cast<grpc::StatusCode>(grpc_code)) {
    case grpc::StatusCode::OK: return Status::Ok();
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::PERMISSION_DENIED: return Status::PermissionDenied(context + message);
    case grpc::StatusCode::DEADLINE_EXCEEDED: return Status::Timeout(context + message);
    case grpc::StatusCode::UNAVAILABLE: return Status::Unavailable(context + message);
    default: return Status::Remote(context + message);
  }
}

void JoinCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (call_ != nullptr) call_->TryCancel();
}

Status JoinRendezvous(const std::string& address, const baton::v1::JoinRequest& req, baton::v1::JoinResponse* resp,
                      JoinCancel* cancel) {
  auto channel = grpc::CreateChannel(address, GrpcSecurity::ChannelCredentials());
  auto stub = baton::v1::Rendezvous::NewStub(channel);
  grpc::ClientContext ctx;
  // The server enforces the rendezvous timeout; give the RPC a little more
  // so that its precise "missing ranks" message wins the race.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(req.timeout_ms() + 5000));
  ctx.set_wait_for_ready(true);  // the rendezvous daemon may still be starting
  if (cancel != nullptr) {
    std::lock_guard<std::mutex> lock(cancel->mu_);
    if (cancel->cancelled_) return Status::Aborted("rendezvous abandoned: the rank's process went away");
    cancel->call_ = &ctx;
  }
  grpc::Status st = stub->Join(&ctx, req, resp);
  if (cancel != nullptr) {
    std::lock_guard<std::mutex> lock(cancel->mu_);
    cancel->call_ = nullptr;
    if (cancel->cancelled_ && !st.ok()) return Status::Aborted("rendezvous abandoned: the rank's process went away");
  }
  if (st.ok()) return Status::Ok();
  std::string context = "rendezvous at " + address + ": ";
  if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && st.error_message() == "Deadline Exceeded") {
    return Status::Timeout(context + "no answer from the rendezvous service (is a batond listening there?)");
  }
  return FromGrpc(st.error_code(), st.error_message(), context);
}

}  // namespace baton
