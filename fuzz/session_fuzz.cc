// A client process talking to batond over its Unix socket: any sequence of
// control messages (any sizes, types and contents) into a real Session.
// The input is a first byte, then a series of [length (2 bytes), message]
// records. Bit 0 of the first byte starts with a valid Hello so that the
// handlers behind it are reached; bit 1 puts a byte before each record,
// the number of file descriptors (0..16, of /dev/null) passed with it. After
// each input the process holds no more fds than before it: batond keeps no
// fd a client sent, whatever the message.
// CommInit is left out: it dials the rendezvous address named in the message,
// and a fuzzer must not send traffic to arbitrary hosts.
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "common/fd_passing.h"
#include "daemon/comm_registry.h"
#include "daemon/metrics.h"
#include "daemon/session.h"
#include "transports/tcp/connection_broker.h"
#include "fuzz/fuzz_input.h"

using namespace baton;

namespace {

struct World {
  DaemonOptions options;
  tcp::ConnectionBroker broker;
  CommRegistry registry;
  Metrics metrics;
  AccessPolicy access{{}, {}, {}};
  SessionEnv env;
  std::atomic<uint32_t> clients{0};
  World() {
    options.max_client_bytes = 64ull << 20;
    env.options = &options;
    env.services.broker = &broker;
    env.services.registry = &registry;
    env.services.metrics = &metrics;
    env.node_name = "fuzz";
    env.rendezvous = "127.0.0.1:1";
    env.access = &access;
    env.services.pinned = gpu::PinnedPool::Create(0);
  }
};

// Reads and drops every reply waiting on `fd`, closing passed fds.
void DrainReplies(int fd) {
  for (;;) {
    ipc::Reply reply;
    std::vector<UniqueFd> fds;
    size_t len = 0;
    if (!RecvWithFds(fd, &reply, sizeof reply, &len, &fds).ok() || len == 0) return;  // EAGAIN: drained
  }
}

// File descriptors this process holds now.
int OpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (::readdir(dir) != nullptr) ++n;
  ::closedir(dir);
  return n;
}

// One client's session: the messages of `in`, then the client exits.
void RunSession(World* world, fuzz::Input in, int null_fd) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return;
  UniqueFd client(fds[1]);
  ::fcntl(client.get(), F_SETFL, O_NONBLOCK);
  boost::asio::io_context io;
  Session::Socket socket(io, UnixSeqPacket(AF_UNIX, 0), fds[0]);
  ucred cred{::getpid(), ::getuid(), ::getgid()};
  std::make_shared<Session>(world->env, io, std::move(socket), cred, 1, &world->clients)->Start();

  std::vector<std::pair<std::string, int>> messages;  // message, fds passed with it
  const uint8_t mode = in.Take<uint8_t>();
  if (mode & 1) {
    ipc::HelloRequest hello{};
    hello.h.type = static_cast<uint32_t>(ipc::MsgType::kHello);
    hello.version = ipc::kProtocolVersion;
    messages.emplace_back(std::string(reinterpret_cast<const char*>(&hello), sizeof hello), 0);
  }
  while (in.left() > 0 && messages.size() < 64) {
    const int nfds = (mode & 2) ? in.Take<uint8_t>() % 17 : 0;
    std::string m = in.String(ipc::kMaxMessage + 16);
    if (m.size() >= sizeof(ipc::MsgHeader) &&
        reinterpret_cast<const ipc::MsgHeader*>(m.data())->type == static_cast<uint32_t>(ipc::MsgType::kCommInit)) {
      continue;
    }
    messages.emplace_back(std::move(m), nfds);
  }
  for (const auto& [m, nfds] : messages) {
    if (!SendWithFds(client.get(), m.data(), m.size(), std::vector<int>(nfds, null_fd)).ok()) break;
    io.restart();
    io.poll();
    DrainReplies(client.get());
  }
  client.reset();  // the client exits
  io.restart();
  io.poll();
}  // the io_context and whatever the session left in it go here

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();
  static const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int fds_before = OpenFds();
  RunSession(world, fuzz::Input(data, size), null_fd);
  if (const int fds_after = OpenFds(); fds_after > fds_before) {
    std::fprintf(stderr, "session_fuzz: %d file descriptors open after the input, %d before\n", fds_after,
                 fds_before);
    std::abort();
  }
  return 0;
}
