// DaemonOptions: batond's settings, from the command line (see --help).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collectives/spread_allreduce.h"
#include "common/status.h"

namespace baton {

// Which GPU allocations clients may register (--device-sharing).
enum class DeviceSharingPolicy {
  kAny,     // CUDA IPC handles (cudaMalloc) and file descriptors (cuMemCreate)
  kFdOnly,  // file descriptors only: a handle proves nothing, an fd proves ownership
};

struct DaemonOptions {
  std::string socket_path = "/run/baton/batond.sock";  // client sessions (Unix socket)
  std::string listen = "127.0.0.1:7100";                 // data connections from peer daemons
  std::string advertise;                                 // address peers dial; default: the bound listen address
  std::string grpc = "127.0.0.1:7101";                   // gRPC services (rendezvous)
  std::string rendezvous;                                // default rendezvous for clients that name none
  std::string node_name;                                 // human-readable node name (default: hostname)
  uint64_t max_client_bytes = 8ull << 30;                // shared memory one client may hold
  uint64_t max_user_bytes = 32ull << 30;                 // shared memory all clients of one uid may hold
  uint64_t max_p2p_buffer = 1ull << 30;                  // unexpected p2p bytes buffered per communicator
  int max_client_comms = 256;                            // communicators (and pending joins) per client
  int max_user_comms = 4096;                             //   and per local user
  int max_user_clients = 1024;                           // client processes per local user
  std::string allow_users;                               // uids/names that may join other users' jobs
  std::string allow_groups;                              // gids/names whose members may do so too
  std::string tls_cert;                                  // gRPC TLS: this daemon's certificate (PEM)
  std::string tls_key;                                   //   its private key
  std::string tls_ca;                                    //   the CA that signs daemons and operators
  std::string admin_cns;                                 // certificate names allowed admin actions
  unsigned socket_mode = 0666;                           // permissions of the client socket
  std::chrono::milliseconds default_timeout{300000};     // collective timeout when the client sets none
  std::chrono::milliseconds straggler_warning{5000};     // log a straggler after this long
  std::chrono::milliseconds heartbeat_interval{1000};    // between heartbeats to peer daemons
  std::chrono::milliseconds peer_timeout{10000};         // silent this long: peer declared dead
  size_t flight_records = 1000;                          // operations kept per communicator
  std::chrono::microseconds progress_spin{100};          // worker spins this long before sleeping
  uint64_t fast_path_max_bytes = 16384;                  // small blocking collectives within a node skip batond
  bool gpu_collectives = true;                           // all-GPU collectives within a node run on the GPUs
  GpuAllReduceShape gpu_allreduce = GpuAllReduceShape::kAuto;  // their AllReduce's shape (spread_allreduce.h)
  DeviceSharingPolicy device_sharing = DeviceSharingPolicy::kAny;  // GPU memory clients may register
  std::string tcp_congestion;                            // data connections' congestion control ("": the system's)
  uint64_t tcp_buffer_bytes = 4 << 20;                   // data connections' SO_SNDBUF/SO_RCVBUF (0: kernel autotuning)
  int sockets_per_peer = 2;                              // TCP connections per peer node for collectives
  int reduce_threads = 0;                                // threads sharing large local steps (0: the CPUs we may use, up to 8)
  std::string trace_dir;                                 // failed communicators dump their trace here
  std::string sysfs_root = "/sys";                       // where topology discovery looks
  std::string socket_ifname;                             // BATON_SOCKET_IFNAME syntax, for --advertise
  std::string ib_hca;                                    // BATON_IB_HCA syntax: RDMA devices to use
  std::string topo_dump_file;                            // write the topology (JSON) here at start
  std::string debug = "INFO";                             // log level: ERROR, WARN, INFO, DEBUG, TRACE
  std::string debug_subsys;                              // INIT,NET,COLL,... (^ excludes); "" = all
  std::string debug_file;                                // log here instead of stderr (%h host, %p pid)
  std::string ready_file;                                // written with the bound addresses once serving
  bool help = false;
  bool print_config = false;
  // Where each setting came from: key -> "config FILE line N", "environment VAR",
  // "command line" (absent: the default).
  std::map<std::string, std::string> sources;
};

// Every setting, its effective value and where it came from (--print-config).
std::string PrintConfig(const DaemonOptions& o);

// Parses argv; on --help sets `help` and returns OK.
Status ParseDaemonOptions(int argc, char** argv, DaemonOptions* out);
const char* DaemonUsage();

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> SplitList(const std::string& text);

// Parses "64M", "8G", "4096" into bytes.
bool ParseSize(const std::string& text, uint64_t* out);

}  // namespace baton
