#include "transports/tcp/connection_broker.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "common/address.h"

namespace baton::tcp {

namespace {
// Parked connections nobody claims (a communicator that failed elsewhere) are dropped after this.
constexpr auto kParkLimit = std::chrono::minutes(10);

// Set once at daemon start, before any data connection exists.
std::mutex g_congestion_mu;
std::string g_congestion;  // "" = the system's default
std::atomic<uint64_t> g_buffer_bytes{4 << 20};  // 0 = the kernel's autotuning

std::string SocketCongestion(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, len));
}
}  // namespace

Status SetDataCongestionControl(const std::string& name) {
  if (!name.empty()) {
    // Try it on a socket of our own first, so that a bad name fails at
    // start-up with the kernel's reason rather than on every connection.
    UniqueFd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!probe.valid()) return Status::Errno("socket", errno);
    if (::setsockopt(probe.get(), IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) !=
        0) {
      const int err = errno;
      return Status::InvalidArgument(
          "TCP congestion control '" + name + "' is not usable here (" + std::strerror(err) +
          "): see /proc/sys/net/ipv4/tcp_available_congestion_control, and tcp_allowed_congestion_control for a "
          "daemon that is not root");
    }
  }
  std::lock_guard<std::mutex> lock(g_congestion_mu);
  g_congestion = name;
  return Status::Ok();
}

std::string DataCongestionControl() {
  {
    std::lock_guard<std::mutex> lock(g_congestion_mu);
    if (!g_congestion.empty()) return g_congestion;
  }
  UniqueFd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return probe.valid() ? SocketCongestion(probe.get()) : "";
}

void ConnectionBroker::Deliver(uint64_t comm_uid, Channel channel, uint32_t from_node, UniqueFd fd) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  for (auto it = parked_.begin(); it != parked_.end();) {
    it = now - it->second.arrived > kParkLimit ? parked_.erase(it) : std::next(it);
  }
  parked_[{comm_uid, static_cast<uint16_t>(channel), from_node}] = Parked{std::move(fd), now};
  cv_.notify_all();
}

Status ConnectionBroker::Await(uint64_t comm_uid, Channel channel, uint32_t from_node, Clock::time_point deadline,
                               UniqueFd* out) {
  std::unique_lock<std::mutex> lock(mu_);
  const Key key{comm_uid, static_cast<uint16_t>(channel), from_node};
  while (true) {
    auto it = parked_.find(key);
    if (it != parked_.end()) {
      *out = std::move(it->second.fd);
      parked_.erase(it);
      return Status::Ok();
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && Clock::now() >= deadline) {
      return Status::Timeout("node " + std::to_string(from_node) + " did not connect in time");
    }
  }
}

void ConnectionBroker::Forget(uint64_t comm_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = parked_.begin(); it != parked_.end();) {
    it = std::get<0>(it->first) == comm_uid ? parked_.erase(it) : std::next(it);
  }
}

void SetDataSocketBuffer(uint64_t bytes) { g_buffer_bytes.store(bytes, std::memory_order_relaxed); }

uint64_t DataSocketBuffer() { return g_buffer_bytes.load(std::memory_order_relaxed); }

SocketBuffers ProbeDataSocketBuffers() {
  UniqueFd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return {};
  TuneDataSocket(probe.get());
  auto get = [&](int option) -> uint64_t {
    int value = 0;
    socklen_t len = sizeof value;
    if (::getsockopt(probe.get(), SOL_SOCKET, option, &value, &len) != 0 || value < 0) return 0;
    return static_cast<uint64_t>(value) / 2;
  };
  return {get(SO_SNDBUF), get(SO_RCVBUF)};
}

bool Capped(uint64_t asked, SocketBuffers granted) {
  return asked > 0 && (granted.send < asked || granted.receive < asked);
}

uint64_t EffectiveDataSocketBuffer(uint64_t asked, bool chosen, SocketBuffers granted) {
  return Capped(asked, granted) && !chosen ? 0 : asked;
}

void TuneDataSocket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A fixed size is capped by net.core.{w,r}mem_max (ProbeDataSocketBuffers
  // tells) and turns off the kernel's autotuning for this socket.
  if (const uint64_t bytes = g_buffer_bytes.load(std::memory_order_relaxed); bytes > 0) {
    const int buf = static_cast<int>(std::min<uint64_t>(bytes, 1u << 30));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  }
  std::string congestion;
  {
    std::lock_guard<std::mutex> lock(g_congestion_mu);
    congestion = g_congestion;
  }
  // Checked at start-up (SetDataCongestionControl): a failure here leaves
  // the system's default, which still works.
  if (!congestion.empty()) {
    ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion.data(), static_cast<socklen_t>(congestion.size()));
  }
}

boost::asio::ip::tcp ProtocolOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ss.ss_family == AF_INET6 ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4();
}

Status ConnectAndHello(const std::string& address, const Hello& hello, ConnectionBroker::Clock::time_point deadline,
                       UniqueFd* out) {
  HostPort hp;
  BATON_RETURN_IF_ERROR(ParseHostPort(address, &hp));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(hp.port);
  if (int rc = ::getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Status::Unavailable("cannot resolve " + address + ": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  Status last = Status::Unavailable("no address for " + address);
  auto backoff = std::chrono::milliseconds(10);
  while (true) {
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
      if (!fd.valid()) {
        last = Status::Errno("socket", errno);
        continue;
      }
      TuneDataSocket(fd.get());
      if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
        last = Status::Errno("connect to " + address, errno);
        continue;
      }
      const char* p = reinterpret_cast<const char*>(&hello);
      size_t left = sizeof hello;
      while (left > 0) {
        ssize_t n = ::send(fd.get(), p, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Status::Errno("sending hello to " + address, errno);
        p += n;
        left -= static_cast<size_t>(n);
      }
      *out = std::move(fd);
      return Status::Ok();
    }
    if (ConnectionBroker::Clock::now() + backoff >= deadline) return last;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

}  // namespace baton::tcp
