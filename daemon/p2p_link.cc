#include "daemon/p2p_link.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "common/logging.h"
#include "common/thread_name.h"
#include "transports/tcp/connection_broker.h"
#include "transports/tcp/transfer.h"

namespace baton {

namespace asio = boost::asio;

P2pLink::P2pLink(std::vector<int> node_of_rank, std::vector<std::string> node_names, std::vector<UniqueFd> sockets,
                 uint64_t max_unexpected_bytes)
    : node_of_rank_(std::move(node_of_rank)),
      node_names_(std::move(node_names)),
      peers_(sockets.size()),
      max_unexpected_bytes_(max_unexpected_bytes) {
  for (size_t n = 0; n < sockets.size(); ++n) {
    if (!sockets[n].valid()) continue;
    const int fd = sockets[n].release();
    peers_[n].socket = std::make_unique<asio::ip::tcp::socket>(io_, tcp::ProtocolOf(fd), fd);
    ReadHeader(static_cast<int>(n));
  }
  // Keep the io_context alive while idle; Close() stops it.
  thread_ = std::thread([this] {
    NameThisThread("batond-p2p");
    auto guard = asio::make_work_guard(io_);
    io_.run();
  });
}

P2pLink::~P2pLink() {
  Close(Status::Aborted("communicator destroyed"));
  if (thread_.joinable()) thread_.join();
}

void P2pLink::Close(const Status& reason) {
  asio::post(io_, [this, reason] {
    FailAll(reason);
    io_.stop();
  });
}

void P2pLink::FailAll(const Status& st) {
  if (failed_.ok()) failed_ = st;
  for (auto& p : peers_) {
    boost::system::error_code ignored;
    if (p.socket) p.socket->close(ignored);
    for (auto& op : p.sends) op.Finish(failed_);
    p.sends.clear();
  }
  for (auto& [pair, q] : posted_) {
    for (auto& op : q) op.Finish(failed_);
  }
  posted_.clear();
  unexpected_.clear();
  unexpected_bytes_ = 0;
}

void P2pLink::PeerClosed(int node) {
  // The peer's communicator is gone (its ranks left, or it failed). What it
  // sent before closing is still buffered here and can be received; waiting
  // for more from its ranks would wait forever.
  Peer& p = peers_[node];
  p.closed = Status::Remote("point-to-point connection to node " + node_names_[node] +
                            " closed: its ranks left the communicator or its daemon failed");
  boost::system::error_code ignored;
  if (p.socket) p.socket->close(ignored);
  for (auto& op : p.sends) op.Finish(p.closed);
  p.sends.clear();
  for (auto& [pair, q] : posted_) {
    if (node_of_rank_[pair.first] != node) continue;
    for (auto& op : q) op.Finish(p.closed);
    q.clear();
  }
}

void P2pLink::Send(LocalOp op) {
  asio::post(io_, [this, op = std::move(op)]() mutable {
    if (!failed_.ok()) return op.Finish(failed_);
    const int node = node_of_rank_[op.sig.root];
    Peer& p = peers_[node];
    if (!p.closed.ok()) return op.Finish(p.closed);
    p.sends.push_back(std::move(op));
    if (p.sends.size() == 1) WriteNext(node);
  });
}

void P2pLink::WriteNext(int node) {
  Peer& p = peers_[node];
  if (p.sends.empty() || !failed_.ok()) return;
  const LocalOp& op = p.sends.front();
  p.out = {tcp::kDataMagic, op.rank, op.sig.root, static_cast<uint32_t>(op.sig.dtype),
           send_seq_[{op.rank, op.sig.root}]++, op.sig.count, op.bufs.send_bytes};
  std::array<asio::const_buffer, 2> bufs{asio::buffer(&p.out, sizeof p.out),
                                         asio::buffer(op.bufs.send, op.bufs.send_bytes)};
  asio::async_write(*p.socket, bufs, tcp::TransferAll(), [this, node](const boost::system::error_code& ec, size_t) {
    if (ec) {
      if (ec != asio::error::operation_aborted) PeerClosed(node);
      return;
    }
    Peer& peer = peers_[node];
    peer.sends.front().Finish(Status::Ok());
    peer.sends.pop_front();
    WriteNext(node);
  });
}

Status P2pLink::CheckSizes(const tcp::P2pHeader& h, const LocalOp& recv) {
  if (h.bytes != recv.bufs.recv_bytes || h.dtype != static_cast<uint32_t>(recv.sig.dtype)) {
    return Status::InvalidArgument("recv from rank " + std::to_string(h.src_rank) + " expected " +
                                   std::to_string(recv.sig.count) + " x " + DataTypeName(recv.sig.dtype) +
                                   " but rank " + std::to_string(h.src_rank) + " sent " + std::to_string(h.count) +
                                   " x " + DataTypeName(static_cast<DataType>(h.dtype % kNumDataTypes)));
  }
  return Status::Ok();
}

void P2pLink::ReadHeader(int node) {
  Peer& p = peers_[node];
  asio::async_read(*p.socket, asio::buffer(&p.in, sizeof p.in), tcp::TransferAll(),
                   [this, node](const boost::system::error_code& ec, size_t) {
    if (ec) {
      if (ec != asio::error::operation_aborted && failed_.ok()) PeerClosed(node);
      return;
    }
    Peer& peer = peers_[node];
    const tcp::P2pHeader h = peer.in;
    const int world = static_cast<int>(node_of_rank_.size());
    if (h.magic != tcp::kDataMagic || h.src_rank < 0 || h.src_rank >= world || h.dst_rank < 0 ||
        h.dst_rank >= world || node_of_rank_[h.src_rank] != node || h.bytes > (1ull << 40)) {
      return FailAll(Status::Remote("malformed point-to-point message from node " + node_names_[node]));
    }
    auto& q = posted_[{h.src_rank, h.dst_rank}];
    if (!q.empty()) {
      LocalOp recv = std::move(q.front());
      q.pop_front();
      Status st = CheckSizes(h, recv);
      if (st.ok()) {
        auto op = std::make_shared<LocalOp>(std::move(recv));
        asio::async_read(*peer.socket, asio::buffer(op->bufs.recv, h.bytes), tcp::TransferAll(),
                         [this, node, op](const boost::system::error_code& rec, size_t) {
                           if (rec) {
                             op->Finish(Status::Remote("receive from node " + node_names_[node] + " failed"));
                             if (rec != asio::error::operation_aborted) PeerClosed(node);
                             return;
                           }
                           op->Finish(Status::Ok());
                           ReadHeader(node);
                         });
        return;
      }
      recv.Finish(st);
      peer.sink.resize(h.bytes);
      asio::async_read(*peer.socket, asio::buffer(peer.sink), tcp::TransferAll(),
                       [this, node](const boost::system::error_code& rec, size_t) {
        if (rec) {
          if (rec != asio::error::operation_aborted) PeerClosed(node);
          return;
        }
        ReadHeader(node);
      });
      return;
    }
    // Nobody is waiting yet: buffer the message, within the bound.
    if (h.bytes > max_unexpected_bytes_ - std::min(unexpected_bytes_, max_unexpected_bytes_)) {
      return FailAll(Status::Exhausted(
          "rank " + std::to_string(h.src_rank) + " on node " + node_names_[node] + " sent rank " +
          std::to_string(h.dst_rank) + " a " + std::to_string(h.bytes) + "-byte message before its receive was " +
          "posted, and " + std::to_string(unexpected_bytes_) + " bytes of such messages are already buffered " +
          "(batond --max-p2p-buffer " + std::to_string(max_unexpected_bytes_) +
          "): post receives earlier, or raise the limit"));
    }
    unexpected_bytes_ += h.bytes;
    auto un = std::make_shared<Unexpected>(Unexpected{h, std::vector<uint8_t>(h.bytes)});
    asio::async_read(*peer.socket, asio::buffer(un->payload), tcp::TransferAll(),
                     [this, node, un](const boost::system::error_code& rec, size_t) {
      if (rec) {
        if (rec != asio::error::operation_aborted) PeerClosed(node);
        return;
      }
      // A receive may have been posted while the payload was arriving.
      const Pair pair{un->header.src_rank, un->header.dst_rank};
      auto& waiting = posted_[pair];
      if (!waiting.empty()) {
        LocalOp recv = std::move(waiting.front());
        waiting.pop_front();
        Status st = CheckSizes(un->header, recv);
        if (st.ok() && !un->payload.empty()) std::memcpy(recv.bufs.recv, un->payload.data(), un->payload.size());
        unexpected_bytes_ -= std::min<uint64_t>(unexpected_bytes_, un->payload.size());  // 0 after FailAll
        recv.Finish(st);
      } else {
        unexpected_[pair].push_back(std::move(*un));
      }
      ReadHeader(node);
    });
  });
}

void P2pLink::Recv(LocalOp op) {
  asio::post(io_, [this, op = std::move(op)]() mutable {
    if (!failed_.ok()) return op.Finish(failed_);
    const Pair pair{op.sig.root, op.rank};
    auto& un = unexpected_[pair];
    if (!un.empty()) {
      Unexpected msg = std::move(un.front());
      un.pop_front();
      Status st = CheckSizes(msg.header, op);
      if (st.ok() && !msg.payload.empty()) std::memcpy(op.bufs.recv, msg.payload.data(), msg.payload.size());
      unexpected_bytes_ -= std::min<uint64_t>(unexpected_bytes_, msg.payload.size());
      return op.Finish(st);
    }
    const Status& closed = peers_[node_of_rank_[op.sig.root]].closed;
    if (!closed.ok()) return op.Finish(closed);
    posted_[pair].push_back(std::move(op));
  });
}

}  // namespace baton
