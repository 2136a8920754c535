#include "transports/tcp/tcp_mesh.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <thread>

#include "common/logging.h"
#include "transports/tcp/connection_broker.h"
#include "transports/tcp/transfer.h"
#include "transports/tcp/wire.h"

namespace baton::tcp {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr size_t kStagingBytes = 1 << 20;  // multiple of every element size
// Small messages queued back to back on one lane (a collective's signature
// signal and its first data message, the blocks of a small AllToAll) travel
// together: up to kMaxBatch of them, of at most kBatchBytes with their
// headers, in one send and one receive system call.
constexpr size_t kMaxBatch = 8;
constexpr size_t kBatchBytes = TcpMesh::kSmallMessageMaxBytes + kMaxBatch * sizeof(DataHeader);

// The batch that starts at small message list[first]: messages [first, end)
// of `list`, `bytes` long with their headers. One rule for sender and
// receiver (they need not agree: the stream carries no batch boundaries).
struct SmallBatch {
  size_t end = 0;
  size_t bytes = 0;
};
SmallBatch SmallBatchFrom(const std::vector<const NetOp*>& list, size_t first) {
  SmallBatch b{first, 0};
  while (b.end < list.size() && b.end - first < kMaxBatch) {
    const uint64_t bytes = list[b.end]->bytes;
    if (bytes > TcpMesh::kSmallMessageMaxBytes || b.bytes + sizeof(DataHeader) + bytes > kBatchBytes) break;
    b.bytes += sizeof(DataHeader) + bytes;
    ++b.end;
  }
  return b;
}

}  // namespace

// One lane's share of an Exchange: its sends and receives, which go in
// order, and how far each has got.
struct TcpMesh::LaneWork {
  std::vector<const NetOp*> sends;
  std::vector<const NetOp*> recvs;
  size_t next_send = 0;
  size_t next_recv = 0;
  // The messages being sent: their headers and (header, body) buffers.
  std::array<DataHeader, kMaxBatch> out_headers{};
  std::array<asio::const_buffer, 2 * kMaxBatch> out_buffers{};
  DataHeader in_header{};
  // A batch of small messages being received into the lane's small_in
  // buffer: recvs [next_recv, batch_end), batch_bytes with their headers;
  // batch_have bytes arrived, of which batch_done are delivered.
  size_t batch_end = 0;
  size_t batch_bytes = 0;
  size_t batch_have = 0;
  size_t batch_done = 0;
  // While the lane is in the run's `polled` list: the bytes the batch needs
  // before it can deliver its next message.
  size_t poll_at_least = 0;

  void Reset() {
    sends.clear();
    recvs.clear();
    next_send = next_recv = 0;
    batch_end = batch_bytes = batch_have = batch_done = poll_at_least = 0;
  }
};

// State of one Exchange call. Every handler holds a pointer to it, so
// Exchange does not return before all handlers have run. Work is kept per
// lane (node * lanes + lane).
struct TcpMesh::Run {
  TcpMesh* mesh;
  const MessageStamp& stamp;
  const ReduceFn& reduce;
  std::vector<LaneWork>& work;  // mesh->work_, indexed like mesh->lanes_
  std::vector<NetOp>& parts;    // mesh->parts_: the stripes of striped messages (never reallocated once filled)
  std::vector<size_t>& polled;  // mesh->polled_: lanes whose small receive Exchange retries itself
  size_t remaining = 0;
  Status error;
  // True while Exchange polls: a small receive that finds nothing joins
  // `polled` instead of waiting in Asio.
  bool polling = false;

  int NodeOf(size_t lane) const { return static_cast<int>(lane / mesh->lanes_per_peer_); }
  tcp::socket& Socket(size_t lane) { return *mesh->lanes_[lane].socket; }

  void Fail(Status st) {
    if (error.ok()) error = std::move(st);
    for (auto& l : mesh->lanes_) {
      boost::system::error_code ignored;
      if (l.socket) l.socket->close(ignored);
    }
  }

  Status SocketError(size_t lane, const boost::system::error_code& ec, const char* what) {
    const int node = NodeOf(lane);
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe) {
      return Status::Remote("connection to " + mesh->DescribePeer(node) + " closed while " + what +
                            ": that daemon failed or aborted the communicator");
    }
    return Status::Remote(std::string(what) + " " + mesh->DescribePeer(node) + ": " + ec.message());
  }

  // Why the header just read on `lane` is not the one `op` expects.
  Status HeaderError(size_t lane, const NetOp* op) const {
    Status st = CheckHeader(work[lane].in_header, stamp, op->index, op->bytes, mesh->DescribePeer(NodeOf(lane)));
    return st.ok() ? Status::Internal("unexpected message header from " + mesh->DescribePeer(NodeOf(lane))) : st;
  }

  // A lane's sends, and its receives, are each one chain of operations:
  // their handlers take the lane's memory for the chain, not the heap.
  template <typename Handler>
  WithMemory<Handler> OnSend(size_t lane, Handler h) {
    return WithMemory<Handler>(mesh->lanes_[lane].send_memory.get(), std::move(h));
  }
  template <typename Handler>
  WithMemory<Handler> OnRecv(size_t lane, Handler h) {
    return WithMemory<Handler>(mesh->lanes_[lane].recv_memory.get(), std::move(h));
  }

  void SendNext(size_t lane) {
    for (;;) {
      LaneWork& w = work[lane];
      if (!error.ok() || w.next_send == w.sends.size()) return;
      // A large message goes alone; small ones go out with the small ones
      // queued after them.
      const bool small = w.sends[w.next_send]->bytes <= kSmallMessageMaxBytes;
      const size_t n = small ? SmallBatchFrom(w.sends, w.next_send).end - w.next_send : 1;
      for (size_t k = 0; k < n; ++k) {
        const NetOp* op = w.sends[w.next_send + k];
        w.out_headers[k] = MakeHeader(stamp, op->index, op->bytes);
        w.out_buffers[2 * k] = asio::buffer(&w.out_headers[k], sizeof(DataHeader));
        w.out_buffers[2 * k + 1] = asio::buffer(op->data, op->bytes);
      }
      size_t first = 0;  // out_buffers[first, 2n) are still to go
      if (small) {
        // A batch of small messages goes out with one non-blocking system
        // call right here rather than as an Asio operation (an operation
        // object, the scheduler's lock, a handler run on the next poll: a
        // good part of a tiny collective's time). Whatever the socket does
        // not take now goes through Asio.
        first = SendNow(lane, 2 * n);
        if (!error.ok()) return;
        if (first == 2 * n) {
          w.next_send += n;
          remaining -= n;
          continue;
        }
      }
      asio::async_write(Socket(lane), std::span<const asio::const_buffer>(w.out_buffers.data() + first, 2 * n - first),
                        TransferAll(), OnSend(lane, [this, lane, n](const boost::system::error_code& ec, size_t) {
                          if (ec) return Fail(SocketError(lane, ec, "sending to"));
                          work[lane].next_send += n;
                          remaining -= n;
                          SendNext(lane);
                        }));
      return;
    }
  }

  // Runs a non-blocking socket call on `lane` (again if a signal
  // interrupted it) and returns the bytes it moved, 0 if the socket would
  // block. An error, or the end of the stream on a receive, fails the run
  // (and returns 0): callers check `error`.
  template <typename Call>
  size_t NonBlocking(size_t lane, const char* what, bool receiving, Call call) {
    ssize_t n;
    do {
      n = call(Socket(lane).native_handle());
    } while (n < 0 && errno == EINTR);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0 && receiving) {
      Fail(SocketError(lane, asio::error::eof, what));
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      Fail(SocketError(lane, boost::system::error_code(errno, boost::system::system_category()), what));
    }
    return 0;
  }

  // Writes what the socket takes now of out_buffers[0, count), without
  // blocking; returns how many buffers went whole, after advancing the
  // first one that went in part past what went. Fails the run on an error.
  size_t SendNow(size_t lane, size_t count) {
    LaneWork& w = work[lane];
    std::array<iovec, 2 * kMaxBatch> iov;
    for (size_t i = 0; i < count; ++i) {
      iov[i] = {const_cast<void*>(w.out_buffers[i].data()), w.out_buffers[i].size()};
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = count;
    size_t left = NonBlocking(lane, "sending to", /*receiving=*/false,
                              [&](int fd) { return ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL); });
    size_t i = 0;
    while (i < count && left >= w.out_buffers[i].size()) left -= w.out_buffers[i++].size();
    if (i < count) w.out_buffers[i] += left;
    return i;
  }

  void RecvNext(size_t lane) {
    LaneWork& w = work[lane];
    if (!error.ok() || w.next_recv == w.recvs.size()) return;
    if (w.recvs[w.next_recv]->bytes <= kSmallMessageMaxBytes) return RecvSmall(lane);
    asio::async_read(Socket(lane), asio::buffer(&w.in_header, sizeof w.in_header), TransferAll(),
                     OnRecv(lane, [this, lane](const boost::system::error_code& ec, size_t) {
                       if (ec) return Fail(SocketError(lane, ec, "receiving from"));
                       LaneWork& lw = work[lane];
                       const NetOp* op = lw.recvs[lw.next_recv];
                       if (!HeaderMatches(lw.in_header, stamp, op->index, op->bytes)) {
                         return Fail(HeaderError(lane, op));
                       }
                       if (op->kind == NetOp::kRecv) {
                         RecvBody(lane, op);
                       } else {
                         RecvReduceChunk(lane, op, 0);
                       }
                     }));
  }

  void RecvDone(size_t lane) {
    ++work[lane].next_recv;
    --remaining;
    RecvNext(lane);
  }

  // Receives the small messages queued next on `lane` (up to kMaxBatch,
  // kBatchBytes with headers) into one buffer, in as few reads as they
  // arrive in. A read never goes past the batch, and each returns as soon
  // as it has the next header or body it waits for, so a mismatched header
  // is reported at once, not after waiting for bytes that may never come.
  void RecvSmall(size_t lane) {
    LaneWork& w = work[lane];
    const SmallBatch batch = SmallBatchFrom(w.recvs, w.next_recv);
    w.batch_end = batch.end;
    w.batch_bytes = batch.bytes;
    // Grown to the largest batch seen: a lane that carries only tiny
    // collectives keeps a buffer of a few hundred bytes, not kBatchBytes.
    auto& buf = mesh->lanes_[lane].small_in;
    if (buf.size() < w.batch_bytes) buf.resize(w.batch_bytes);
    w.batch_have = 0;
    w.batch_done = 0;
    ReadSmall(lane, sizeof(DataHeader));
  }

  void ReadSmall(size_t lane, size_t at_least) {
    LaneWork& w = work[lane];
    uint8_t* buf = mesh->lanes_[lane].small_in.data();
    // What has arrived already is taken with one non-blocking system call,
    // as SendNow does; only the rest is waited for through Asio.
    const size_t got = NonBlocking(lane, "receiving from", /*receiving=*/true, [&](int fd) {
      return ::recv(fd, buf + w.batch_have, w.batch_bytes - w.batch_have, MSG_DONTWAIT);
    });
    if (!error.ok()) return;
    if (got > 0) {
      w.batch_have += got;
      if (got >= at_least) return DeliverSmall(lane);
      at_least -= got;
    }
    if (polling) {
      w.poll_at_least = at_least;
      polled.push_back(lane);
      return;
    }
    WaitSmall(lane, at_least);
  }

  // Retries the small receives that found nothing, once each; returns how
  // many took bytes. A lane that still lacks some joins `polled` again.
  size_t PollSmall() {
    size_t progressed = 0;
    const size_t n = polled.size();
    for (size_t i = 0; i < n && error.ok(); ++i) {
      const size_t lane = polled[i];
      const size_t before = work[lane].batch_have;
      ReadSmall(lane, work[lane].poll_at_least);
      if (work[lane].batch_have != before) ++progressed;
    }
    // Lanes that joined while this ran are past n; those before it are done.
    polled.erase(polled.begin(), polled.begin() + static_cast<std::ptrdiff_t>(std::min(n, polled.size())));
    return progressed;
  }

  // Polling stops: the small receives still waiting wait in Asio.
  void StopPolling() {
    polling = false;
    for (size_t lane : polled) WaitSmall(lane, work[lane].poll_at_least);
    polled.clear();
  }

  void WaitSmall(size_t lane, size_t at_least) {
    LaneWork& w = work[lane];
    uint8_t* buf = mesh->lanes_[lane].small_in.data();
    asio::async_read(Socket(lane), asio::buffer(buf + w.batch_have, w.batch_bytes - w.batch_have),
                     TransferAtLeast(at_least),
                     OnRecv(lane, [this, lane](const boost::system::error_code& ec, size_t got) {
                       if (ec) return Fail(SocketError(lane, ec, "receiving from"));
                       work[lane].batch_have += got;
                       DeliverSmall(lane);
                     }));
  }

  // Delivers the messages of the batch that have arrived whole, then reads
  // for the next one or goes on past the batch.
  void DeliverSmall(size_t lane) {
    LaneWork& w = work[lane];
    const uint8_t* buf = mesh->lanes_[lane].small_in.data();
    while (w.next_recv < w.batch_end) {
      const NetOp* op = w.recvs[w.next_recv];
      const size_t avail = w.batch_have - w.batch_done;
      if (avail < sizeof(DataHeader)) return ReadSmall(lane, sizeof(DataHeader) - avail);
      std::memcpy(&w.in_header, buf + w.batch_done, sizeof w.in_header);
      if (!HeaderMatches(w.in_header, stamp, op->index, op->bytes)) return Fail(HeaderError(lane, op));
      if (avail < sizeof(DataHeader) + op->bytes) return ReadSmall(lane, sizeof(DataHeader) + op->bytes - avail);
      const uint8_t* body = buf + w.batch_done + sizeof(DataHeader);
      if (op->bytes > 0) {
        if (op->kind == NetOp::kRecv) {
          std::memcpy(op->data, body, op->bytes);
        } else {
          Fold(op, 0, body, op->bytes);
        }
      }
      w.batch_done += sizeof(DataHeader) + op->bytes;
      ++w.next_recv;
      --remaining;
    }
    RecvNext(lane);
  }

  // Reduces `n` received bytes into op's destination at `offset`: in place,
  // or from an operand in the same pass (no copy of the operand first).
  void Fold(const NetOp* op, uint64_t offset, const uint8_t* received, uint64_t n) {
    const uint8_t* a = op->operand != nullptr ? op->operand + offset : op->data + offset;
    reduce(op->data + offset, a, received, n);
  }

  void RecvBody(size_t lane, const NetOp* op) {
    asio::async_read(Socket(lane), asio::buffer(op->data, op->bytes), TransferAll(),
                     OnRecv(lane, [this, lane](const boost::system::error_code& ec, size_t) {
                       if (ec) return Fail(SocketError(lane, ec, "receiving from"));
                       RecvDone(lane);
                     }));
  }

  void RecvReduceChunk(size_t lane, const NetOp* op, uint64_t offset) {
    if (offset == op->bytes) return RecvDone(lane);
    auto& staging = mesh->lanes_[lane].staging;
    if (staging.empty()) staging.resize(kStagingBytes);
    const uint64_t n = std::min<uint64_t>(kStagingBytes, op->bytes - offset);
    asio::async_read(Socket(lane), asio::buffer(staging.data(), n), TransferAll(),
                     OnRecv(lane, [this, lane, op, offset, n](const boost::system::error_code& ec, size_t) {
                       if (ec) return Fail(SocketError(lane, ec, "receiving from"));
                       Fold(op, offset, mesh->lanes_[lane].staging.data(), n);
                       RecvReduceChunk(lane, op, offset + n);
                     }));
  }
};

TcpMesh::TcpMesh(std::vector<std::string> peer_names, std::vector<std::vector<UniqueFd>> sockets,
                 std::chrono::microseconds spin)
    : peer_names_(std::move(peer_names)), spin_(spin) {
  num_nodes_ = static_cast<int>(sockets.size());
  for (const auto& peer : sockets) {
    if (!peer.empty()) lanes_per_peer_ = static_cast<int>(peer.size());
  }
  lanes_.resize(static_cast<size_t>(num_nodes_) * lanes_per_peer_);
  work_.resize(lanes_.size());
  // While PollSmall runs, a lane can be in the list twice (its old entry,
  // and the one it adds on finding the rest not there yet), never more.
  polled_.reserve(2 * lanes_.size());
  for (int n = 0; n < num_nodes_; ++n) {
    for (size_t l = 0; l < sockets[n].size() && l < static_cast<size_t>(lanes_per_peer_); ++l) {
      if (!sockets[n][l].valid()) continue;
      const int fd = sockets[n][l].release();
      LaneOf(n, static_cast<int>(l))->socket = std::make_unique<tcp::socket>(io_, ProtocolOf(fd), fd);
    }
  }
}

TcpMesh::~TcpMesh() { Close(); }

void TcpMesh::Close() {
  for (auto& l : lanes_) {
    boost::system::error_code ignored;
    if (l.socket) {
      l.socket->shutdown(tcp::socket::shutdown_both, ignored);
      l.socket->close(ignored);
    }
  }
  closed_ = true;
}

void TcpMesh::Interrupt() {
  boost::asio::post(io_, [this] {
    for (auto& l : lanes_) {
      boost::system::error_code ignored;
      if (l.socket) l.socket->close(ignored);
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
  // The per-lane lists are kept from call to call (cleared, not freed): a
  // small collective should not cost allocations here.
  for (LaneWork& w : work_) w.Reset();
  parts_.clear();
  polled_.clear();
  Run run{this, stamp, reduce, work_, parts_, polled_, 0, Status::Ok(), /*polling=*/spin_.count() > 0};
  // Striped messages become one part per lane; reserve so that the
  // pointers to parts stay valid.
  size_t num_parts = 0;
  for (const NetOp& op : ops) {
    if (lanes_per_peer_ > 1 && op.bytes >= kStripeMinBytes) num_parts += lanes_per_peer_;
  }
  run.parts.reserve(num_parts);
  auto queue = [&](const NetOp* op, int lane) {
    LaneWork& w = run.work[static_cast<size_t>(op->peer) * lanes_per_peer_ + lane];
    (op->kind == NetOp::kSend ? w.sends : w.recvs).push_back(op);
    ++run.remaining;
  };
  for (const NetOp& op : ops) {
    if (op.peer < 0 || op.peer >= num_nodes_ || !LaneOf(op.peer, 0)->socket) {
      return Status::Internal("network step to node " + std::to_string(op.peer) + " which has no connection");
    }
    if (lanes_per_peer_ == 1 || op.bytes < kStripeMinBytes) {
      queue(&op, 0);
      continue;
    }
    const uint64_t per_lane = ((op.bytes + lanes_per_peer_ - 1) / lanes_per_peer_ + 4095) & ~uint64_t{4095};
    for (int lane = 0; lane < lanes_per_peer_; ++lane) {
      const uint64_t offset = per_lane * lane;
      if (offset >= op.bytes) break;
      run.parts.push_back({op.kind, op.peer, op.data + offset, std::min(per_lane, op.bytes - offset), op.index,
                           op.operand != nullptr ? op.operand + offset : nullptr});
      queue(&run.parts.back(), lane);
    }
  }
  for (size_t lane = 0; lane < run.work.size(); ++lane) {
    run.SendNext(lane);
    run.RecvNext(lane);
  }
  io_.restart();
  // Why poll: a small message from a peer arrives microseconds after it was
  // sent, but a thread blocked in epoll takes tens of microseconds to wake
  // on a busy machine. Polling (non-blocking, yielding the core) for a
  // moment after each bit of progress catches it at once; then block.
  // Large phases poll too: a chunk of a large message also arrives soon
  // after the last, and on a core that went idle meanwhile the wake-up
  // costs more than the poll (2x1 AllReduce of 1 MiB 15% faster,
  // docs/benchmarks.md). A poll yields the core to any thread that wants
  // it, and stops after `spin_` without progress (a slow peer).
  const auto spin = spin_;
  auto spin_until = std::chrono::steady_clock::now() + spin;
  while (run.remaining > 0 && run.error.ok()) {
    if (std::chrono::steady_clock::now() < spin_until) {
      // Asio has no work (so no epoll_wait to make) when every receive
      // left is a small one polled here.
      if (io_.poll() + run.PollSmall() > 0) {
        spin_until = std::chrono::steady_clock::now() + spin;
      } else {
        std::this_thread::yield();
      }
      io_.restart();  // poll() stops the context when it runs out of work
      continue;
    }
    run.StopPolling();
    if (io_.run_one_until(deadline) > 0) {
      spin_until = std::chrono::steady_clock::now() + spin;
      run.polling = spin.count() > 0;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      std::string waiting;
      int last = -1;
      for (size_t lane = 0; lane < run.work.size(); ++lane) {
        const auto& w = run.work[lane];
        const int node = run.NodeOf(lane);
        if (node != last && (w.next_recv < w.recvs.size() || w.next_send < w.sends.size())) {
          waiting += (waiting.empty() ? "" : ", ") + DescribePeer(node);
          last = node;
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
