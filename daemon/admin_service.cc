#include "daemon/admin_service.h"

#include <cstdio>

#include "common/logging.h"
#include "control/grpc_security.h"
#include "control/peer_client.h"
#include "gpu/cuda_support.h"
#include "transports/tcp/connection_broker.h"

namespace baton {

grpc::Status AdminService::GetNodeInfo(grpc::ServerContext*, const baton::v1::NodeInfoRequest*,
                                       baton::v1::NodeInfo* out) {
  out->set_version(ctx_.version);
  out->set_node_name(ctx_.node_name);
  out->set_uptime_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx_.started).count());
  out->set_data_address(ctx_.data_address);
  if (const std::string* a = grpc_address_.load()) out->set_grpc_address(*a);
  out->set_client_socket(ctx_.client_socket);
  auto* tcp = out->add_transports();
  tcp->set_name("tcp");
  tcp->set_available(true);
  const std::string congestion = tcp::DataCongestionControl();
  const uint64_t buffers = tcp::DataSocketBuffer();
  tcp->set_detail("listening on " + ctx_.data_address + "; up to " + std::to_string(ctx_.sockets_per_peer) +
                  " connections per peer; congestion control " + (congestion.empty() ? "unknown" : congestion) +
                  "; socket buffers " +
                  (buffers == 0 ? std::string("autotuned by the kernel") : std::to_string(buffers) + " B"));
  // Small blocking collectives among the ranks of this node (docs/architecture.md).
  auto* fast = out->add_transports();
  fast->set_name("fast");
  fast->set_available(ctx_.fast_path_max_bytes > 0);
  fast->set_detail(ctx_.fast_path_max_bytes > 0
                       ? "blocking collectives of up to " + std::to_string(ctx_.fast_path_max_bytes) +
                             " B per rank run among the ranks of one node, in shared memory"
                       : "turned off (--fast-path-max-bytes 0)");
  auto* rdma = out->add_transports();
  rdma->set_name("rdma");
  rdma->set_available(false);
  std::string why = "the RDMA transport is not part of this build (TCP only)";
  if (ctx_.topology != nullptr && ctx_.topology->ib.empty()) why += "; and " + ctx_.topology->rdma_note;
  rdma->set_detail(why);
  auto* cuda = out->add_transports();  // GPU buffers: the path device memory takes (docs/gpu.md)
  const gpu::CudaSupport& gpus = gpu::GetCudaSupport();
  cuda->set_name("cuda");
  cuda->set_available(gpus.available);
  cuda->set_detail(gpus.available ? std::to_string(gpus.device_count) +
                                        " device(s); device buffers staged through pinned host memory"
                                  : gpus.reason);
  out->set_clients(ctx_.clients ? ctx_.clients->load() : 0);
  out->set_communicators(static_cast<uint32_t>(ctx_.registry->size()));
  return grpc::Status::OK;
}

grpc::Status AdminService::ListCommunicators(grpc::ServerContext*, const baton::v1::ListCommunicatorsRequest* req,
                                             baton::v1::ListCommunicatorsResponse* out) {
  for (const auto& comm : ctx_.registry->All()) {
    const CommSpec& spec = comm->spec();
    if (!req->job_id().empty() && req->job_id() != spec.job) continue;
    const CommSnapshot snap = comm->Snapshot();
    auto* c = out->add_communicators();
    c->set_job_id(spec.job);
    c->set_name(spec.name);
    c->set_uid(spec.uid);
    c->set_size(static_cast<uint32_t>(spec.layout.world_size()));
    for (int node : spec.layout.node_of_rank) c->add_node_of_rank(spec.node_names[node]);
    for (int r : snap.local_ranks) c->add_local_ranks(r);
    c->set_state(snap.state);
    c->set_error(snap.error);
    c->set_last_completed_seq(snap.last_completed_seq);
    c->set_ops_completed(snap.ops_completed);
    c->set_bytes_completed(snap.bytes_completed);
    c->set_fast_path_ops(snap.fast_path_ops);
    c->set_timeout_seconds(static_cast<double>(spec.timeout.count()) / 1000.0);
  }
  return grpc::Status::OK;
}

std::string StragglerSummary(const baton::v1::InflightOp& op) {
  std::string missing;
  int count = 0;
  for (const auto& r : op.ranks()) {
    if (r.arrived()) continue;
    if (count++ < 8) {
      missing += std::string(missing.empty() ? "" : ", ") + "rank " + std::to_string(r.rank()) + " (node " + r.node() +
                 (r.known() ? ", last completed seq " + std::to_string(r.last_completed_seq()) : ", not answering") +
                 ")";
    }
  }
  if (count == 0) return "";
  if (count > 8) missing += " and " + std::to_string(count - 8) + " more";
  const std::string name = op.op().substr(0, op.op().find('('));
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", op.waiting_seconds());
  return name + " seq " + std::to_string(op.seq()) + " on comm \"" + op.comm_name() + "\" (job " + op.job_id() +
         "): waiting " + secs + " for " + missing;
}

grpc::Status AdminService::ListInflight(grpc::ServerContext*, const baton::v1::InflightRequest* req,
                                        baton::v1::InflightResponse* out) {
  for (const auto& comm : ctx_.registry->All()) {
    const CommSpec& spec = comm->spec();
    if (req->comm_uid() != 0 && req->comm_uid() != spec.uid) continue;
    const CommSnapshot snap = comm->Snapshot();
    for (const InflightSnapshot& s : comm->Inflight()) {
      auto* op = out->add_ops();
      op->set_job_id(spec.job);
      op->set_comm_name(spec.name);
      op->set_comm_uid(spec.uid);
      op->set_seq(s.seq);
      op->set_op(s.op);
      op->set_waiting_seconds(s.waiting_seconds);
      for (size_t i = 0; i < s.arrived.size(); ++i) {
        const int r = s.arrived[i];
        auto* rs = op->add_ranks();
        rs->set_rank(r);
        rs->set_arrival_unix_us(s.arrival_us[i]);
        rs->set_node(spec.node_names[spec.my_node]);
        rs->set_arrived(true);
        rs->set_known(true);
        rs->set_last_completed_seq(snap.last_completed_seq);
      }
      for (int r : s.missing) {
        auto* rs = op->add_ranks();
        rs->set_rank(r);
        rs->set_node(spec.node_names[spec.my_node]);
        rs->set_arrived(false);
        rs->set_known(true);
        rs->set_last_completed_seq(snap.last_completed_seq);
      }
      if (req->include_peers()) {
        // The other nodes' view of their own ranks: asked, not guessed.
        for (int n = 0; n < spec.layout.num_nodes(); ++n) {
          if (n == spec.my_node) continue;
          baton::v1::ArrivalsResponse peer;
          Status st = GetPeerArrivals(spec.node_grpc[n], spec.uid, s.seq, std::chrono::milliseconds(1000), &peer);
          for (int r : spec.layout.ranks_of_node[n]) {
            auto* rs = op->add_ranks();
            rs->set_rank(r);
            rs->set_node(spec.node_names[n]);
            rs->set_known(false);
            if (!st.ok() || !peer.known()) continue;
            for (const auto& a : peer.ranks()) {
              if (a.rank() != r) continue;
              rs->set_known(true);
              rs->set_arrived(a.arrived());
              rs->set_arrival_unix_us(a.arrival_unix_us());
              rs->set_last_completed_seq(a.last_completed_seq());
            }
          }
        }
      }
      if (s.waiting_seconds * 1000 >= static_cast<double>(ctx_.straggler_warning.count())) {
        op->set_summary(StragglerSummary(*op));
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::AbortCommunicator(grpc::ServerContext* ctx, const baton::v1::AdminAbortRequest* req,
                                             baton::v1::AdminAbortResponse*) {
  if (Status allowed = GrpcSecurity::AuthorizeAdmin(*ctx); !allowed.ok()) {
    BATON_WARN("refused an abort of communicator {:x}: {}", req->comm_uid(), allowed.message());
    return {grpc::StatusCode::PERMISSION_DENIED, allowed.message()};
  }
  auto comm = ctx_.registry->Find(req->comm_uid());
  if (!comm) return {grpc::StatusCode::NOT_FOUND, "no communicator with uid " + std::to_string(req->comm_uid())};
  comm->Abort(Status::Aborted("aborted by an operator on node " + ctx_.node_name + " (" + ctx->peer() + ")" +
                              (req->reason().empty() ? "" : ": " + req->reason().substr(0, 500))));
  return grpc::Status::OK;
}

grpc::Status AdminService::GetTopology(grpc::ServerContext*, const baton::v1::TopologyRequest*,
                                       baton::v1::TopologyResponse* out) {
  if (ctx_.topology == nullptr) return {grpc::StatusCode::UNAVAILABLE, "topology was not discovered"};
  out->set_json(ctx_.topology->ToJson());
  out->set_tree(ctx_.topology->ToTree());
  return grpc::Status::OK;
}

grpc::Status AdminService::GetTrace(grpc::ServerContext*, const baton::v1::TraceRequest* req,
                                    baton::v1::TraceResponse* out) {
  auto comm = ctx_.registry->Find(req->comm_uid());
  if (!comm) return {grpc::StatusCode::NOT_FOUND, "no communicator with uid " + std::to_string(req->comm_uid())};
  out->set_json(comm->Trace(req->chrome()));
  return grpc::Status::OK;
}

grpc::Status AdminService::GetCounters(grpc::ServerContext*, const baton::v1::CountersRequest*,
                                       baton::v1::Counters* out) {
  if (ctx_.metrics != nullptr) ctx_.metrics->Fill(out);
  if (ctx_.rejected_connections) out->set_rejected_connections(ctx_.rejected_connections());
  return grpc::Status::OK;
}

}  // namespace baton
