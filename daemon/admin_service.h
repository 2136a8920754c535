// AdminService: what operators and batonctl ask a daemon
// (proto/baton/v1/admin.proto): node info, communicators, in-flight
// operations with every rank's arrival (asking peer daemons for theirs),
// and abort of a communicator.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "baton/v1/admin.grpc.pb.h"
#include "daemon/comm_registry.h"
#include "daemon/metrics.h"
#include "topology/topology.h"

namespace baton {

struct AdminContext {
  CommRegistry* registry = nullptr;
  std::string version;
  std::string node_name;
  std::string data_address;
  std::string client_socket;
  std::chrono::steady_clock::time_point started;
  const std::atomic<uint32_t>* clients = nullptr;
  // An operation is reported as straggling once it waited this long.
  std::chrono::milliseconds straggler_warning{5000};
  const Metrics* metrics = nullptr;
  std::function<uint64_t()> rejected_connections;
  const topo::Topology* topology = nullptr;
  int sockets_per_peer = 1;          // --sockets-per-peer
  uint64_t fast_path_max_bytes = 0;  // --fast-path-max-bytes
};

class AdminService final : public baton::v1::Admin::Service {
 public:
  explicit AdminService(AdminContext ctx) : ctx_(std::move(ctx)) {}
  // Known only once the server has bound its port.
  void SetGrpcAddress(const std::string* address) { grpc_address_.store(address); }

  grpc::Status GetNodeInfo(grpc::ServerContext*, const baton::v1::NodeInfoRequest*, baton::v1::NodeInfo* out) override;
  grpc::Status ListCommunicators(grpc::ServerContext*, const baton::v1::ListCommunicatorsRequest* req,
                                 baton::v1::ListCommunicatorsResponse* out) override;
  grpc::Status ListInflight(grpc::ServerContext*, const baton::v1::InflightRequest* req,
                            baton::v1::InflightResponse* out) override;
  grpc::Status AbortCommunicator(grpc::ServerContext*, const baton::v1::AdminAbortRequest* req,
                                 baton::v1::AdminAbortResponse*) override;
  grpc::Status GetTrace(grpc::ServerContext*, const baton::v1::TraceRequest* req,
                        baton::v1::TraceResponse* out) override;
  grpc::Status GetCounters(grpc::ServerContext*, const baton::v1::CountersRequest*,
                           baton::v1::Counters* out) override;
  grpc::Status GetTopology(grpc::ServerContext*, const baton::v1::TopologyRequest*,
                           baton::v1::TopologyResponse* out) override;

 private:
  AdminContext ctx_;
  std::atomic<const std::string*> grpc_address_{nullptr};
};

// The straggler line for an operation, e.g.
// allreduce seq 1234 on comm "dp" (job 7f3a): waiting 12.4 s for rank 5 (node n2, last completed seq 1233)
std::string StragglerSummary(const baton::v1::InflightOp& op);

}  // namespace baton
