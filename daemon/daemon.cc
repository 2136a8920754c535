#include "daemon/daemon.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

#include "common/address.h"
#include "common/cpus.h"
#include "common/logging.h"
#include "control/grpc_security.h"
#include "daemon/sd_notify.h"
#include "gpu/cuda_support.h"
#include "topology/interfaces.h"
#include "topology/nvml.h"

namespace baton {

namespace {

// Pinned staging memory kept for reuse between GPU operations (pinning is
// slow); more than this is given back when operations finish.
constexpr uint64_t kPinnedCacheBytes = 1ull << 30;

// --reduce-threads 0: one thread per CPU this process may run on, at most 8
// (memory bandwidth, not arithmetic, limits these steps beyond that).
int ReduceThreads(int configured) {
  if (configured > 0) return configured;
  return std::min(UsableCpus(), 8);
}
std::string RandomHex() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}
}  // namespace

Daemon::Daemon(DaemonOptions options)
    : options_(std::move(options)),
      client_acceptor_(io_),
      signals_(io_, SIGINT, SIGTERM),
      watchdog_(io_),
      listener_(io_, broker_) {}

Daemon::~Daemon() {
  if (grpc_server_) grpc_server_->Shutdown();
  std::error_code ignored;
  std::filesystem::remove(options_.socket_path, ignored);
}

Status Daemon::Start() {
  // Data listener first: its bound address goes into rendezvous answers.
  std::string bound;
  BATON_RETURN_IF_ERROR(listener_.Listen(options_.listen, &bound));
  HostPort adv;
  if (!options_.advertise.empty()) {
    BATON_RETURN_IF_ERROR(ParseHostPort(options_.advertise, &adv));
    env_.data_address = adv.ToString();
  } else {
    HostPort b;
    BATON_RETURN_IF_ERROR(ParseHostPort(bound, &b));
    if (b.host == "0.0.0.0" || b.host == "::") {
      // Listening everywhere: advertise the first address the interface
      // selection (BATON_SOCKET_IFNAME / --socket-ifname) allows.
      std::vector<topo::InterfaceAddress> all;
      std::vector<topo::InterfaceAddress> chosen;
      BATON_RETURN_IF_ERROR(topo::ListInterfaces(&all));
      BATON_RETURN_IF_ERROR(topo::SelectInterfaces(all, options_.socket_ifname, &chosen));
      b.host = chosen.front().address;
      BATON_INFO(kInit, "advertising {} (interface {}) for data connections", b.ToString(), chosen.front().name);
    }
    env_.data_address = b.ToString();
  }

  // Topology: what this node is made of (logged, served to batonctl topo).
  if (Status st = topo::Discover(options_.sysfs_root, &topology_); !st.ok()) {
    BATON_WARN("topology discovery failed: {}", st.message());
  } else {
    if (!topology_.gpus.empty()) topo::ProbeNvml(&topology_);
    BATON_INFO(kTopo, "topology: {} NUMA node(s), {} GPU(s), {} interface(s), {} RDMA device(s){}{}",
               topology_.numa.size(), topology_.gpus.size(), topology_.nics.size(), topology_.ib.size(),
               topology_.gpus.empty() ? "; " + topology_.gpu_note : "",
               topology_.ib.empty() ? "; " + topology_.rdma_note : "");
  }
  {
    std::vector<std::string> devices;
    std::vector<std::string> chosen;
    for (const auto& d : topology_.ib) devices.push_back(d.name);
    BATON_RETURN_IF_ERROR(topo::SelectRdmaDevices(devices, options_.ib_hca, &chosen));
    if (!chosen.empty()) {
      std::string names;
      for (const auto& c : chosen) names += (names.empty() ? "" : ",") + c;
      BATON_INFO(kTopo, "RDMA devices selected: {} (the RDMA transport is not in this build; TCP carries the data)",
                 names);
    }
  }
  if (!options_.topo_dump_file.empty()) {
    FILE* f = std::fopen(options_.topo_dump_file.c_str(), "w");
    const std::string json = topology_.ToJson();
    if (f == nullptr || std::fwrite(json.data(), 1, json.size(), f) != json.size() || std::fclose(f) != 0) {
      return Status::Errno("cannot write the topology to " + options_.topo_dump_file, errno);
    }
  }

  // gRPC services: rendezvous, peer control, admin, and the standard health service.
  env_.node_name = options_.node_name;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  BATON_RETURN_IF_ERROR(GrpcSecurity::Configure({options_.tls_cert, options_.tls_key, options_.tls_ca},
                                                SplitList(options_.admin_cns)));
  builder.AddListeningPort(options_.grpc, GrpcSecurity::ServerCredentials(), &grpc_port);
  peer_service_ = std::make_unique<PeerService>(&registry_, options_.node_name);
  builder.RegisterService(&rendezvous_);
  builder.RegisterService(peer_service_.get());
  HostPort grpc_hp;
  BATON_RETURN_IF_ERROR(ParseHostPort(options_.grpc, &grpc_hp));
  AdminContext admin{&registry_, PROJECT_VERSION_STRING, options_.node_name, env_.data_address,
                     options_.socket_path, started_, &clients_, options_.straggler_warning, &metrics_,
                     [this] { return listener_.rejected(); }, &topology_, options_.sockets_per_peer,
                     options_.fast_path_max_bytes};
  admin_service_ = std::make_unique<AdminService>(admin);
  builder.RegisterService(admin_service_.get());
  grpc_server_ = builder.BuildAndStart();
  if (!grpc_server_ || grpc_port == 0) {
    return Status::Unavailable("cannot serve gRPC on " + options_.grpc + " (address in use or invalid?)");
  }
  grpc_hp.port = static_cast<uint16_t>(grpc_port);
  env_.grpc_address = grpc_hp.ToString();
  admin_service_->SetGrpcAddress(&env_.grpc_address);
  if (auto* health = grpc_server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    for (const char* svc : {"baton.v1.Rendezvous", "baton.v1.Peer", "baton.v1.Admin"}) {
      health->SetServingStatus(svc, true);
    }
  }

  // Client socket.
  std::error_code fs_ec;
  std::filesystem::create_directories(std::filesystem::path(options_.socket_path).parent_path(), fs_ec);
  struct stat st {};
  if (::lstat(options_.socket_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::InvalidArgument(options_.socket_path + " exists and is not a socket; refusing to replace it");
    }
    ::unlink(options_.socket_path.c_str());  // stale socket of a previous daemon
  }
  boost::system::error_code ec;
  const auto ep = UnixSeqPacketEndpoint(options_.socket_path);
  client_acceptor_.open(ep.protocol(), ec);
  if (!ec) client_acceptor_.bind(ep, ec);
  if (!ec) client_acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::System("cannot listen on " + options_.socket_path + ": " + ec.message());
  // Who may connect is the socket's mode; what they may do is AccessPolicy's.
  if (::chmod(options_.socket_path.c_str(), options_.socket_mode) != 0) {
    return Status::Errno("chmod " + options_.socket_path, errno);
  }
  std::vector<uid_t> allow_uids;
  std::vector<gid_t> allow_gids;
  BATON_RETURN_IF_ERROR(ParseUserList(options_.allow_users, &allow_uids));
  BATON_RETURN_IF_ERROR(ParseGroupList(options_.allow_groups, &allow_gids));
  access_ = std::make_unique<AccessPolicy>(
      std::move(allow_uids), std::move(allow_gids),
      AccessPolicy::UserLimits{options_.max_user_bytes, options_.max_user_clients, options_.max_user_comms});
  env_.access = access_.get();

  if (!options_.trace_dir.empty()) {
    std::filesystem::create_directories(options_.trace_dir, fs_ec);
    if (fs_ec) return Status::System("cannot create --trace-dir " + options_.trace_dir + ": " + fs_ec.message());
  }
  env_.options = &options_;
  env_.services = {&broker_, &registry_, &metrics_, options_.straggler_warning, options_.flight_records,
                   {}, options_.trace_dir, options_.max_p2p_buffer, options_.progress_spin,
                   options_.fast_path_max_bytes, nullptr, nullptr};
  pool_ = std::make_unique<WorkerPool>(ReduceThreads(options_.reduce_threads), "batond-reduce");
  env_.services.pool = pool_.get();
  env_.services.pinned = gpu::PinnedPool::Create(kPinnedCacheBytes);
  env_.services.gpu_collectives = options_.gpu_collectives;
  env_.services.gpu_allreduce = options_.gpu_allreduce;
  if (const gpu::CudaSupport& cuda = gpu::GetCudaSupport(); cuda.available) {
    BATON_INFO(kInit, "GPU support: {} CUDA device(s); collectives of device buffers {}", cuda.device_count,
               options_.gpu_collectives
                   ? "run on the GPUs within a node; across nodes their local steps run on the GPUs and the "
                     "network's share is staged through pinned host memory"
                   : "are staged through pinned host memory (--gpu-collectives off)");
  } else {
    BATON_INFO(kInit, "GPU support unavailable: {}; serving host buffers only", cuda.reason);
  }
  BATON_RETURN_IF_ERROR(tcp::SetDataCongestionControl(options_.tcp_congestion).WithContext("--tcp-congestion: "));
  BATON_INFO(kInit, "data connections use TCP congestion control {}{}", tcp::DataCongestionControl(),
             options_.tcp_congestion.empty() ? " (the system's default)" : "");
  ConfigureDataSocketBuffers();
  PlaceOnDataNic();
  env_.node_id = options_.node_name + "/" + RandomHex();
  env_.rendezvous = options_.rendezvous;
  if (env_.rendezvous.empty()) {
    // Clients of other nodes will dial this address (it reaches them through
    // baton_get_daemon_rendezvous, e.g. via torch's store), so a wildcard
    // gRPC listen advertises the host of the data address instead.
    HostPort rv = grpc_hp;
    if (rv.host == "0.0.0.0" || rv.host == "::") {
      HostPort data;
      BATON_RETURN_IF_ERROR(ParseHostPort(env_.data_address, &data));
      rv.host = data.host;
    }
    env_.rendezvous = rv.ToString();
  }

  signals_.async_wait([this](const boost::system::error_code& e, int sig) {
    if (!e) {
      BATON_INFO(kInit, "signal {}: shutting down", sig);
      Stop();
    }
  });
  AcceptClient();
  liveness_ = std::make_unique<Liveness>(&registry_, options_.node_name, options_.heartbeat_interval,
                                         options_.peer_timeout);
  if (!options_.ready_file.empty()) {
    // Write then rename, so a reader never sees half a file.
    const std::string tmp = options_.ready_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "data=%s grpc=%s\n", env_.data_address.c_str(), grpc_hp.ToString().c_str());
      std::fclose(f);
      std::rename(tmp.c_str(), options_.ready_file.c_str());
    } else {
      return Status::Errno("cannot write --ready-file " + options_.ready_file, errno);
    }
  }
  BATON_INFO(kInit, "batond {} on node {}: clients {}, data {}, gRPC {}, rendezvous {}", PROJECT_VERSION_STRING,
             options_.node_name, options_.socket_path, env_.data_address, grpc_hp.ToString(), env_.rendezvous);
  SdNotify("READY=1\nSTATUS=serving clients on " + options_.socket_path + ", data " + env_.data_address);
  PingWatchdog();
  return Status::Ok();
}

void Daemon::ConfigureDataSocketBuffers() {
  const uint64_t asked = options_.tcp_buffer_bytes;
  const bool chosen = options_.sources.count("tcp-buffer-bytes") > 0;
  tcp::SetDataSocketBuffer(asked);
  const tcp::SocketBuffers got = tcp::ProbeDataSocketBuffers();
  if (tcp::EffectiveDataSocketBuffer(asked, chosen, got) != asked) {
    // Stock kernels cap at 208 KiB; measured slower than autotuning there:
    // docs/benchmarks.md, "Socket buffers".
    tcp::SetDataSocketBuffer(0);
    BATON_INFO(kInit, "data connections: socket buffers left to the kernel's autotuning (net.ipv4.tcp_wmem, tcp_rmem): "
               "net.core.wmem_max / rmem_max would cap the default {} B at {} / {} B",
               asked, got.send, got.receive);
  } else if (tcp::Capped(asked, got)) {
    BATON_WARN("data connections get {} B send and {} B receive buffers, not the {} B of --tcp-buffer-bytes: "
               "net.core.wmem_max / rmem_max cap them. Raise those (sysctl -w net.core.rmem_max={} "
               "net.core.wmem_max={}) or use --tcp-buffer-bytes 0 for the kernel's autotuning",
               got.send, got.receive, asked, asked, asked);
  } else if (asked == 0) {
    BATON_INFO(kInit, "data connections: socket buffers left to the kernel's autotuning (net.ipv4.tcp_wmem, tcp_rmem)");
  } else {
    BATON_INFO(kInit, "data connections: {} B send and receive buffers (--tcp-buffer-bytes)", asked);
  }
}

void Daemon::PlaceOnDataNic() {
  // Which interface carries our data address, and on which NUMA node is it?
  HostPort hp;
  if (!ParseHostPort(env_.data_address, &hp).ok() || topology_.numa.size() < 2) return;  // nothing to choose
  std::vector<topo::InterfaceAddress> all;
  if (!topo::ListInterfaces(&all).ok()) return;
  for (const auto& a : all) {
    if (a.address != hp.host) continue;
    const int node = topology_.NumaOfInterface(a.name);
    if (node < 0) return;
    env_.services.worker_cpus = topology_.CpusOfNuma(node);
    env_.pool_numa_node = node;
    BATON_INFO(kTopo, "communicator workers and client shared memory placed on NUMA node {} ({} CPUs), the node of {}",
               node, env_.services.worker_cpus.size(), a.name);
    return;
  }
}

void Daemon::AcceptClient() {
  client_acceptor_.async_accept([this](const boost::system::error_code& ec, Session::Socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      ucred cred{};
      socklen_t len = sizeof cred;
      ::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len);
      std::make_shared<Session>(env_, io_, std::move(socket), cred, next_session_++, &clients_)->Start();
    } else {
      BATON_WARN("accepting a client failed: {}", ec.message());
    }
    AcceptClient();
  });
}

void Daemon::PingWatchdog() {
  // The watchdog pings from the event loop: if the loop is stuck, systemd
  // notices and restarts the daemon.
  const auto interval = WatchdogPingInterval();
  if (interval.count() == 0) return;
  SdNotify("WATCHDOG=1");
  watchdog_.expires_after(interval);
  watchdog_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) PingWatchdog();
  });
}

void Daemon::Run() {
  io_.run();
  // Fail pending rendezvous joins and stop serving gRPC (bounded wait).
  rendezvous_.Shutdown();
  if (grpc_server_) grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

void Daemon::Stop() {
  SdNotify("STOPPING=1");
  boost::system::error_code ignored;
  watchdog_.cancel();
  client_acceptor_.close(ignored);
  listener_.Stop();
  std::error_code fs_ignored;
  std::filesystem::remove(options_.socket_path, fs_ignored);
  io_.stop();
}

}  // namespace baton
