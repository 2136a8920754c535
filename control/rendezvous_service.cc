#include "control/rendezvous_service.h"

#include <random>

#include "common/logging.h"
#include "control/grpc_security.h"

namespace baton {
namespace {

uint64_t RandomUid() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  uint64_t v = 0;
  while (v == 0) v = gen();
  return v;
}

std::string MissingRanks(const std::vector<std::optional<baton::v1::RankInfo>>& ranks) {
  std::string out;
  int listed = 0;
  int missing = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r]) continue;
    ++missing;
    if (listed < 32) {
      out += (listed++ ? "," : "") + std::to_string(r);
    }
  }
  if (missing > listed) out += ",... (" + std::to_string(missing) + " in all)";
  return out;
}

}  // namespace

grpc::Status RendezvousService::Join(grpc::ServerContext* ctx, const baton::v1::JoinRequest* req,
                                     baton::v1::JoinResponse* resp) {
  if (Status allowed = GrpcSecurity::AuthorizePeer(*ctx); !allowed.ok()) {
    return {grpc::StatusCode::PERMISSION_DENIED, allowed.message()};
  }
  if (req->job_id().empty() || req->job_id().size() > 256) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "job_id must be 1..256 characters"};
  }
  if (req->world_size() == 0 || req->world_size() > (1u << 20)) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "world_size must be 1..1048576"};
  }
  if (req->rank() >= req->world_size()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "rank " + std::to_string(req->rank()) + " is not below world size " +
                                                    std::to_string(req->world_size())};
  }
  const std::string key = req->job_id() + '\0' + req->comm_name();
  const std::string what = "job '" + req->job_id() + "' communicator '" + req->comm_name() + "'";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(req->timeout_ms() ? req->timeout_ms() : 60000);

  std::unique_lock<std::mutex> lock(mu_);
  Pending& p = pending_[key];
  if (p.world_size == 0) {
    p.world_size = req->world_size();
    p.secret = req->secret();
    p.ranks.resize(req->world_size());
  }
  if (p.world_size != req->world_size()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, what + ": rank " + std::to_string(req->rank()) + " says world size " +
                                                    std::to_string(req->world_size()) + " but earlier ranks said " +
                                                    std::to_string(p.world_size)};
  }
  if (p.secret != req->secret()) {
    return {grpc::StatusCode::PERMISSION_DENIED, what + ": rank " + std::to_string(req->rank()) +
                                                     " presented a different job secret than the ranks before it"};
  }
  if (p.complete || p.ranks[req->rank()]) {
    return {grpc::StatusCode::ALREADY_EXISTS, what + ": rank " + std::to_string(req->rank()) +
                                                  " joined twice (is another process using the same rank?)"};
  }
  baton::v1::RankInfo info;
  info.set_rank(req->rank());
  info.set_node_id(req->node_id());
  info.set_data_address(req->data_address());
  info.set_grpc_address(req->grpc_address());
  info.set_sockets_per_peer(req->sockets_per_peer());
  p.ranks[req->rank()] = info;
  ++p.joined;
  BATON_DEBUG(kRendezvous, "{}: rank {} joined from node {} ({}/{})", what, req->rank(), req->node_id(), p.joined,
              p.world_size);
  if (p.joined == p.world_size) {
    p.complete = true;
    p.uid = RandomUid();
    cv_.notify_all();
  }
  while (!p.complete && !shutdown_) {
    if (ctx->IsCancelled()) break;
    if (cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200))) ==
            std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= deadline) {
      break;
    }
  }
  if (!p.complete) {
    // Leave so that a retry of this rank can join again.
    const std::string missing = MissingRanks(p.ranks);
    const uint32_t joined = p.joined;  // including this rank
    const uint32_t world = p.world_size;
    p.ranks[req->rank()].reset();
    --p.joined;
    if (p.joined == 0) pending_.erase(key);
    if (shutdown_) return {grpc::StatusCode::UNAVAILABLE, "rendezvous service shutting down"};
    return {grpc::StatusCode::DEADLINE_EXCEEDED,
            what + ": timed out waiting for ranks " + missing + " (" + std::to_string(joined) + " of " +
                std::to_string(world) + " joined); check that every rank was started with the same job id and world size"};
  }
  resp->set_comm_uid(p.uid);
  for (const auto& r : p.ranks) *resp->add_ranks() = *r;
  if (++p.delivered == p.world_size) pending_.erase(key);  // the name can be reused now
  return grpc::Status::OK;
}

void RendezvousService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

}  // namespace baton
