// P2pLink: point-to-point sends and receives between ranks on different
// nodes of one communicator. One TCP connection per peer node (separate from
// the collective connections, so a pending receive never blocks a
// collective), driven by its own Boost.Asio thread.
//
// Protocol: eager. A send is written at once (header + payload) and
// completes when the kernel has taken the bytes. The receiving daemon reads
// the header and, if the matching receive (same source and destination,
// next in order) is posted, reads the payload straight into the receive
// buffer; otherwise it buffers the message until the receive is posted.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "common/unique_fd.h"
#include "daemon/local_op.h"
#include "transports/tcp/wire.h"

namespace baton {

class P2pLink {
 public:
  // `sockets[n]`: connection to node n (invalid for nodes without one).
  // Messages that arrive before their receive is posted are buffered up to
  // `max_unexpected_bytes` in all; past that the link fails (a sender far
  // ahead of its receiver, or one that never stops).
  P2pLink(std::vector<int> node_of_rank, std::vector<std::string> node_names, std::vector<UniqueFd> sockets,
          uint64_t max_unexpected_bytes = 1ull << 30);
  ~P2pLink();

  void Send(LocalOp op);
  void Recv(LocalOp op);
  // Fails everything queued with `reason` and closes the connections.
  void Close(const Status& reason);

  // An arriving message's header against the receive it matched: same
  // size and type, or an error naming both ranks. (Public for fuzzing.)
  static Status CheckSizes(const tcp::P2pHeader& h, const LocalOp& recv);

 private:
  struct Unexpected {
    tcp::P2pHeader header;
    std::vector<uint8_t> payload;
  };
  struct Peer {
    std::unique_ptr<boost::asio::ip::tcp::socket> socket;
    std::deque<LocalOp> sends;  // front is being written
    tcp::P2pHeader out{};
    tcp::P2pHeader in{};
    std::vector<uint8_t> sink;  // payload of a message whose receive failed
    Status closed;              // set once the connection ended
  };
  using Pair = std::pair<int, int>;  // (src rank, dst rank)

  void WriteNext(int node);
  void ReadHeader(int node);
  void FailAll(const Status& st);
  void PeerClosed(int node);

  std::vector<int> node_of_rank_;
  std::vector<std::string> node_names_;
  boost::asio::io_context io_;
  std::vector<Peer> peers_;
  std::map<Pair, std::deque<LocalOp>> posted_;
  std::map<Pair, std::deque<Unexpected>> unexpected_;
  const uint64_t max_unexpected_bytes_;
  uint64_t unexpected_bytes_ = 0;  // buffered, or being read into a buffer
  std::map<Pair, uint64_t> send_seq_;
  Status failed_;
  std::thread thread_;
};

}  // namespace baton
