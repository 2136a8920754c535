// TcpMesh: Mesh over one TCP connection per peer node, driven by a private
// Boost.Asio io_context on the calling (communicator worker) thread. Sends
// and receives of a phase run concurrently; plain receives land directly in
// the destination buffer, reducing receives stream through a small staging
// buffer so that reduction overlaps with the rest of the transfer.
#pragma once

#include "common/asio.h"
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "transports/mesh.h"

namespace baton::tcp {

class TcpMesh final : public Mesh {
 public:
  // `sockets[n]` is the connected socket to node n (invalid for this node).
  // Exchange polls the sockets for up to `spin` after each bit of progress
  // before it blocks in epoll, in phases of up to 256 KiB (0: always block).
  TcpMesh(std::vector<std::string> peer_names, std::vector<UniqueFd> sockets,
          std::chrono::microseconds spin = std::chrono::microseconds(0));
  ~TcpMesh() override;

  Status Exchange(std::span<const NetOp> ops, const MessageStamp& stamp, const ReduceFn& reduce,
                  std::chrono::steady_clock::time_point deadline) override;
  void Close() override;
  void Interrupt() override;
  std::string DescribePeer(int node) const override;

 private:
  struct Run;

  std::vector<std::string> peer_names_;
  std::chrono::microseconds spin_;
  boost::asio::io_context io_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> sockets_;
  std::vector<std::vector<uint8_t>> staging_;  // per peer, for reducing receives
  bool closed_ = false;
};

}  // namespace baton::tcp
