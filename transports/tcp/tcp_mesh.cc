#include "transports/tcp/tcp_mesh.h"

#include <sys/socket.h>

#include <thread>

#include "common/logging.h"
#include "transports/tcp/connection_broker.h"
#include "transports/tcp/wire.h"

namespace baton::tcp {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr size_t kStagingBytes = 1 << 20;  // multiple of every element size
constexpr uint64_t kPollMaxBytes = 256 << 10;  // phases up to this size poll before blocking

}  // namespace

// State of one Exchange call. Every handler holds a pointer to it, so
// Exchange does not return before all handlers have run.
struct TcpMesh::Run {
  struct Peer {
    std::vector<const NetOp*> sends;
    std::vector<const NetOp*> recvs;
    size_t next_send = 0;
    size_t next_recv = 0;
    DataHeader out_header{};
    DataHeader in_header{};
  };
  TcpMesh* mesh;
  const MessageStamp& stamp;
  const ReduceFn& reduce;
  std::vector<Peer> peers;
  size_t remaining = 0;
  Status error;

  void Fail(Status st) {
    if (error.ok()) error = std::move(st);
    for (auto& s : mesh->sockets_) {
      boost::system::error_code ignored;
      if (s) s->close(ignored);
    }
  }

  Status SocketError(int node, const boost::system::error_code& ec, const char* what) {
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe) {
      return Status::Remote("connection to " + mesh->DescribePeer(node) + " closed while " + what +
                            ": that daemon failed or aborted the communicator");
    }
    return Status::Remote(std::string(what) + " " + mesh->DescribePeer(node) + ": " + ec.message());
  }

  void SendNext(int node) {
    Peer& p = peers[node];
    if (!error.ok() || p.next_send == p.sends.size()) return;
    const NetOp* op = p.sends[p.next_send];
    p.out_header = MakeHeader(stamp, op->index, op->bytes);
    std::array<asio::const_buffer, 2> bufs{asio::buffer(&p.out_header, sizeof p.out_header),
                                           asio::buffer(op->data, op->bytes)};
    asio::async_write(*mesh->sockets_[node], bufs, [this, node](const boost::system::error_code& ec, size_t) {
      if (ec) return Fail(SocketError(node, ec, "sending to"));
      ++peers[node].next_send;
      --remaining;
      SendNext(node);
    });
  }

  void RecvNext(int node) {
    Peer& p = peers[node];
    if (!error.ok() || p.next_recv == p.recvs.size()) return;
    asio::async_read(*mesh->sockets_[node], asio::buffer(&p.in_header, sizeof p.in_header),
                     [this, node](const boost::system::error_code& ec, size_t) {
                       if (ec) return Fail(SocketError(node, ec, "receiving from"));
                       Peer& peer = peers[node];
                       const NetOp* op = peer.recvs[peer.next_recv];
                       Status st = CheckHeader(peer.in_header, stamp, op->index, op->bytes, mesh->DescribePeer(node));
                       if (!st.ok()) return Fail(st);
                       if (op->kind == NetOp::kRecv) {
                         RecvBody(node, op);
                       } else {
                         RecvReduceChunk(node, op, 0);
                       }
                     });
  }

  void RecvDone(int node) {
    ++peers[node].next_recv;
    --remaining;
    RecvNext(node);
  }

  void RecvBody(int node, const NetOp* op) {
    asio::async_read(*mesh->sockets_[node], asio::buffer(op->data, op->bytes),
                     [this, node](const boost::system::error_code& ec, size_t) {
                       if (ec) return Fail(SocketError(node, ec, "receiving from"));
                       RecvDone(node);
                     });
  }

  void RecvReduceChunk(int node, const NetOp* op, uint64_t offset) {
    if (offset == op->bytes) return RecvDone(node);
    auto& staging = mesh->staging_[node];
    if (staging.empty()) staging.resize(kStagingBytes);
    const uint64_t n = std::min<uint64_t>(kStagingBytes, op->bytes - offset);
    asio::async_read(*mesh->sockets_[node], asio::buffer(staging.data(), n),
                     [this, node, op, offset, n](const boost::system::error_code& ec, size_t) {
                       if (ec) return Fail(SocketError(node, ec, "receiving from"));
                       reduce(op->data + offset, mesh->staging_[node].data(), n);
                       RecvReduceChunk(node, op, offset + n);
                     });
  }
};

TcpMesh::TcpMesh(std::vector<std::string> peer_names, std::vector<UniqueFd> sockets, std::chrono::microseconds spin)
    : peer_names_(std::move(peer_names)), spin_(spin) {
  sockets_.resize(sockets.size());
  staging_.resize(sockets.size());
  for (size_t n = 0; n < sockets.size(); ++n) {
    if (!sockets[n].valid()) continue;
    const int fd = sockets[n].release();
    sockets_[n] = std::make_unique<tcp::socket>(io_, ProtocolOf(fd), fd);
  }
}

TcpMesh::~TcpMesh() { Close(); }

void TcpMesh::Close() {
  for (auto& s : sockets_) {
    boost::system::error_code ignored;
    if (s) {
      s->shutdown(tcp::socket::shutdown_both, ignored);
      s->close(ignored);
    }
  }
  closed_ = true;
}

void TcpMesh::Interrupt() {
  boost::asio::post(io_, [this] {
    for (auto& s : sockets_) {
      boost::system::error_code ignored;
      if (s) s->close(ignored);
    }
  });
}

std::string TcpMesh::DescribePeer(int node) const {
  if (node < 0 || static_cast<size_t>(node) >= peer_names_.size()) return "node " + std::to_string(node);
  return "node " + std::to_string(node) + " (" + peer_names_[node] + ")";
}

Status TcpMesh::Exchange(std::span<const NetOp> ops, const MessageStamp& stamp, const ReduceFn& reduce,
                         std::chrono::steady_clock::time_point deadline) {
  if (closed_) return Status::Aborted("the communicator's connections are closed");
  Run run{this, stamp, reduce, std::vector<Run::Peer>(sockets_.size()), ops.size(), Status::Ok()};
  for (const NetOp& op : ops) {
    if (op.peer < 0 || static_cast<size_t>(op.peer) >= sockets_.size() || !sockets_[op.peer]) {
      return Status::Internal("network step to node " + std::to_string(op.peer) + " which has no connection");
    }
    (op.kind == NetOp::kSend ? run.peers[op.peer].sends : run.peers[op.peer].recvs).push_back(&op);
  }
  for (size_t n = 0; n < run.peers.size(); ++n) {
    run.SendNext(static_cast<int>(n));
    run.RecvNext(static_cast<int>(n));
  }
  io_.restart();
  // Why poll: a small message from a peer arrives microseconds after it was
  // sent, but a thread blocked in epoll takes tens of microseconds to wake
  // on a busy machine. Polling (non-blocking, yielding the core) for a
  // moment after each bit of progress catches it at once; then block.
  // Large phases do not poll: their few wake-ups are noise beside the
  // transfer, and a poller would take CPU from the threads doing the copies
  // on a machine with fewer cores than busy threads.
  uint64_t phase_bytes = 0;
  for (const NetOp& op : ops) phase_bytes += op.bytes;
  const auto spin = phase_bytes <= kPollMaxBytes ? spin_ : std::chrono::microseconds(0);
  auto spin_until = std::chrono::steady_clock::now() + spin;
  while (run.remaining > 0 && run.error.ok()) {
    if (std::chrono::steady_clock::now() < spin_until) {
      if (io_.poll() > 0) {
        spin_until = std::chrono::steady_clock::now() + spin;
      } else {
        std::this_thread::yield();
      }
      io_.restart();  // poll() stops the context when it runs out of work
      continue;
    }
    if (io_.run_one_until(deadline) > 0) {
      spin_until = std::chrono::steady_clock::now() + spin;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      std::string waiting;
      for (size_t n = 0; n < run.peers.size(); ++n) {
        const auto& p = run.peers[n];
        if (p.next_recv < p.recvs.size() || p.next_send < p.sends.size()) {
          waiting += (waiting.empty() ? "" : ", ") + DescribePeer(static_cast<int>(n));
        }
      }
      run.Fail(Status::Timeout("no progress from " + waiting));
    }
  }
  if (!run.error.ok()) {
    // Sockets are closed: drain the aborted handlers before `run` goes away.
    io_.restart();
    io_.run();
    closed_ = true;
  }
  return run.error;
}

}  // namespace baton::tcp
