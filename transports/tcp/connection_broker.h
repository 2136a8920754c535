// ConnectionBroker: incoming data connections wait here, keyed by
// (communicator, channel, sending node), until the communicator claims them.
// A connection may arrive before this daemon has created the communicator.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <tuple>

#include "common/asio.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "transports/tcp/wire.h"

namespace baton::tcp {

class ConnectionBroker {
 public:
  using Clock = std::chrono::steady_clock;

  void Deliver(uint64_t comm_uid, Channel channel, uint32_t from_node, UniqueFd fd);
  Status Await(uint64_t comm_uid, Channel channel, uint32_t from_node, Clock::time_point deadline, UniqueFd* out);
  // Drops every parked connection of a communicator (it failed or was destroyed).
  void Forget(uint64_t comm_uid);

 private:
  using Key = std::tuple<uint64_t, uint16_t, uint32_t>;
  struct Parked {
    UniqueFd fd;
    Clock::time_point arrived;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Parked> parked_;
};

// Opens a TCP connection to `address` (host:port), tunes it for bulk
// transfer and sends `hello`. Retries refused connections until `deadline`
// (the peer daemon may still be starting). Authentication follows
// (handshake.h).
Status ConnectAndHello(const std::string& address, const Hello& hello, ConnectionBroker::Clock::time_point deadline,
                       UniqueFd* out);

// Socket options for data connections: no Nagle delay, the buffer size set
// with SetDataSocketBuffer, and the TCP congestion control set with
// SetDataCongestionControl (if any).
void TuneDataSocket(int fd);

// The SO_SNDBUF and SO_RCVBUF of data connections made from now on; 0 sets
// neither, leaving both to the kernel's autotuning (net.ipv4.tcp_rmem and
// tcp_wmem), which a fixed size turns off. The default is 4 MiB.
void SetDataSocketBuffer(uint64_t bytes);
uint64_t DataSocketBuffer();

// What the kernel grants a data connection, in usable bytes (half of what
// getsockopt reports: the kernel doubles the size for its bookkeeping), as
// tuned by TuneDataSocket on a fresh socket. A fixed size comes back smaller
// than asked when net.core.wmem_max / rmem_max cap it.
struct SocketBuffers {
  uint64_t send = 0;
  uint64_t receive = 0;
};
SocketBuffers ProbeDataSocketBuffers();

// Whether the kernel granted less than `asked` (0: nothing asked) on either side.
bool Capped(uint64_t asked, SocketBuffers granted);

// The buffer size batond applies, given the size `asked` for, whether the
// operator chose it (or it is the default), and what the kernel grants for
// it: a default the kernel would cap gives way to autotuning (0), because
// a fixed size turns autotuning off and capped it reaches less; a size the
// operator chose is kept.
uint64_t EffectiveDataSocketBuffer(uint64_t asked, bool chosen, SocketBuffers granted);

// The congestion control algorithm for data connections made from now on
// ("" = the system's default, net.ipv4.tcp_congestion_control). Fails,
// changing nothing, if the kernel refuses it (not loaded, or not in
// net.ipv4.tcp_allowed_congestion_control for an unprivileged daemon).
Status SetDataCongestionControl(const std::string& name);
// The algorithm a new data connection gets: the one set, or the system's.
std::string DataCongestionControl();

// The Asio protocol (v4 or v6) of a connected socket.
boost::asio::ip::tcp ProtocolOf(int fd);

}  // namespace baton::tcp
