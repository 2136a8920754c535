// TcpMesh: Mesh over one or more TCP connections ("lanes") per peer node,
// driven by a private Boost.Asio io_context on the calling (communicator
// worker) thread. Sends and receives of a phase run concurrently; plain
// receives land directly in the destination buffer, reducing receives
// stream through a small staging buffer per lane so that reduction overlaps
// with the rest of the transfer. Small messages (up to 64 KiB) are read
// together with their headers, into a per-lane buffer, and small messages
// queued back to back on a lane are sent and received together: a system
// call per batch, not two per message, which is a good part of the time of
// a small collective. That call is made straight from the exchange, and
// while the exchange polls, a small receive that finds nothing yet is
// retried the same way: Asio (an epoll_wait, then the read) waits only for
// what the socket could not take, or did not have by the time polling stops.
//
// Why several lanes: one TCP flow rarely fills a fast NIC (one receive
// queue, one core's softirq, one congestion window; ECMP pins it to one
// path). Messages of kStripeMinBytes and more are cut into one stripe per
// lane (4 KiB-aligned, so that stripes hold whole elements of every type);
// smaller ones go on lane 0. Both sides cut the same way from the message
// size alone, and each lane keeps message order, so no extra framing is
// needed.
#pragma once

#include "common/asio.h"
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "transports/tcp/handler_memory.h"
#include "transports/mesh.h"

namespace baton::tcp {

class TcpMesh final : public Mesh {
 public:
  static constexpr uint64_t kStripeMinBytes = 256 << 10;
  // Messages up to this size are "small": read together with their header
  // into a per-lane buffer, and batched with the small messages next to
  // them on their lane. Up to 64 KiB, the system calls saved are worth
  // more than the copy out of that buffer; at 128 KiB no longer
  // (docs/benchmarks.md, "Small up to 64 KiB").
  static constexpr uint64_t kSmallMessageMaxBytes = 64 << 10;

  // `sockets[n]` are the connected sockets (lanes) to node n, the same
  // number for every peer (empty for this node). Exchange polls the sockets
  // for up to `spin` after each bit of progress before it blocks in epoll
  // (0: always block).
  TcpMesh(std::vector<std::string> peer_names, std::vector<std::vector<UniqueFd>> sockets,
          std::chrono::microseconds spin = std::chrono::microseconds(0));
  ~TcpMesh() override;

  Status Exchange(std::span<const NetOp> ops, const MessageStamp& stamp, const ReduceFn& reduce,
                  std::chrono::steady_clock::time_point deadline) override;
  void Close() override;
  void Interrupt() override;
  std::string DescribePeer(int node) const override;

 private:
  struct Run;
  struct LaneWork;

  std::vector<std::string> peer_names_;
  std::chrono::microseconds spin_;
  boost::asio::io_context io_;
  // Lane l to node n is lanes_[n * lanes_per_peer_ + l] (null for this node).
  struct Lane {
    std::unique_ptr<boost::asio::ip::tcp::socket> socket;
    // For the handlers of the lane's send chain and its receive chain (in
    // the heap so that a Lane can move while the blocks stay put).
    std::unique_ptr<HandlerMemory> send_memory = std::make_unique<HandlerMemory>();
    std::unique_ptr<HandlerMemory> recv_memory = std::make_unique<HandlerMemory>();
    std::vector<uint8_t> staging;  // for reducing receives
    std::vector<uint8_t> small_in;  // a batch of small messages with their headers
  };
  Lane* LaneOf(int node, int lane) { return &lanes_[static_cast<size_t>(node) * lanes_per_peer_ + lane]; }

  int num_nodes_ = 0;
  int lanes_per_peer_ = 1;
  std::vector<Lane> lanes_;
  std::vector<LaneWork> work_;  // Exchange's per-lane lists, kept from call to call
  std::vector<NetOp> parts_;    // Exchange's stripes of striped messages
  std::vector<size_t> polled_;  // Exchange's lanes whose small receive it polls itself
  bool closed_ = false;
};

}  // namespace baton::tcp
