// RendezvousService: the gRPC service that gathers the ranks of a
// communicator and hands every one of them the full layout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "baton/v1/rendezvous.grpc.pb.h"

namespace baton {

class RendezvousService final : public baton::v1::Rendezvous::Service {
 public:
  grpc::Status Join(grpc::ServerContext* ctx, const baton::v1::JoinRequest* req,
                    baton::v1::JoinResponse* resp) override;

  // Fails every waiting Join (used at shutdown).
  void Shutdown();

 private:
  struct Pending {
    uint32_t world_size = 0;
    std::string secret;
    std::vector<std::optional<baton::v1::RankInfo>> ranks;
    uint32_t joined = 0;
    uint32_t delivered = 0;  // responses handed out after completion
    bool complete = false;
    uint64_t uid = 0;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Pending> pending_;  // key: job_id + '\0' + comm_name
  bool shutdown_ = false;
};

}  // namespace baton
