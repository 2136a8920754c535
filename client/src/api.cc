// The C API of libbaton (client/include/baton/baton.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.h"
#include "client/src/daemon_connection.h"
#include "client/src/fast_path.h"
#include "common/futex.h"
#include "common/types.h"
#include "common/logging.h"
#include "gpu/bounce_copy.h"
#include "gpu/device_copy.h"
#include "gpu/device_memory.h"
#include "gpu/stream_flags.h"

using baton::Code;
using baton::Collective;
using baton::Status;
using baton::client::DaemonConnection;
namespace ipc = baton::ipc;

static_assert(static_cast<int>(Code::kUnavailable) == baton_unavailable);
static_assert(static_cast<int>(Code::kPermissionDenied) == baton_permission_denied);
static_assert(static_cast<int>(Code::kInProgress) == baton_in_progress);
static_assert(static_cast<int>(baton::DataType::kFloat64) == baton_float64);
static_assert(static_cast<int>(baton::RedOp::kAvg) == baton_avg);

struct baton_comm {
  DaemonConnection* conn = nullptr;
  uint64_t handle = 0;
  int rank = 0;
  int nranks = 0;
  std::mutex mu;          // orders sequence numbers with ring order
  uint64_t next_seq = 1;  // next collective sequence number
  std::atomic<int> async_error{baton_success};
  // Stream-ordered operations whose completion slot the stream may still
  // touch (oldest first), and the first error one of them reported (mu).
  std::deque<baton_request*> stream_ops;
  std::string async_message;
  // Small blocking collectives when all ranks are on this node (null: none).
  std::unique_ptr<baton::client::FastPath> fast;
  std::mutex fast_mu;     // one fast-path operation at a time
  std::chrono::steady_clock::time_point daemon_checked;  // last look at batond's liveness (fast_mu)
  std::string describe;   // "communicator 'world' of job 'j1'", for errors
};

struct baton_request {
  baton_comm* comm = nullptr;
  uint32_t slot = 0;
  std::chrono::microseconds spin{0};  // how long a wait polls before it sleeps
  struct CopyOut {
    void* user;
    const void* staged;
    uint64_t bytes;
    int device = -1;  // >= 0: `staged` is a bounce buffer on this GPU, `user` device memory
  };
  std::vector<CopyOut> copy_out;
  std::vector<void*> staged;   // host staging buffers
  std::vector<void*> bounces;  // device bounce buffers (DaemonConnection::AcquireBounce)
  // Stream-ordered calls: copies into bounce buffers, queued on the stream
  // before it says the input is ready.
  struct CopyIn {
    void* bounce;
    const void* user;
    uint64_t bytes;
  };
  std::vector<CopyIn> copy_in_on_stream;
};

namespace {

// batond's --socket default (daemon/options.h).
constexpr const char* kDefaultSocket = "/run/baton/batond.sock";

thread_local std::string t_last_error;
thread_local int t_group_depth = 0;
thread_local std::vector<baton_request*> t_group_blocking;  // blocking calls deferred to group end
thread_local std::vector<DaemonConnection*> t_group_doorbells;

baton_result_t Fail(const Status& st) {
  t_last_error = st.message();
  return static_cast<baton_result_t>(st.code());
}

baton_result_t Fail(Code code, std::string message) { return Fail(Status(code, std::move(message))); }

std::string EnvOr(const char* configured, const char* env, const char* fallback) {
  if (configured != nullptr && *configured != '\0') return configured;
  if (const char* v = std::getenv(env); v != nullptr && *v != '\0') return v;
  return fallback;
}

bool CopyField(char* dst, size_t cap, const std::string& value) {
  if (value.size() >= cap) return false;
  std::memcpy(dst, value.c_str(), value.size() + 1);
  return true;
}

// Requests are recycled per thread: a small blocking collective should not
// cost a malloc and a free in the client either.
constexpr size_t kSpareRequests = 16;
thread_local std::vector<std::unique_ptr<baton_request>> t_spare_requests;

baton_request* NewRequest(baton_comm* comm) {
  if (t_spare_requests.empty()) {
    auto* req = new baton_request;
    req->comm = comm;
    return req;
  }
  baton_request* req = t_spare_requests.back().release();
  t_spare_requests.pop_back();
  req->comm = comm;
  return req;
}

void FreeRequest(baton_request* req) {
  if (t_spare_requests.size() >= kSpareRequests) {
    delete req;
    return;
  }
  req->copy_out.clear();  // keep the capacity
  req->staged.clear();
  req->bounces.clear();
  req->copy_in_on_stream.clear();
  req->slot = 0;
  req->spin = {};
  t_spare_requests.emplace_back(req);
}

void ReleaseRequest(baton_request* req) {
  for (void* p : req->staged) req->comm->conn->ReleaseStaging(p);
  for (void* p : req->bounces) req->comm->conn->ReleaseBounce(p);
  req->comm->conn->ReleaseCompletion(req->slot);
  FreeRequest(req);
}

// How long a wait for an operation of `bytes` (per rank) polls before it
// sleeps on the futex. Small operations finish in microseconds, but on a
// node with fewer cores than busy threads one now and then takes 30-60 us,
// and a client that slept by then pays a wake-up of as much again: 200 us
// covers those. Larger operations across nodes take hundreds of
// microseconds, and a client polling all that time takes CPU from the
// daemon threads that move its data, so it sleeps almost at once. On a
// communicator within one node (`one_node`), operations up to 4 MiB per
// rank are copies that end in well under a millisecond, and the wake-up
// cost more than the polling: 1.1-2.1x at 512 KiB-1 MiB (docs/benchmarks.md).
std::chrono::microseconds WaitSpinFor(uint64_t bytes, bool one_node) {
  constexpr uint64_t kShortOpBytes = 256 << 10;         // under 100 us across nodes here
  constexpr uint64_t kShortOneNodeOpBytes = 4 << 20;
  return std::chrono::microseconds(bytes <= (one_node ? kShortOneNodeOpBytes : kShortOpBytes) ? 200 : 10);
}

// Completes `req` if it is done within timeout_ms; releases it when done.
baton_result_t WaitRequest(baton_request* req, int timeout_ms) {
  if (req == nullptr) return Fail(Code::kInvalidArgument, "baton_wait: NULL request");
  ipc::Completion& c = req->comm->conn->completion(req->slot);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = timeout_ms < 0 ? Clock::time_point::max() : start + std::chrono::milliseconds(timeout_ms);
  const auto spin = req->spin;
  while (c.state.load(std::memory_order_acquire) != ipc::kDone) {
    const auto now = Clock::now();
    if (now >= deadline) {
      return Fail(Code::kInProgress, "operation still in progress after " + std::to_string(timeout_ms) + " ms");
    }
    if (now - start < spin) {
      std::this_thread::yield();  // the daemon (or another rank) may need this core
      continue;
    }
    // Sleep in slices so that a daemon that died is noticed: its
    // completions would never come.
    constexpr int64_t kSliceNs = 200'000'000;
    const int64_t left_ns =
        deadline == Clock::time_point::max()
            ? kSliceNs
            : std::min<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count(),
                                kSliceNs);
    // The daemon wakes us only if it sees client_sleeping (ipc_protocol.h).
    c.client_sleeping.store(1, std::memory_order_seq_cst);
    const bool woken = c.state.load(std::memory_order_seq_cst) == ipc::kDone ||
                       baton::FutexWait(&c.state, ipc::kPending, left_ns);
    c.client_sleeping.store(0, std::memory_order_relaxed);
    if (!woken && c.state.load() != ipc::kDone && !req->comm->conn->DaemonAlive()) {
      int expected = baton_success;
      req->comm->async_error.compare_exchange_strong(expected, baton_unavailable);
      const std::string socket = req->comm->conn->socket_path();
      ReleaseRequest(req);  // the daemon that could complete it is gone
      return Fail(Code::kUnavailable, "batond at " + socket +
                                          " closed the connection while this operation was in flight (the daemon "
                                          "exited or crashed); restart it and recreate the communicator");
    }
  }
  const auto code = static_cast<baton_result_t>(c.code);
  std::string message = c.message;
  if (code == baton_success) {
    for (const auto& co : req->copy_out) {
      if (co.device < 0) {
        std::memcpy(co.user, co.staged, co.bytes);
        continue;
      }
      Status copied = baton::gpu::CopyOnDeviceAndWait(co.device, co.user, co.staged, co.bytes);
      if (!copied.ok()) {
        ReleaseRequest(req);
        return Fail(copied.WithContext("the operation completed, but its result could not be copied back: "));
      }
    }
  } else if (code != baton_invalid_argument && code != baton_resource_exhausted) {
    // Errors that failed the communicator (not just this call) stick.
    int expected = baton_success;
    req->comm->async_error.compare_exchange_strong(expected, code);
  }
  ReleaseRequest(req);
  if (code != baton_success) return Fail(static_cast<Code>(code), message);
  return baton_success;
}

// Stream-ordered calls: when `on_stream`, the operation is ordered on
// `stream` (a cudaStream_t; nullptr is the legacy default stream).
struct StreamOrder {
  bool on_stream = false;
  void* stream = nullptr;
};

// Frees the slots of stream-ordered operations that the stream went past
// (oldest first), noting the first error as the communicator's async error.
// With `wait`, waits for all of them. If the daemon died, releases the
// stream from the host instead: its waits would never end.
void ReapStreamOps(baton_comm* comm, bool wait) {
  std::lock_guard<std::mutex> lock(comm->mu);
  while (!comm->stream_ops.empty()) {
    baton_request* req = comm->stream_ops.front();
    ipc::Completion& c = comm->conn->completion(req->slot);
    const bool finished = c.state.load(std::memory_order_acquire) == ipc::kDone;
    const bool released = c.stream_released.load(std::memory_order_acquire) != 0;
    if (!finished || !released) {
      if (!comm->conn->DaemonAlive()) {
        int expected = baton_success;
        if (comm->async_error.compare_exchange_strong(expected, baton_unavailable)) {
          comm->async_message = "batond at " + comm->conn->socket_path() +
                                " closed the connection with stream-ordered operations in flight; their results "
                                "are undefined. Restart it and recreate the communicator";
        }
        for (baton_request* r : comm->stream_ops) {
          comm->conn->completion(r->slot).stream_done.store(1, std::memory_order_release);
          comm->conn->Orphan(r->slot, std::move(r->bounces));  // the connection is dead: never reused
          FreeRequest(r);
        }
        comm->stream_ops.clear();
        return;
      }
      if (!wait) return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (c.code != baton_success) {
      int expected = baton_success;
      if (comm->async_error.compare_exchange_strong(expected, c.code)) comm->async_message = c.message;
    }
    comm->stream_ops.pop_front();
    ReleaseRequest(req);
  }
}

// Enqueues the stream's side of a stream-ordered operation: copy the input
// into its bounce buffers, say it got here, wait for batond, copy the
// output out of its bounce buffers, say it went past (and so that the
// request's bounce buffers are free again).
Status EnqueueStreamSide(baton_request* req, void* stream) {
  ipc::Completion& c = req->comm->conn->completion(req->slot);
  c.stream_ready.store(0, std::memory_order_relaxed);
  c.stream_done.store(0, std::memory_order_relaxed);
  c.stream_released.store(0, std::memory_order_release);
  for (const baton_request::CopyIn& in : req->copy_in_on_stream) {
    BATON_RETURN_IF_ERROR(baton::gpu::QueueCopyOnStream(stream, in.bounce, in.user, in.bytes));
  }
  BATON_RETURN_IF_ERROR(baton::gpu::StreamWriteFlag(stream, &c.stream_ready, 1));
  BATON_RETURN_IF_ERROR(baton::gpu::StreamWaitFlag(stream, &c.stream_done, 1));
  for (const baton_request::CopyOut& out : req->copy_out) {  // bounce buffers only: host staging is refused
    BATON_RETURN_IF_ERROR(baton::gpu::QueueCopyOnStream(stream, out.user, out.staged, out.bytes));
  }
  return baton::gpu::StreamWriteFlag(stream, &c.stream_released, 1);
}

// Maps the fast path region batond may have sent with a CommInit or split
// reply. Without one (ranks on several nodes), every operation goes
// through batond.
Status AttachFastPath(baton_comm* comm, std::vector<baton::UniqueFd>& fds) {
  if (fds.empty()) return Status::Ok();
  return baton::client::FastPath::Map(std::move(fds[0]), comm->nranks, comm->rank, &comm->fast)
      .WithContext("baton_comm_init: ");
}

// Runs a small blocking collective among the node's ranks (client/src/fast_path.h).
// GPU buffers are copied through host memory, so that ranks can mix host
// and device buffers here as they can through batond.
baton_result_t RunOnFastPath(baton_comm* comm, const baton::OpSignature& sig, const void* send, void* recv,
                             uint64_t send_bytes, uint64_t recv_bytes) {
  std::lock_guard<std::mutex> serial(comm->fast_mu);
  uint64_t daemon_ops = 0;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    daemon_ops = comm->next_seq - 1;
  }
  thread_local std::vector<uint8_t> device_in, device_out;
  baton::gpu::DevicePointer in_dev, out_dev;
  ipc::BufferRef ref;
  Status st;
  if (send_bytes > 0 && !comm->conn->Lookup(send, send_bytes, &ref)) st = baton::gpu::QueryPointer(send, &in_dev);
  if (st.ok() && recv_bytes > 0 && !comm->conn->Lookup(recv, recv_bytes, &ref)) {
    st = baton::gpu::QueryPointer(recv, &out_dev);
  }
  const void* in = send;
  void* out = recv;
  if (st.ok() && in_dev.on_device) {
    device_in.resize(send_bytes);
    st = baton::gpu::CopyToHost(device_in.data(), send, send_bytes, in_dev.device);
    in = device_in.data();
  }
  if (out_dev.on_device) {
    device_out.resize(recv_bytes);
    out = device_out.data();
  }
  // The fast path does not need batond, but a communicator whose daemon
  // died is dead (its large operations could not run): look at most once a
  // millisecond, and on every slice of a long wait.
  auto daemon_gone = [&] {
    return Status::Unavailable("batond at " + comm->conn->socket_path() +
                               " closed the connection while this operation was in flight (the daemon exited or "
                               "crashed); restart it and recreate the communicator");
  };
  const auto now = std::chrono::steady_clock::now();
  if (st.ok() && now - comm->daemon_checked > std::chrono::milliseconds(1)) {
    if (!comm->conn->DaemonAlive()) st = daemon_gone();
    comm->daemon_checked = now;
  }
  auto check = [&] { return comm->conn->DaemonAlive() ? Status::Ok() : daemon_gone(); };
  if (st.ok()) st = comm->fast->Run(sig, in, out, daemon_ops, comm->describe, check);
  if (st.ok() && out_dev.on_device) st = baton::gpu::CopyToDevice(recv, out, recv_bytes, out_dev.device);
  if (st.ok()) return baton_success;
  if (st.code() == Code::kMismatch || st.code() == Code::kTimeout) {
    // Found here, not by batond: have it fail the communicator for every
    // rank (and record it), as it does for its own mismatches and timeouts.
    auto report = std::make_unique<ipc::CommFailedRequest>();
    report->h.type = static_cast<uint32_t>(ipc::MsgType::kCommFailed);
    report->comm = comm->handle;
    report->code = static_cast<int32_t>(st.code());
    std::strncpy(report->message, st.message().c_str(), sizeof report->message - 1);
    ipc::Reply reply;
    (void)comm->conn->Call(report.get(), sizeof *report, &reply);  // the error below says it all either way
  }
  if (st.code() != Code::kInvalidArgument && st.code() != Code::kResourceExhausted) {
    int expected = baton_success;
    comm->async_error.compare_exchange_strong(expected, static_cast<int>(st.code()));
  }
  return Fail(st.WithContext(std::string(baton::CollectiveName(sig.collective)) + ": "));
}

// A copy Place made for the daemon: host staging (device -1) or a bounce
// buffer on `device`.
struct Staged {
  void* ptr = nullptr;
  int device = -1;
};

// Device memory the daemon cannot open goes through a bounce buffer of
// libbaton's own: copied in before the collective and out after it, on the
// caller's stream for stream-ordered calls (so the copies keep the stream's
// order), at once and waited for otherwise. Costs one device copy each way.
Status PlaceThroughBounce(baton_request* req, const baton::gpu::DevicePointer& dev, const void* user, uint64_t bytes,
                          bool copy_in, bool copy_out, bool on_stream, ipc::BufferRef* ref, Staged* staged_out) {
  static std::once_flag told;
  std::call_once(told, [&] {
    BATON_WARN("{}: libbaton copies such buffers through device memory of its own (one copy on the GPU each way); "
               "allocate with baton_mem_alloc_device, cudaMalloc or shareable cuMemCreate memory to avoid the copies",
               dev.unshareable);
  });
  DaemonConnection::Bounce bounce;
  BATON_RETURN_IF_ERROR(req->comm->conn->AcquireBounce(dev.device, bytes, &bounce).WithContext(dev.unshareable + "; "));
  req->bounces.push_back(bounce.ptr);  // released with the request, on every path
  if (copy_in) {
    if (on_stream) {
      req->copy_in_on_stream.push_back({bounce.ptr, user, bytes});
    } else {
      BATON_RETURN_IF_ERROR(baton::gpu::CopyOnDeviceAndWait(dev.device, bounce.ptr, user, bytes));
    }
  }
  if (copy_out) req->copy_out.push_back({const_cast<void*>(user), bounce.ptr, bytes, dev.device});
  *ref = bounce.ref;
  if (staged_out) *staged_out = {bounce.ptr, dev.device};
  return Status::Ok();
}

// Resolves a user buffer to a segment reference: shared memory, a GPU
// allocation (registered with the daemon on first use), a bounce buffer for
// GPU memory the daemon cannot open, or else a host staging copy (not for
// stream-ordered calls: the copy would happen now, before the stream
// produced the data).
Status Place(baton_request* req, const void* user, uint64_t bytes, bool copy_in, bool copy_out, bool on_stream,
             ipc::BufferRef* ref, Staged* staged_out) {
  DaemonConnection* conn = req->comm->conn;
  if (bytes == 0) return Status::Ok();
  if (conn->Lookup(user, bytes, ref)) return Status::Ok();
  baton::gpu::DevicePointer dev;
  BATON_RETURN_IF_ERROR(baton::gpu::QueryPointer(user, &dev));
  if (dev.on_device) {
    const auto p = reinterpret_cast<uintptr_t>(user);
    if (dev.sharing == baton::gpu::Sharing::kPosixFd && p + bytes > dev.base + dev.size) {
      BATON_RETURN_IF_ERROR(baton::gpu::ExtendToCover(&dev, p + bytes));  // mappings side by side
    }
    if (!dev.unshareable.empty()) {
      return PlaceThroughBounce(req, dev, user, bytes, copy_in, copy_out, on_stream, ref, staged_out);
    }
    if (p - dev.base > dev.size || bytes > dev.size - (p - dev.base)) {
      return Status::InvalidArgument("GPU buffer of " + std::to_string(bytes) + " bytes runs past the end of its " +
                                     std::to_string(dev.size) + "-byte allocation");
    }
    uint64_t segment = 0;
    BATON_RETURN_IF_ERROR(conn->RegisterDevice(dev, &segment));
    *ref = {segment, p - dev.base};
    return Status::Ok();
  }
  if (on_stream) {
    return Status::InvalidArgument("a stream-ordered call needs GPU buffers or host buffers from baton_mem_alloc; "
                                   "this host buffer would have to be copied before the stream produced it");
  }
  void* staged = nullptr;
  BATON_RETURN_IF_ERROR(conn->AcquireStaging(bytes, &staged));
  req->staged.push_back(staged);
  if (copy_in) std::memcpy(staged, user, bytes);
  if (copy_out) req->copy_out.push_back({const_cast<void*>(user), staged, bytes});
  conn->Lookup(staged, bytes, ref);
  if (staged_out) *staged_out = {staged, -1};
  return Status::Ok();
}

baton_result_t Submit(Collective coll, const void* send, void* recv, size_t count, baton_datatype_t dtype,
                      baton_redop_t op, int root, baton_comm_t comm, baton_request_t* out,
                      StreamOrder stream = {}) {
  const char* name = baton::CollectiveName(coll);
  if (comm == nullptr) return Fail(Code::kInvalidArgument, std::string(name) + ": communicator is NULL");
  ReapStreamOps(comm, /*wait=*/false);
  if (stream.on_stream) {
    // Checked before anything is queued, so that failing here leaves
    // nothing behind.
    Status usable = comm->conn->EnableStreamOrdering(stream.stream);
    if (!usable.ok()) return Fail(usable.WithContext(std::string(name) + " on a CUDA stream: "));
  }
  if (!baton::IsValidDataType(static_cast<uint32_t>(dtype))) {
    return Fail(Code::kInvalidArgument, std::string(name) + ": unknown datatype " + std::to_string(dtype));
  }
  if (baton::IsReduction(coll) && !baton::IsValidRedOp(static_cast<uint32_t>(op))) {
    return Fail(Code::kInvalidArgument, std::string(name) + ": unknown reduction " + std::to_string(op));
  }
  const bool p2p = coll == Collective::kSend || coll == Collective::kRecv;
  if ((baton::HasRoot(coll) || p2p) && (root < 0 || root >= comm->nranks)) {
    return Fail(Code::kInvalidArgument, std::string(name) + ": " + (p2p ? "peer " : "root ") + std::to_string(root) +
                                            " is not a rank of this communicator (size " +
                                            std::to_string(comm->nranks) + ")");
  }
  if (int err = comm->async_error.load(); err != baton_success) {
    return Fail(Code::kAborted, std::string(name) + ": the communicator failed earlier (" +
                                    baton_get_error_string(static_cast<baton_result_t>(err)) +
                                    "); destroy it and create a new one");
  }
  baton::BufferExtents ext;
  const uint64_t esize = baton::DataTypeSize(static_cast<baton::DataType>(dtype));
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
  if (!baton::ComputeExtents(coll, count, comm->nranks, comm->rank, root, &ext) ||
      __builtin_mul_overflow(ext.send_elems, esize, &send_bytes) ||
      __builtin_mul_overflow(ext.recv_elems, esize, &recv_bytes)) {
    return Fail(Code::kInvalidArgument, std::string(name) + ": count " + std::to_string(count) + " is too large");
  }
  if (send_bytes > 0 && send == nullptr) {
    return Fail(Code::kInvalidArgument, std::string(name) + ": send buffer is NULL");
  }
  if (recv_bytes > 0 && recv == nullptr) {
    return Fail(Code::kInvalidArgument, std::string(name) + ": receive buffer is NULL");
  }
  const baton::OpSignature sig{coll, static_cast<baton::DataType>(dtype),
                               baton::IsReduction(coll) ? static_cast<baton::RedOp>(op) : baton::RedOp::kSum,
                               baton::HasRoot(coll) ? root : -1, count};
  // Every rank must choose the same path: the kind of call (blocking, not
  // grouped, not on a stream) and the signature decide it.
  if (comm->fast && out == nullptr && t_group_depth == 0 && !stream.on_stream && comm->fast->Accepts(sig)) {
    return RunOnFastPath(comm, sig, send, recv, send_bytes, recv_bytes);
  }
  baton_request* req = NewRequest(comm);
  // The fast path exists only on communicators whose ranks share one node.
  req->spin = WaitSpinFor(std::max(send_bytes, recv_bytes), comm->fast != nullptr);
  Status st = comm->conn->AcquireCompletion(&req->slot);
  if (!st.ok()) {
    FreeRequest(req);
    return Fail(st);
  }
  ipc::Descriptor d{};
  d.comm = comm->handle;
  d.collective = static_cast<uint32_t>(coll);
  d.dtype = static_cast<uint32_t>(dtype);
  d.redop = static_cast<uint32_t>(op);
  d.root = baton::HasRoot(coll) || p2p ? root : -1;
  d.count = count;
  d.completion = req->slot;
  Staged staged_send;
  st = Place(req, send, send_bytes, /*copy_in=*/true, /*copy_out=*/false, stream.on_stream, &d.send, &staged_send);
  if (st.ok()) {
    if (recv == send && staged_send.ptr != nullptr && recv_bytes == send_bytes) {
      // In place on a buffer the daemon cannot see: one copy for both.
      d.recv = d.send;
      req->copy_out.push_back({recv, staged_send.ptr, recv_bytes, staged_send.device});
    } else {
      st = Place(req, recv, recv_bytes, /*copy_in=*/false, /*copy_out=*/true, stream.on_stream, &d.recv, nullptr);
    }
  }
  if (!st.ok()) {
    ReleaseRequest(req);
    return Fail(st.WithContext(std::string(name) + ": "));
  }
  if (stream.on_stream) {
    st = EnqueueStreamSide(req, stream.stream);
    if (!st.ok()) {
      // Part of it may be on the stream already and write the slot (and
      // copy into the bounce buffers) later: never reuse them.
      comm->conn->Orphan(req->slot, std::move(req->bounces));
      for (void* p : req->staged) comm->conn->ReleaseStaging(p);
      FreeRequest(req);
      return Fail(st.WithContext(std::string(name) + ": "));
    }
    d.flags |= ipc::kDescStreamOrdered;
  }
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    if (!p2p) {
      d.seq = comm->next_seq++;
      if (comm->fast) comm->fast->NoteDaemonOps(d.seq);
    }
    comm->conn->Enqueue(d);
    if (stream.on_stream) comm->stream_ops.push_back(req);  // reaped once the stream went past it
  }
  if (t_group_depth > 0) {
    t_group_doorbells.push_back(comm->conn);
  } else {
    comm->conn->RingDoorbell();
  }
  if (stream.on_stream) return baton_success;  // the host never waits
  if (out != nullptr) {
    *out = req;
    return baton_success;
  }
  if (t_group_depth > 0) {
    t_group_blocking.push_back(req);
    return baton_success;
  }
  return WaitRequest(req, -1);
}

baton_result_t Destroy(baton_comm_t comm, bool abort) {
  if (comm == nullptr) return Fail(Code::kInvalidArgument, "communicator is NULL");
  // Destroy lets stream-ordered operations finish first (as a destroy
  // after blocking calls would); abort fails them, and their slots are
  // reused only once the daemon and the stream are done with them.
  if (!abort) ReapStreamOps(comm, /*wait=*/true);
  ipc::CommDestroyRequest req{};
  req.h.type = static_cast<uint32_t>(ipc::MsgType::kCommDestroy);
  req.comm = comm->handle;
  req.abort = abort ? 1 : 0;
  ipc::Reply reply;
  Status st = comm->conn->Call(&req, sizeof req, &reply);
  for (baton_request* r : comm->stream_ops) {
    comm->conn->Orphan(r->slot, std::move(r->bounces));
    FreeRequest(r);
  }
  delete comm;
  return st.ok() ? baton_success : Fail(st);
}

}  // namespace

extern "C" {

const char* baton_get_error_string(baton_result_t result) {
  switch (result) {
    case baton_success: return "success";
    case baton_invalid_argument: return "invalid argument";
    case baton_system_error: return "system error";
    case baton_internal_error: return "internal error";
    case baton_remote_error: return "remote error";
    case baton_timeout: return "timeout";
    case baton_mismatch: return "collective mismatch";
    case baton_aborted: return "aborted";
    case baton_in_progress: return "in progress";
    case baton_resource_exhausted: return "resource exhausted";
    case baton_unavailable: return "daemon unavailable";
    case baton_permission_denied: return "permission denied";
  }
  return "unknown error";
}

const char* baton_get_last_error(baton_comm_t) { return t_last_error.c_str(); }

baton_result_t baton_comm_init_config(baton_comm_t* comm, int nranks, int rank, const baton_config_t* config) {
  if (comm == nullptr) return Fail(Code::kInvalidArgument, "baton_comm_init: comm is NULL");
  baton_config_t empty = BATON_CONFIG_INITIALIZER;
  const baton_config_t& c = config ? *config : empty;
  const std::string job = EnvOr(c.job_id, "BATON_JOB_ID", "");
  if (job.empty()) return Fail(Code::kInvalidArgument, "baton_comm_init: no job id (pass one or set BATON_JOB_ID)");
  if (nranks <= 0 || rank < 0 || rank >= nranks) {
    return Fail(Code::kInvalidArgument, "baton_comm_init: rank " + std::to_string(rank) + " of " +
                                            std::to_string(nranks) + " is not valid");
  }
  const std::string socket = EnvOr(c.daemon_socket, "BATON_SOCKET", kDefaultSocket);
  double timeout = c.timeout_seconds;
  if (timeout <= 0) {
    const std::string t = EnvOr(nullptr, "BATON_TIMEOUT", "0");
    char* end = nullptr;
    timeout = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || timeout < 0) {
      return Fail(Code::kInvalidArgument, "BATON_TIMEOUT='" + t + "' is not a number of seconds");
    }
  }
  ipc::CommInitRequest req{};
  req.h.type = static_cast<uint32_t>(ipc::MsgType::kCommInit);
  req.nranks = nranks;
  req.rank = rank;
  req.timeout_ms = static_cast<uint32_t>(std::min(timeout, 3.6e6) * 1000);
  if (!CopyField(req.job_id, sizeof req.job_id, job) ||
      !CopyField(req.comm_name, sizeof req.comm_name, c.name ? c.name : "world") ||
      !CopyField(req.rendezvous, sizeof req.rendezvous, EnvOr(c.rendezvous, "BATON_RENDEZVOUS", "")) ||
      !CopyField(req.secret, sizeof req.secret, EnvOr(c.secret, "BATON_JOB_SECRET", "")) ||
      !CopyField(req.algorithm, sizeof req.algorithm, EnvOr(c.algorithm, "BATON_ALGO", ""))) {
    return Fail(Code::kInvalidArgument, "baton_comm_init: job id, name, rendezvous, secret or algorithm too long");
  }
  DaemonConnection* conn = nullptr;
  Status st = DaemonConnection::Get(socket, &conn);
  if (!st.ok()) return Fail(st);
  ipc::Reply reply;
  std::vector<baton::UniqueFd> fds;
  st = conn->Call(&req, sizeof req, &reply, &fds);
  if (!st.ok()) return Fail(st.WithContext("baton_comm_init (rank " + std::to_string(rank) + "): "));
  auto out = std::make_unique<baton_comm>();
  out->conn = conn;
  out->handle = reply.value;
  out->rank = reply.rank;
  out->nranks = reply.nranks;
  out->describe = "communicator '" + std::string(req.comm_name) + "' of job '" + job + "'";
  if (st = AttachFastPath(out.get(), fds); !st.ok()) {
    (void)Destroy(out.release(), /*abort=*/true);
    return Fail(st);
  }
  *comm = out.release();
  return baton_success;
}

baton_result_t baton_comm_init(baton_comm_t* comm, const char* job_id, int nranks, int rank) {
  baton_config_t c = BATON_CONFIG_INITIALIZER;
  c.job_id = job_id;
  return baton_comm_init_config(comm, nranks, rank, &c);
}

baton_result_t baton_comm_init_from_env(baton_comm_t* comm) {
  const char* size = std::getenv("BATON_WORLD_SIZE");
  const char* rank = std::getenv("BATON_RANK");
  if (size == nullptr || rank == nullptr) {
    return Fail(Code::kInvalidArgument,
                "baton_comm_init_from_env: BATON_WORLD_SIZE and BATON_RANK must be set (baton-run sets them)");
  }
  return baton_comm_init_config(comm, std::atoi(size), std::atoi(rank), nullptr);
}

baton_result_t baton_comm_split(baton_comm_t comm, int color, int key, baton_comm_t* newcomm) {
  if (comm == nullptr || newcomm == nullptr) return Fail(Code::kInvalidArgument, "baton_comm_split: NULL argument");
  ipc::CommSplitRequest req{};
  req.h.type = static_cast<uint32_t>(ipc::MsgType::kCommSplit);
  req.parent = comm->handle;
  req.color = color < 0 ? -1 : color;
  req.key = key;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    req.seq = comm->next_seq++;
    if (comm->fast) comm->fast->NoteDaemonOps(req.seq);
  }
  ipc::Reply reply;
  std::vector<baton::UniqueFd> fds;
  Status st = comm->conn->Call(&req, sizeof req, &reply, &fds);
  if (!st.ok()) {
    int expected = baton_success;
    comm->async_error.compare_exchange_strong(expected, static_cast<int>(st.code()));
    return Fail(st);
  }
  if (reply.value == 0) {
    *newcomm = nullptr;
    return baton_success;
  }
  auto out = std::make_unique<baton_comm>();
  out->conn = comm->conn;
  out->handle = reply.value;
  out->rank = reply.rank;
  out->nranks = reply.nranks;
  out->describe = "a communicator split (color " + std::to_string(color) + ") from " + comm->describe;
  if (st = AttachFastPath(out.get(), fds); !st.ok()) {
    (void)Destroy(out.release(), /*abort=*/true);
    return Fail(st);
  }
  *newcomm = out.release();
  return baton_success;
}

baton_result_t baton_comm_destroy(baton_comm_t comm) { return Destroy(comm, false); }
baton_result_t baton_comm_abort(baton_comm_t comm) { return Destroy(comm, true); }

baton_result_t baton_comm_get_async_error(baton_comm_t comm, baton_result_t* error) {
  if (comm == nullptr || error == nullptr) return Fail(Code::kInvalidArgument, "NULL argument");
  ReapStreamOps(comm, /*wait=*/false);  // stream-ordered operations report their errors here
  *error = static_cast<baton_result_t>(comm->async_error.load());
  if (*error != baton_success) {
    std::lock_guard<std::mutex> lock(comm->mu);
    if (!comm->async_message.empty()) t_last_error = comm->async_message;
  }
  return baton_success;
}

baton_result_t baton_comm_count(baton_comm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return Fail(Code::kInvalidArgument, "NULL argument");
  *count = comm->nranks;
  return baton_success;
}

baton_result_t baton_comm_user_rank(baton_comm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return Fail(Code::kInvalidArgument, "NULL argument");
  *rank = comm->rank;
  return baton_success;
}

baton_result_t baton_mem_alloc(void** ptr, size_t size) {
  if (ptr == nullptr || size == 0) return Fail(Code::kInvalidArgument, "baton_mem_alloc: NULL pointer or zero size");
  DaemonConnection* conn = nullptr;
  Status st = DaemonConnection::Default(kDefaultSocket, &conn);
  if (st.ok()) st = conn->Alloc(size, ptr);
  return st.ok() ? baton_success : Fail(st);
}

baton_result_t baton_mem_alloc_device(void** ptr, size_t size, int device) {
  if (ptr == nullptr || size == 0) {
    return Fail(Code::kInvalidArgument, "baton_mem_alloc_device: NULL pointer or zero size");
  }
  DaemonConnection* conn = nullptr;
  Status st = DaemonConnection::Default(kDefaultSocket, &conn);
  if (st.ok()) st = conn->AllocDevice(device, size, ptr);
  return st.ok() ? baton_success : Fail(st.WithContext("baton_mem_alloc_device: "));
}

baton_result_t baton_comm_mem_alloc_device(baton_comm_t comm, void** ptr, size_t size, int device) {
  if (comm == nullptr || ptr == nullptr || size == 0) {
    return Fail(Code::kInvalidArgument, "baton_comm_mem_alloc_device: NULL argument or zero size");
  }
  Status st = comm->conn->AllocDevice(device, size, ptr);
  return st.ok() ? baton_success : Fail(st.WithContext("baton_comm_mem_alloc_device: "));
}

baton_result_t baton_get_daemon_rendezvous(char* address, size_t size) {
  if (address == nullptr || size == 0) return Fail(Code::kInvalidArgument, "baton_get_daemon_rendezvous: NULL buffer");
  DaemonConnection* conn = nullptr;
  Status st = DaemonConnection::Get(EnvOr(nullptr, "BATON_SOCKET", kDefaultSocket), &conn);
  if (!st.ok()) return Fail(st);
  const std::string& rv = conn->rendezvous();
  if (rv.size() + 1 > size) {
    return Fail(Code::kInvalidArgument, "baton_get_daemon_rendezvous: buffer of " + std::to_string(size) +
                                            " bytes is too small for '" + rv + "'");
  }
  std::memcpy(address, rv.c_str(), rv.size() + 1);
  return baton_success;
}

baton_result_t baton_comm_mem_alloc(baton_comm_t comm, void** ptr, size_t size) {
  if (comm == nullptr || ptr == nullptr || size == 0) {
    return Fail(Code::kInvalidArgument, "baton_comm_mem_alloc: NULL argument or zero size");
  }
  Status st = comm->conn->Alloc(size, ptr);
  return st.ok() ? baton_success : Fail(st);
}

baton_result_t baton_mem_free(void* ptr) {
  if (ptr == nullptr) return baton_success;
  Status st = DaemonConnection::FreeAnywhere(ptr);
  return st.ok() ? baton_success : Fail(st);
}

baton_result_t baton_allreduce(const void* s, void* r, size_t count, baton_datatype_t t, baton_redop_t op,
                               baton_comm_t comm, baton_request_t* req) {
  return Submit(Collective::kAllReduce, s, r, count, t, op, -1, comm, req);
}
baton_result_t baton_broadcast(const void* s, void* r, size_t count, baton_datatype_t t, int root, baton_comm_t comm,
                               baton_request_t* req) {
  return Submit(Collective::kBroadcast, s, r, count, t, baton_sum, root, comm, req);
}
baton_result_t baton_reduce(const void* s, void* r, size_t count, baton_datatype_t t, baton_redop_t op, int root,
                            baton_comm_t comm, baton_request_t* req) {
  return Submit(Collective::kReduce, s, r, count, t, op, root, comm, req);
}
baton_result_t baton_allgather(const void* s, void* r, size_t count, baton_datatype_t t, baton_comm_t comm,
                               baton_request_t* req) {
  return Submit(Collective::kAllGather, s, r, count, t, baton_sum, -1, comm, req);
}
baton_result_t baton_reducescatter(const void* s, void* r, size_t count, baton_datatype_t t, baton_redop_t op,
                                   baton_comm_t comm, baton_request_t* req) {
  return Submit(Collective::kReduceScatter, s, r, count, t, op, -1, comm, req);
}
baton_result_t baton_scatter(const void* s, void* r, size_t count, baton_datatype_t t, int root, baton_comm_t comm,
                             baton_request_t* req) {
  return Submit(Collective::kScatter, s, r, count, t, baton_sum, root, comm, req);
}
baton_result_t baton_gather(const void* s, void* r, size_t count, baton_datatype_t t, int root, baton_comm_t comm,
                            baton_request_t* req) {
  return Submit(Collective::kGather, s, r, count, t, baton_sum, root, comm, req);
}
baton_result_t baton_alltoall(const void* s, void* r, size_t count, baton_datatype_t t, baton_comm_t comm,
                              baton_request_t* req) {
  return Submit(Collective::kAllToAll, s, r, count, t, baton_sum, -1, comm, req);
}
baton_result_t baton_send(const void* s, size_t count, baton_datatype_t t, int peer, baton_comm_t comm,
                          baton_request_t* req) {
  return Submit(Collective::kSend, s, nullptr, count, t, baton_sum, peer, comm, req);
}
baton_result_t baton_recv(void* r, size_t count, baton_datatype_t t, int peer, baton_comm_t comm,
                          baton_request_t* req) {
  return Submit(Collective::kRecv, nullptr, r, count, t, baton_sum, peer, comm, req);
}
baton_result_t baton_barrier(baton_comm_t comm, baton_request_t* req) {
  return Submit(Collective::kBarrier, nullptr, nullptr, 0, baton_uint8, baton_sum, -1, comm, req);
}

baton_result_t baton_allreduce_stream(const void* s, void* r, size_t count, baton_datatype_t t, baton_redop_t op,
                                      baton_comm_t comm, baton_stream_t stream) {
  return Submit(Collective::kAllReduce, s, r, count, t, op, -1, comm, nullptr, {true, stream});
}
baton_result_t baton_broadcast_stream(const void* s, void* r, size_t count, baton_datatype_t t, int root,
                                      baton_comm_t comm, baton_stream_t stream) {
  return Submit(Collective::kBroadcast, s, r, count, t, baton_sum, root, comm, nullptr, {true, stream});
}
baton_result_t baton_reduce_stream(const void* s, void* r, size_t count, baton_datatype_t t, baton_redop_t op,
                                   int root, baton_comm_t comm, baton_stream_t stream) {
  return Submit(Collective::kReduce, s, r, count, t, op, root, comm, nullptr, {true, stream});
}
baton_result_t baton_allgather_stream(const void* s, void* r, size_t count, baton_datatype_t t, baton_comm_t comm,
                                      baton_stream_t stream) {
  return Submit(Collective::kAllGather, s, r, count, t, baton_sum, -1, comm, nullptr, {true, stream});
}
baton_result_t baton_reducescatter_stream(const void* s, void* r, size_t count, baton_datatype_t t, baton_redop_t op,
                                          baton_comm_t comm, baton_stream_t stream) {
  return Submit(Collective::kReduceScatter, s, r, count, t, op, -1, comm, nullptr, {true, stream});
}
baton_result_t baton_scatter_stream(const void* s, void* r, size_t count, baton_datatype_t t, int root,
                                    baton_comm_t comm, baton_stream_t stream) {
  return Submit(Collective::kScatter, s, r, count, t, baton_sum, root, comm, nullptr, {true, stream});
}
baton_result_t baton_gather_stream(const void* s, void* r, size_t count, baton_datatype_t t, int root,
                                   baton_comm_t comm, baton_stream_t stream) {
  return Submit(Collective::kGather, s, r, count, t, baton_sum, root, comm, nullptr, {true, stream});
}
baton_result_t baton_alltoall_stream(const void* s, void* r, size_t count, baton_datatype_t t, baton_comm_t comm,
                                     baton_stream_t stream) {
  return Submit(Collective::kAllToAll, s, r, count, t, baton_sum, -1, comm, nullptr, {true, stream});
}
baton_result_t baton_send_stream(const void* s, size_t count, baton_datatype_t t, int peer, baton_comm_t comm,
                                 baton_stream_t stream) {
  return Submit(Collective::kSend, s, nullptr, count, t, baton_sum, peer, comm, nullptr, {true, stream});
}
baton_result_t baton_recv_stream(void* r, size_t count, baton_datatype_t t, int peer, baton_comm_t comm,
                                 baton_stream_t stream) {
  return Submit(Collective::kRecv, nullptr, r, count, t, baton_sum, peer, comm, nullptr, {true, stream});
}

baton_result_t baton_wait(baton_request_t request, int timeout_ms) { return WaitRequest(request, timeout_ms); }

baton_result_t baton_test(baton_request_t request, int* done) {
  if (request == nullptr || done == nullptr) return Fail(Code::kInvalidArgument, "baton_test: NULL argument");
  if (request->comm->conn->completion(request->slot).state.load(std::memory_order_acquire) != ipc::kDone) {
    *done = 0;
    return baton_success;
  }
  *done = 1;
  return WaitRequest(request, 0);
}

baton_result_t baton_group_start(void) {
  ++t_group_depth;
  return baton_success;
}

baton_result_t baton_group_end(void) {
  if (t_group_depth == 0) return Fail(Code::kInvalidArgument, "baton_group_end without baton_group_start");
  if (--t_group_depth > 0) return baton_success;
  std::vector<DaemonConnection*> bells;
  bells.swap(t_group_doorbells);
  std::sort(bells.begin(), bells.end());
  bells.erase(std::unique(bells.begin(), bells.end()), bells.end());
  for (auto* c : bells) c->RingDoorbell();
  std::vector<baton_request*> blocking;
  blocking.swap(t_group_blocking);
  baton_result_t first = baton_success;
  std::string first_msg;
  for (auto* r : blocking) {
    baton_result_t rc = WaitRequest(r, -1);
    if (rc != baton_success && first == baton_success) {
      first = rc;
      first_msg = t_last_error;
    }
  }
  if (first != baton_success) t_last_error = first_msg;
  return first;
}

}  // extern "C"
