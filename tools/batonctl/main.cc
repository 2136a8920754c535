// batonctl: the operator's view of a batond, over its gRPC services.
//
//   batonctl [--address HOST:PORT] [--json] COMMAND [ARGS]
//
// Commands: health, status, comms, inflight, stragglers, abort UID.
#include <grpcpp/grpcpp.h>
#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "baton/v1/admin.grpc.pb.h"
#include "control/grpc_security.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace {

const char* kUsage = R"(usage: batonctl [--address HOST:PORT] [--json] [--timeout SECONDS]
                [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] COMMAND [ARGS]

Asks a batond (default 127.0.0.1:7101, or $BATON_ADMIN) over gRPC. With
--tls-ca ($BATON_TLS_CA) it speaks TLS and checks the daemon's certificate;
a client certificate (--tls-cert/--tls-key, $BATON_TLS_CERT/$BATON_TLS_KEY)
whose name is in the daemon's admin-cns is needed for abort.

commands:
  health [SERVICE]       grpc.health.v1 Check; exit 0 only if SERVING
  status                 node, version, uptime, addresses, transports
  jobs                   jobs with communicators on this node
  comms [--job ID]       communicators: members, nodes, state, last completed op
  inflight [UID]         operations in flight with every rank's arrival (asks peer daemons)
  stragglers [UID]       only the operations that wait for someone, one line each
  abort UID [REASON]     abort a communicator on every node (its ranks get the reason)
  topo                   the node's topology as a tree (--json: machine-readable)
  counters               operations, bytes and latency histogram per collective; bytes per transport
  trace UID [-o FILE] [--plain]
                         the communicator's flight recorder on this node, as Chrome
                         trace JSON (chrome://tracing, Perfetto) or plain JSON
)";

// Plaintext unless --tls-ca is given.
std::shared_ptr<grpc::ChannelCredentials> g_credentials = grpc::InsecureChannelCredentials();

struct Options {
  std::string address;
  std::string tls_ca, tls_cert, tls_key;  // PEM paths; no CA: plaintext
  bool json = false;
  double timeout = 5;
};

void SetDeadline(grpc::ClientContext* ctx, const Options& o) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.timeout * 1000)));
}

int Fail(const Options& o, const grpc::Status& st) {
  std::fprintf(stderr, "batonctl: %s: %s\n", o.address.c_str(), st.error_message().c_str());
  return 2;
}

void PrintJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  std::fputs(out.c_str(), stdout);
}

std::string Join(const google::protobuf::RepeatedField<int32_t>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

int Health(const Options& o, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(grpc::CreateChannel(o.address, g_credentials));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, o);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status st = stub->Check(&ctx, req, &resp);
  if (!st.ok()) return Fail(o, st);
  if (o.json) {
    PrintJson(resp);
  } else {
    std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status()).c_str());
  }
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

int main_impl(int argc, char** argv) {
  Options o;
  if (const char* a = std::getenv("BATON_ADMIN")) o.address = a;
  if (o.address.empty()) o.address = "127.0.0.1:7101";
  for (auto [env, field] : {std::pair{"BATON_TLS_CA", &o.tls_ca}, std::pair{"BATON_TLS_CERT", &o.tls_cert},
                            std::pair{"BATON_TLS_KEY", &o.tls_key}}) {
    if (const char* v = std::getenv(env)) *field = v;
  }
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--address" && i + 1 < argc) o.address = argv[++i];
    else if (a == "--json") o.json = true;
    else if (a == "--timeout" && i + 1 < argc) o.timeout = std::atof(argv[++i]);
    else if (a == "--tls-ca" && i + 1 < argc) o.tls_ca = argv[++i];
    else if (a == "--tls-cert" && i + 1 < argc) o.tls_cert = argv[++i];
    else if (a == "--tls-key" && i + 1 < argc) o.tls_key = argv[++i];
    else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else args.push_back(a);
  }
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (!o.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    for (auto [path, field, what] : {std::tuple{&o.tls_ca, &ssl.pem_root_certs, "--tls-ca"},
                                     std::tuple{&o.tls_cert, &ssl.pem_cert_chain, "--tls-cert"},
                                     std::tuple{&o.tls_key, &ssl.pem_private_key, "--tls-key"}}) {
      if (path->empty()) continue;
      if (baton::Status st = baton::ReadPem(*path, what, field); !st.ok()) {
        std::fprintf(stderr, "batonctl: %s\n", st.message().c_str());
        return 2;
      }
    }
    g_credentials = grpc::SslCredentials(ssl);
  }
  const std::string cmd = args[0];
  if (cmd == "health") return Health(o, args.size() > 1 ? args[1] : "");
  auto stub = baton::v1::Admin::NewStub(grpc::CreateChannel(o.address, g_credentials));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, o);
  if (cmd == "status") {
    baton::v1::NodeInfo info;
    grpc::Status st = stub->GetNodeInfo(&ctx, {}, &info);
    if (!st.ok()) return Fail(o, st);
    if (o.json) {
      PrintJson(info);
      return 0;
    }
    std::printf("node        %s\nversion     %s\nuptime      %.0f s\ndata        %s\ngrpc        %s\nclients     %s (%u connected)\ncommunicators %u\n",
                info.node_name().c_str(), info.version().c_str(), info.uptime_seconds(), info.data_address().c_str(),
                info.grpc_address().c_str(), info.client_socket().c_str(), info.clients(), info.communicators());
    for (const auto& t : info.transports()) {
      std::printf("transport   %-5s %s  %s\n", t.name().c_str(), t.available() ? "available  " : "unavailable",
                  t.detail().c_str());
    }
    return 0;
  }
  if (cmd == "jobs") {
    baton::v1::ListCommunicatorsResponse resp;
    grpc::Status st = stub->ListCommunicators(&ctx, {}, &resp);
    if (!st.ok()) return Fail(o, st);
    struct Job {
      int comms = 0, failed = 0;
      uint32_t world = 0;
      int local = 0;
    };
    std::map<std::string, Job> jobs;
    for (const auto& c : resp.communicators()) {
      Job& j = jobs[c.job_id()];
      ++j.comms;
      j.failed += c.state() == "failed";
      if (c.name() == "world") {
        j.world = c.size();
        j.local = c.local_ranks_size();
      }
    }
    if (o.json) {
      std::printf("[");
      bool first = true;
      for (const auto& [id, j] : jobs) {
        std::printf("%s\n  {\"job\": \"%s\", \"communicators\": %d, \"failed\": %d, \"world_size\": %u, "
                    "\"local_ranks\": %d}", first ? "" : ",", id.c_str(), j.comms, j.failed, j.world, j.local);
        first = false;
      }
      std::printf("\n]\n");
      return 0;
    }
    std::printf("%-24s %6s %6s %6s %6s\n", "JOB", "COMMS", "FAILED", "WORLD", "LOCAL");
    for (const auto& [id, j] : jobs) std::printf("%-24s %6d %6d %6u %6d\n", id.c_str(), j.comms, j.failed, j.world, j.local);
    return 0;
  }
  if (cmd == "comms") {
    baton::v1::ListCommunicatorsRequest req;
    for (size_t i = 1; i + 1 < args.size(); ++i) {
      if (args[i] == "--job") req.set_job_id(args[i + 1]);
    }
    baton::v1::ListCommunicatorsResponse resp;
    grpc::Status st = stub->ListCommunicators(&ctx, req, &resp);
    if (!st.ok()) return Fail(o, st);
    if (o.json) {
      PrintJson(resp);
      return 0;
    }
    std::printf("%-18s %-16s %-12s %5s %-10s %-9s %10s %10s %s\n", "UID", "JOB", "NAME", "SIZE", "STATE", "LOCAL",
                "LAST OP", "FAST OPS", "NODES");
    for (const auto& c : resp.communicators()) {
      std::string nodes;
      std::string prev;
      for (const auto& n : c.node_of_rank()) {
        if (n != prev) nodes += (nodes.empty() ? "" : " ") + n;
        prev = n;
      }
      char uid[24];
      std::snprintf(uid, sizeof uid, "%016llx", static_cast<unsigned long long>(c.uid()));
      std::printf("%-18s %-16s %-12s %5u %-10s %-9s %10llu %10llu %s\n", uid, c.job_id().c_str(), c.name().c_str(),
                  c.size(), c.state().c_str(), Join(c.local_ranks()).c_str(),
                  static_cast<unsigned long long>(c.last_completed_seq()),
                  static_cast<unsigned long long>(c.fast_path_ops()), nodes.c_str());
      if (!c.error().empty()) std::printf("    error: %s\n", c.error().c_str());
    }
    return 0;
  }
  if (cmd == "inflight" || cmd == "stragglers") {
    baton::v1::InflightRequest req;
    if (args.size() > 1) req.set_comm_uid(std::strtoull(args[1].c_str(), nullptr, 16));
    req.set_include_peers(true);
    baton::v1::InflightResponse resp;
    grpc::Status st = stub->ListInflight(&ctx, req, &resp);
    if (!st.ok()) return Fail(o, st);
    if (cmd == "stragglers") {
      for (const auto& op : resp.ops()) {
        if (!op.summary().empty()) std::printf("%s\n", op.summary().c_str());
      }
      return 0;
    }
    if (o.json) {
      PrintJson(resp);
      return 0;
    }
    for (const auto& op : resp.ops()) {
      std::printf("%s seq %llu on comm \"%s\" (job %s): %s, waiting %.1f s\n", op.op().c_str(),
                  static_cast<unsigned long long>(op.seq()), op.comm_name().c_str(), op.job_id().c_str(),
                  op.summary().empty() ? "all ranks arrived" : "incomplete", op.waiting_seconds());
      const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
      for (const auto& r : op.ranks()) {
        char when[64] = "";
        if (r.arrived() && r.arrival_unix_us() > 0) {
          std::snprintf(when, sizeof when, " %.3f s ago", static_cast<double>(now_us - r.arrival_unix_us()) / 1e6);
        }
        std::printf("    rank %-5d node %-12s %s%s\n", r.rank(), r.node().c_str(),
                    !r.known() ? "unknown (node not answering)" : r.arrived() ? "arrived" : "NOT ARRIVED", when);
      }
    }
    return 0;
  }
  if (cmd == "abort") {
    if (args.size() < 2) {
      std::fprintf(stderr, "batonctl: abort needs a communicator uid (see batonctl comms)\n");
      return 2;
    }
    baton::v1::AdminAbortRequest req;
    req.set_comm_uid(std::strtoull(args[1].c_str(), nullptr, 16));
    if (args.size() > 2) req.set_reason(args[2]);
    baton::v1::AdminAbortResponse resp;
    grpc::Status st = stub->AbortCommunicator(&ctx, req, &resp);
    if (!st.ok()) return Fail(o, st);
    std::printf("aborted\n");
    return 0;
  }
  if (cmd == "topo") {
    baton::v1::TopologyResponse t;
    grpc::Status st = stub->GetTopology(&ctx, {}, &t);
    if (!st.ok()) return Fail(o, st);
    std::fputs(o.json ? t.json().c_str() : t.tree().c_str(), stdout);
    return 0;
  }
  if (cmd == "counters") {
    baton::v1::Counters c;
    grpc::Status st = stub->GetCounters(&ctx, {}, &c);
    if (!st.ok()) return Fail(o, st);
    if (o.json) {
      PrintJson(c);
      return 0;
    }
    std::printf("%-14s %10s %8s %14s   latency (us): ", "COLLECTIVE", "OPS", "FAILED", "BYTES");
    for (auto b : c.latency_bucket_bounds_us()) std::printf("<=%-8llu", static_cast<unsigned long long>(b));
    std::printf(">\n");
    for (const auto& k : c.collectives()) {
      std::printf("%-14s %10llu %8llu %14llu                 ", k.collective().c_str(),
                  static_cast<unsigned long long>(k.ops()), static_cast<unsigned long long>(k.failed()),
                  static_cast<unsigned long long>(k.bytes()));
      for (auto n : k.latency_buckets()) std::printf("%-10llu", static_cast<unsigned long long>(n));
      std::printf("\n");
    }
    for (const auto& t : c.transports()) {
      std::printf("transport %-4s sent %llu B, received %llu B\n", t.transport().c_str(),
                  static_cast<unsigned long long>(t.bytes_sent()), static_cast<unsigned long long>(t.bytes_received()));
    }
    std::printf("rejected data connections: %llu (bad hello), %llu (failed authentication)\n",
                static_cast<unsigned long long>(c.rejected_connections()),
                static_cast<unsigned long long>(c.auth_failures()));
    return 0;
  }
  if (cmd == "trace") {
    if (args.size() < 2) {
      std::fprintf(stderr, "batonctl: trace needs a communicator uid (see batonctl comms)\n");
      return 2;
    }
    baton::v1::TraceRequest req;
    req.set_comm_uid(std::strtoull(args[1].c_str(), nullptr, 16));
    req.set_chrome(true);
    std::string file;
    for (size_t i = 2; i < args.size(); ++i) {
      if (args[i] == "--plain") req.set_chrome(false);
      if (args[i] == "-o" && i + 1 < args.size()) file = args[++i];
    }
    baton::v1::TraceResponse resp;
    grpc::Status st = stub->GetTrace(&ctx, req, &resp);
    if (!st.ok()) return Fail(o, st);
    if (file.empty()) {
      std::fputs(resp.json().c_str(), stdout);
      return 0;
    }
    FILE* f = std::fopen(file.c_str(), "w");
    if (f == nullptr || std::fwrite(resp.json().data(), 1, resp.json().size(), f) != resp.json().size() ||
        std::fclose(f) != 0) {
      std::fprintf(stderr, "batonctl: cannot write %s\n", file.c_str());
      return 2;
    }
    return 0;
  }
  std::fprintf(stderr, "batonctl: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) { return main_impl(argc, argv); }
