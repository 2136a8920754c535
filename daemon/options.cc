#include "daemon/options.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <fstream>
#include <vector>
#include <cstring>

namespace baton {

const char* DaemonUsage() {
  return R"(usage: batond [options]

Runs the Baton daemon for this node: accepts training processes on a Unix
socket, executes their collectives, talks to peer daemons over TCP and serves
the rendezvous service over gRPC.

options:
  --socket PATH          Unix socket for clients (default /run/baton/batond.sock)
  --listen HOST:PORT     data connections from peer daemons (default 127.0.0.1:7100;
                         port 0 picks a free port)
  --advertise HOST:PORT  address peer daemons should dial (default: the --listen
                         address; required when listening on 0.0.0.0)
  --grpc HOST:PORT       gRPC services: rendezvous (default 127.0.0.1:7101)
  --rendezvous HOST:PORT rendezvous service for clients that set no
                         BATON_RENDEZVOUS (default: this daemon's --grpc)
  --node-name NAME       name of this node in messages (default: hostname)
  --max-client-memory N  shared memory one client may allocate, e.g. 8G (default 8G)
  --max-user-memory N    shared memory all clients of one user may hold (default 32G)
  --max-client-comms N   communicators one client may hold or be joining (default 256)
  --max-user-comms N     the same for all clients of one user (default 4096)
  --max-user-clients N   client processes of one user connected at once (default 1024;
                         each has at most 256 operations in flight)
  --max-p2p-buffer N     bytes of point-to-point messages from other nodes that
                         one communicator buffers before their receives are posted;
                         beyond it the communicator fails (default 1G)
  --allow-users LIST     users (names or uids) who may join other users' jobs; a job
                         otherwise belongs to the user whose client created it here
  --allow-groups LIST    groups (names or gids) whose members may do so too
  --tls-cert PATH        gRPC over TLS: this daemon's certificate (PEM); with
  --tls-key PATH         its key and
  --tls-ca PATH          the CA of every daemon and operator certificate
  --admin-cns LIST       certificate common names allowed admin actions (abort)
                         under TLS; without TLS only local callers may take them
  --socket-mode OCTAL    permissions of the client socket (default 0666: any local
                         user may connect; jobs stay their owner's)
  --timeout SECONDS      collective timeout when a communicator sets none (default 300)
  --straggler-warning SECONDS
                         log (and report) a rank that keeps an operation waiting
                         this long (default 5)
  --heartbeat SECONDS    interval of heartbeats to peer daemons (default 1)
  --peer-timeout SECONDS a peer daemon silent this long is declared dead and
                         its communicators aborted (default 10)
  --flight-records N     operations each communicator's flight recorder keeps (default 1000)
  --progress-spin-us N   a communicator's worker polls this long for the next
                         submission before it sleeps (default 100; 0: never spin).
                         Spinning only follows activity: an idle daemon sleeps
  --fast-path-max-bytes N
                         blocking collectives of at most N bytes per rank on a
                         communicator whose ranks are all on this node run among
                         the ranks in shared memory, without a hop through batond
                         (default 16K, at most 1M; 0: never)
  --gpu-collectives on|off
                         collectives of ranks all on this node whose buffers are
                         all GPU memory run on the GPUs, and across nodes their
                         local steps do (default on; off: every device buffer is
                         staged through host memory)
  --gpu-allreduce auto|spread|gathered
                         the shape of such an AllReduce (within a node, and of
                         its local steps across nodes): spread, each rank's GPU
                         reducing its share of the vector, or gathered, every
                         reduction on the first rank's GPU (default auto: spread
                         when the ranks are on more than one GPU); the same
                         for the folds of a Reduce and the copies of a
                         Broadcast, and across nodes of an
                         AllGather's or Broadcast's copy-out to every rank and
                         of a ReduceScatter's or Reduce's fold of the node
  --device-sharing any|fd-only
                         GPU memory clients may register: any (default), or
                         fd-only: only allocations passed as file descriptors
                         (baton_mem_alloc_device, cuMemCreate shareable as a
                         POSIX fd), refusing cudaMalloc memory, whose CUDA IPC
                         handle does not prove the client owns it (security.md)
  --sockets-per-peer N   TCP connections to each peer node per communicator for
                         collective data, 1..16 (default 2; $BATON_NSOCKS); messages of
                         256 KiB and more are striped across them. Nodes agree on
                         the smallest value any of them asks for
  --tcp-congestion NAME  TCP congestion control of data connections, e.g. cubic
                         ($BATON_TCP_CONGESTION; default: the system's,
                         net.ipv4.tcp_congestion_control;
                         BBR paces loopback and low-latency links below what
                         they carry: see docs/benchmarks.md)
  --tcp-buffer-bytes N   send and receive buffer of each data connection
                         ($BATON_TCP_BUFFER_BYTES; default 4M; 0: leave them to the
                         kernel's autotuning, net.ipv4.tcp_rmem / tcp_wmem). The
                         kernel caps a fixed size at net.core.rmem_max / wmem_max:
                         batond then keeps autotuning instead of the default, and
                         warns about a size given here
  --reduce-threads N     threads that share the copies and reductions of large
                         collectives inside this node (default 0: the CPUs this
                         daemon may run on, at most 8)
  --trace-dir DIR        when a communicator fails, write its flight recorder there
                         (Chrome trace JSON; default: not written)
  --socket-ifname SPEC   interfaces to advertise on when --listen is a wildcard, in
                         NCCL_SOCKET_IFNAME syntax ("eth,ib", "^docker", "=eth0");
                         default: $BATON_SOCKET_IFNAME, else all but lo/docker/veth
  --ib-hca SPEC          RDMA devices to use, NCCL_IB_HCA syntax ("mlx5_0:1,mlx5_1",
                         "^mlx5_3"); default: $BATON_IB_HCA, else all
  --topo-dump-file PATH  write the discovered topology (JSON) there at start
                         (default: $BATON_TOPO_DUMP_FILE)
  --sysfs-root DIR       where to discover the topology (default /sys)
  --ready-file PATH      once serving, write "data=HOST:PORT grpc=HOST:PORT" to PATH
                         (launchers and tests wait for it)
  --config FILE          read settings from FILE ("key = value" lines, keys as the
                         long options without dashes); command-line flags win
  --debug LEVEL          log level: ERROR, WARN, INFO, DEBUG, TRACE (default INFO; $BATON_DEBUG)
  --debug-subsys LIST    INIT,NET,COLL,RENDEZVOUS,CLIENT,ALLOC,TOPO,TUNING; ^ excludes
                         ($BATON_DEBUG_SUBSYS)
  --debug-file PATH      log to PATH (%h: host name, %p: pid) instead of stderr ($BATON_DEBUG_FILE)
  --print-config         print every setting, its value and where it came from, and exit
  --help                 this text

Settings come from, in increasing precedence: defaults, --config, the
environment variables named above (and $BATON_TIMEOUT for --timeout), the
command line.

environment:
  BATON_DEBUG=WARN|INFO|DEBUG|TRACE   log level (default INFO)
  BATON_DEBUG_SUBSYS=INIT,NET,COLL,RENDEZVOUS,CLIENT,ALLOC  (^ excludes)
)";
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool ParseSize(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return false;
  std::string suffix(ptr, text.data() + text.size());
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB") mult = 1ull << 30;
  else return false;
  if (__builtin_mul_overflow(value, mult, out)) return false;
  return true;
}

namespace {

const char* const kConfigKeys[] = {"socket", "listen", "advertise", "grpc", "rendezvous", "node-name",
                                   "max-client-memory", "max-user-memory", "max-client-comms", "max-user-comms", "max-user-clients", "max-p2p-buffer",
                                   "allow-users", "allow-groups", "tls-cert", "tls-key", "tls-ca", "admin-cns",
                                   "socket-mode", "timeout", "straggler-warning", "heartbeat",
                                   "peer-timeout", "flight-records", "progress-spin-us", "fast-path-max-bytes", "gpu-collectives", "gpu-allreduce", "device-sharing", "sockets-per-peer", "tcp-congestion", "tcp-buffer-bytes", "reduce-threads", "trace-dir", "socket-ifname",
                                   "topo-dump-file", "sysfs-root", "debug", "debug-subsys", "debug-file",
                                   "ib-hca"};

// Settings that may also come from the environment (config < environment < command line).
const std::pair<const char*, const char*> kEnvSettings[] = {
    {"BATON_SOCKET_IFNAME", "--socket-ifname"}, {"BATON_TOPO_DUMP_FILE", "--topo-dump-file"},
    {"BATON_IB_HCA", "--ib-hca"},               {"BATON_NSOCKS", "--sockets-per-peer"},
    {"BATON_TCP_CONGESTION", "--tcp-congestion"}, {"BATON_TCP_BUFFER_BYTES", "--tcp-buffer-bytes"},
    {"BATON_TIMEOUT", "--timeout"},             {"BATON_DEBUG", "--debug"},
    {"BATON_DEBUG_SUBSYS", "--debug-subsys"},   {"BATON_DEBUG_FILE", "--debug-file"}};

// Reads "key = value" lines (# comments) into ["--key", "value", ...].
Status ReadConfigFile(const std::string& path, std::vector<std::string>* args, std::vector<std::string>* origin) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read config file " + path);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    auto trim = [](std::string s) {
      const size_t b = s.find_first_not_of(" \t\r");
      const size_t e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    line = trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    const std::string where = path + " line " + std::to_string(lineno) + ": ";
    if (eq == std::string::npos) return Status::InvalidArgument(where + "expected 'key = value', got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    bool known = false;
    for (const char* k : kConfigKeys) known = known || key == k;
    if (!known) {
      std::string keys;
      for (const char* k : kConfigKeys) keys += (keys.empty() ? "" : ", ") + std::string(k);
      return Status::InvalidArgument(where + "unknown key '" + key + "' (known: " + keys + ")");
    }
    if (value.empty()) return Status::InvalidArgument(where + "'" + key + "' has no value");
    args->push_back("--" + key);
    args->push_back(value);
    const std::string from = "config " + path + " line " + std::to_string(lineno);
    origin->push_back(from);
    origin->push_back(from);
  }
  return Status::Ok();
}

}  // namespace

Status ParseDaemonOptions(int argc, char** argv, DaemonOptions* out) {
  DaemonOptions o;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) o.node_name = host;
  // Precedence: defaults < config file < environment < command line. The
  // config file's settings go first, then the environment's, so that flags
  // given on the command line win.
  std::vector<std::string> args;
  std::vector<std::string> origin;  // where each entry of args came from
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string path;
    if (a == "--config" && i + 1 < argc) path = argv[i + 1];
    if (a.rfind("--config=", 0) == 0) path = a.substr(9);
    if (!path.empty()) BATON_RETURN_IF_ERROR(ReadConfigFile(path, &args, &origin));
  }
  for (const auto& [env, flag] : kEnvSettings) {
    if (const char* v = std::getenv(env); v != nullptr && *v != '\0') {
      args.push_back(flag);
      args.push_back(v);
      origin.push_back(std::string("environment ") + env);
      origin.push_back(std::string("environment ") + env);
    }
  }
  for (int i = 1; i < argc; ++i) {
    args.push_back(argv[i]);
    origin.push_back("command line");
  }
  const int nargs = static_cast<int>(args.size());
  for (int i = 0; i < nargs; ++i) {
    std::string arg = args[i];
    const std::string from = origin[i];
    std::string value;
    const size_t eq = arg.find('=');
    bool has_inline = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&](std::string* v) -> Status {
      if (has_inline) {
        *v = value;
        return Status::Ok();
      }
      if (i + 1 >= nargs) return Status::InvalidArgument(arg + " needs a value (see batond --help)");
      *v = args[++i];
      return Status::Ok();
    };
    // The next value as a count up to `max`; the error reads "ARG 'V' is not
    // a count<of> up to MAX<note>".
    auto next_count = [&](uint64_t max, const char* of, const char* note, uint64_t* n) -> Status {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      if (!ParseSize(v, n) || *n > max) {
        return Status::InvalidArgument(arg + " '" + v + "' is not a count" + of + " up to " + std::to_string(max) +
                                       note);
      }
      return Status::Ok();
    };
    // The next value as a size (64K, 1M) up to `max`; the error reads "ARG
    // 'V' is not a size from 0 to MAX_TEXT".
    auto next_size = [&](uint64_t max, const char* max_text, uint64_t* n) -> Status {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      if (!ParseSize(v, n) || *n > max) {
        return Status::InvalidArgument(arg + " '" + v + "' is not a size from 0 to " + max_text);
      }
      return Status::Ok();
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--config") {
      std::string ignored;
      BATON_RETURN_IF_ERROR(next(&ignored));  // read above
    } else if (arg == "--socket") {
      BATON_RETURN_IF_ERROR(next(&o.socket_path));
    } else if (arg == "--listen") {
      BATON_RETURN_IF_ERROR(next(&o.listen));
    } else if (arg == "--advertise") {
      BATON_RETURN_IF_ERROR(next(&o.advertise));
    } else if (arg == "--grpc") {
      BATON_RETURN_IF_ERROR(next(&o.grpc));
    } else if (arg == "--rendezvous") {
      BATON_RETURN_IF_ERROR(next(&o.rendezvous));
    } else if (arg == "--print-config") {
      o.print_config = true;
    } else if (arg == "--debug") {
      BATON_RETURN_IF_ERROR(next(&o.debug));
      if (o.debug != "ERROR" && o.debug != "WARN" && o.debug != "INFO" && o.debug != "DEBUG" && o.debug != "TRACE") {
        return Status::InvalidArgument("debug level '" + o.debug + "' (" + from +
                                       ") is not one of ERROR, WARN, INFO, DEBUG, TRACE");
      }
    } else if (arg == "--debug-subsys") {
      BATON_RETURN_IF_ERROR(next(&o.debug_subsys));
    } else if (arg == "--debug-file") {
      BATON_RETURN_IF_ERROR(next(&o.debug_file));
    } else if (arg == "--ib-hca") {
      BATON_RETURN_IF_ERROR(next(&o.ib_hca));
    } else if (arg == "--tcp-congestion") {
      BATON_RETURN_IF_ERROR(next(&o.tcp_congestion));
      const bool ok = !o.tcp_congestion.empty() && o.tcp_congestion.size() < 16 &&
                      o.tcp_congestion.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
      if (!ok) return Status::InvalidArgument("--tcp-congestion '" + o.tcp_congestion + "' is not an algorithm name");
    } else if (arg == "--socket-ifname") {
      BATON_RETURN_IF_ERROR(next(&o.socket_ifname));
    } else if (arg == "--topo-dump-file") {
      BATON_RETURN_IF_ERROR(next(&o.topo_dump_file));
    } else if (arg == "--sysfs-root") {
      BATON_RETURN_IF_ERROR(next(&o.sysfs_root));
    } else if (arg == "--trace-dir") {
      BATON_RETURN_IF_ERROR(next(&o.trace_dir));
    } else if (arg == "--flight-records") {
      uint64_t n = 0;
      BATON_RETURN_IF_ERROR(next_count(1000000, "", "", &n));
      o.flight_records = n;
    } else if (arg == "--reduce-threads") {
      uint64_t n = 0;
      BATON_RETURN_IF_ERROR(next_count(256, "", " (0: automatic)", &n));
      o.reduce_threads = static_cast<int>(n);
    } else if (arg == "--sockets-per-peer") {
      uint64_t n = 0;
      BATON_RETURN_IF_ERROR(next_count(16, "", " (1..16)", &n));
      if (n == 0) return Status::InvalidArgument("--sockets-per-peer must be 1..16, not 0");
      o.sockets_per_peer = static_cast<int>(n);
    } else if (arg == "--progress-spin-us") {
      uint64_t n = 0;
      BATON_RETURN_IF_ERROR(next_count(1000000, " of microseconds", "", &n));
      o.progress_spin = std::chrono::microseconds(n);
    } else if (arg == "--tcp-buffer-bytes") {
      BATON_RETURN_IF_ERROR(next_size(1u << 30, "1G", &o.tcp_buffer_bytes));
    } else if (arg == "--fast-path-max-bytes") {
      BATON_RETURN_IF_ERROR(next_size(1u << 20, "1M", &o.fast_path_max_bytes));
    } else if (arg == "--gpu-collectives") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      if (v != "on" && v != "off") return Status::InvalidArgument("--gpu-collectives '" + v + "': say on or off");
      o.gpu_collectives = v == "on";
    } else if (arg == "--gpu-allreduce") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      if (!ParseGpuAllReduceShape(v, &o.gpu_allreduce)) {
        return Status::InvalidArgument("--gpu-allreduce '" + v + "': say auto, spread or gathered");
      }
    } else if (arg == "--device-sharing") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      if (v != "any" && v != "fd-only") return Status::InvalidArgument("--device-sharing '" + v + "': say any or fd-only");
      o.device_sharing = v == "any" ? DeviceSharingPolicy::kAny : DeviceSharingPolicy::kFdOnly;
    } else if (arg == "--ready-file") {
      BATON_RETURN_IF_ERROR(next(&o.ready_file));
    } else if (arg == "--node-name") {
      BATON_RETURN_IF_ERROR(next(&o.node_name));
    } else if (arg == "--max-client-memory" || arg == "--max-user-memory" || arg == "--max-p2p-buffer") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      uint64_t* target = arg == "--max-client-memory" ? &o.max_client_bytes
                         : arg == "--max-user-memory" ? &o.max_user_bytes
                                                      : &o.max_p2p_buffer;
      if (!ParseSize(v, target)) {
        return Status::InvalidArgument(arg + " '" + v + "' is not a size like 512M or 8G");
      }
    } else if (arg == "--max-client-comms" || arg == "--max-user-comms" || arg == "--max-user-clients") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      int* target = arg == "--max-client-comms" ? &o.max_client_comms
                    : arg == "--max-user-comms" ? &o.max_user_comms
                                                : &o.max_user_clients;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), *target);
      if (ec != std::errc() || ptr != v.data() + v.size() || *target < 1) {
        return Status::InvalidArgument(arg + " '" + v + "' is not a positive count");
      }
    } else if (arg == "--allow-users") {
      BATON_RETURN_IF_ERROR(next(&o.allow_users));
    } else if (arg == "--allow-groups") {
      BATON_RETURN_IF_ERROR(next(&o.allow_groups));
    } else if (arg == "--tls-cert") {
      BATON_RETURN_IF_ERROR(next(&o.tls_cert));
    } else if (arg == "--tls-key") {
      BATON_RETURN_IF_ERROR(next(&o.tls_key));
    } else if (arg == "--tls-ca") {
      BATON_RETURN_IF_ERROR(next(&o.tls_ca));
    } else if (arg == "--admin-cns") {
      BATON_RETURN_IF_ERROR(next(&o.admin_cns));
    } else if (arg == "--socket-mode") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), o.socket_mode, 8);
      if (ec != std::errc() || ptr != v.data() + v.size() || o.socket_mode > 0777) {
        return Status::InvalidArgument("--socket-mode '" + v + "' is not an octal mode like 0660");
      }
    } else if (arg == "--timeout" || arg == "--straggler-warning" || arg == "--heartbeat" ||
               arg == "--peer-timeout") {
      std::string v;
      BATON_RETURN_IF_ERROR(next(&v));
      double seconds = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
      if (ec != std::errc() || ptr != v.data() + v.size() || seconds <= 0 || seconds > 1e6) {
        return Status::InvalidArgument(arg + " '" + v + "' (" + from + ") is not a positive number of seconds");
      }
      const auto ms = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
      if (arg == "--timeout") o.default_timeout = ms;
      else if (arg == "--straggler-warning") o.straggler_warning = ms;
      else if (arg == "--heartbeat") o.heartbeat_interval = ms;
      else o.peer_timeout = ms;
    } else {
      return Status::InvalidArgument("unknown option '" + arg + "' (see batond --help)");
    }
    if (arg != "--help" && arg != "-h" && arg != "--config" && arg != "--print-config") o.sources[arg.substr(2)] = from;
  }
  if (o.socket_path.size() >= 100) return Status::InvalidArgument("--socket path is too long for a Unix socket");
  *out = std::move(o);
  return Status::Ok();
}

std::string PrintConfig(const DaemonOptions& o) {
  auto secs = [](std::chrono::milliseconds ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ms.count()) / 1000.0);
    return std::string(buf);
  };
  const std::vector<std::pair<std::string, std::string>> values = {
      {"socket", o.socket_path},
      {"listen", o.listen},
      {"advertise", o.advertise},
      {"grpc", o.grpc},
      {"rendezvous", o.rendezvous},
      {"node-name", o.node_name},
      {"max-client-memory", std::to_string(o.max_client_bytes)},
      {"max-user-memory", std::to_string(o.max_user_bytes)},
      {"max-client-comms", std::to_string(o.max_client_comms)},
      {"max-user-comms", std::to_string(o.max_user_comms)},
      {"max-user-clients", std::to_string(o.max_user_clients)},
      {"max-p2p-buffer", std::to_string(o.max_p2p_buffer)},
      {"allow-users", o.allow_users},
      {"allow-groups", o.allow_groups},
      {"tls-cert", o.tls_cert},
      {"tls-key", o.tls_key},
      {"tls-ca", o.tls_ca},
      {"admin-cns", o.admin_cns},
      {"socket-mode", [&] {
         char m[8];
         std::snprintf(m, sizeof m, "0%o", o.socket_mode);
         return std::string(m);
       }()},
      {"timeout", secs(o.default_timeout)},
      {"straggler-warning", secs(o.straggler_warning)},
      {"heartbeat", secs(o.heartbeat_interval)},
      {"peer-timeout", secs(o.peer_timeout)},
      {"flight-records", std::to_string(o.flight_records)},
      {"progress-spin-us", std::to_string(o.progress_spin.count())},
      {"fast-path-max-bytes", std::to_string(o.fast_path_max_bytes)},
      {"gpu-collectives", o.gpu_collectives ? "on" : "off"},
      {"gpu-allreduce", GpuAllReduceShapeName(o.gpu_allreduce)},
      {"device-sharing", o.device_sharing == DeviceSharingPolicy::kAny ? "any" : "fd-only"},
      {"sockets-per-peer", std::to_string(o.sockets_per_peer)},
      {"reduce-threads", std::to_string(o.reduce_threads)},
      {"trace-dir", o.trace_dir},
      {"tcp-congestion", o.tcp_congestion},
      {"tcp-buffer-bytes", std::to_string(o.tcp_buffer_bytes)},
      {"socket-ifname", o.socket_ifname},
      {"ib-hca", o.ib_hca},
      {"topo-dump-file", o.topo_dump_file},
      {"sysfs-root", o.sysfs_root},
      {"debug", o.debug},
      {"debug-subsys", o.debug_subsys},
      {"debug-file", o.debug_file},
  };
  std::string out;
  for (const auto& [key, value] : values) {
    auto it = o.sources.find(key);
    char line[512];
    std::snprintf(line, sizeof line, "%-18s = %-32s # %s\n", key.c_str(), value.empty() ? "\"\"" : value.c_str(),
                  it == o.sources.end() ? "default" : it->second.c_str());
    out += line;
  }
  return out;
}

}  // namespace baton
