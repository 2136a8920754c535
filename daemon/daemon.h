// Daemon: batond's top level. Binds the client socket, the data listener
// and the gRPC server, and runs the event loop until SIGINT/SIGTERM.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "common/asio.h"
#include "control/rendezvous_service.h"
#include "daemon/admin_service.h"
#include "daemon/liveness.h"
#include "daemon/peer_service.h"
#include "daemon/comm_registry.h"
#include "daemon/options.h"
#include "daemon/session.h"
#include "common/worker_pool.h"
#include "transports/tcp/connection_broker.h"
#include "transports/tcp/tcp_listener.h"

namespace baton {

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();

  // Binds every endpoint; fails with a clear message (port in use, ...).
  Status Start();
  // Runs until a signal (or Stop).
  void Run();
  void Stop();

 private:
  void AcceptClient();
  void PingWatchdog();
  // Pins communicator workers and client memory to the data NIC's NUMA node.
  void PlaceOnDataNic();
  // Applies --tcp-buffer-bytes and logs what the kernel grants. When
  // net.core.rmem_max / wmem_max would cap the default size, the kernel's
  // autotuning is left on instead; a size the operator chose is applied and
  // a cap warned about.
  void ConfigureDataSocketBuffers();

  DaemonOptions options_;
  std::unique_ptr<AccessPolicy> access_;  // before io_: sessions in pending handlers use it
  boost::asio::io_context io_;
  boost::asio::basic_socket_acceptor<UnixSeqPacket> client_acceptor_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer watchdog_;
  tcp::ConnectionBroker broker_;
  tcp::TcpListener listener_;
  CommRegistry registry_;
  Metrics metrics_;
  std::unique_ptr<WorkerPool> pool_;  // helpers for large local steps, shared by all communicators
  topo::Topology topology_;
  RendezvousService rendezvous_;
  std::unique_ptr<PeerService> peer_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<Liveness> liveness_;
  std::atomic<uint32_t> clients_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<grpc::Server> grpc_server_;
  SessionEnv env_;
  uint64_t next_session_ = 1;
};

}  // namespace baton
