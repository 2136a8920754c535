#include "client/src/daemon_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/fd_passing.h"
#include "common/futex.h"

namespace baton::client {

namespace {
std::mutex g_mu;
// One connection per daemon socket, kept until exit (the daemon reclaims
// everything when the process goes away). A connection whose daemon died is
// replaced on the next Get, so that a restarted daemon serves this process
// again; the dead one stays allocated for communicators that still name it.
std::map<std::string, DaemonConnection*>* g_conns = new std::map<std::string, DaemonConnection*>;
std::vector<DaemonConnection*>* g_retired = new std::vector<DaemonConnection*>;  // replaced dead ones
DaemonConnection* g_first = nullptr;
}  // namespace

Status DaemonConnection::Default(const std::string& fallback_path, DaemonConnection** out) {
  std::string path = fallback_path;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_first != nullptr) {
      if (g_first->DaemonAlive()) {
        *out = g_first;
        return Status::Ok();
      }
      path = g_first->socket_path();  // reconnect to the daemon that replaced it
    }
  }
  if (const char* env = std::getenv("BATON_SOCKET"); env != nullptr && *env != '\0') path = env;
  return Get(path, out);
}

Status DaemonConnection::FreeAnywhere(void* ptr) {
  std::vector<DaemonConnection*> conns;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto& [path, c] : *g_conns) conns.push_back(c);
    conns.insert(conns.end(), g_retired->begin(), g_retired->end());
  }
  for (DaemonConnection* c : conns) {
    if (c->Owns(ptr)) return c->Free(ptr);
    if (c->OwnsDevice(ptr)) return c->FreeDevice(ptr);
  }
  return Status::InvalidArgument("baton_mem_free: pointer was not returned by baton_mem_alloc or "
                                 "baton_mem_alloc_device");
}

bool DaemonConnection::Owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(seg_mu_);
  return segments_.count(reinterpret_cast<uintptr_t>(ptr)) > 0;
}

Status DaemonConnection::Get(const std::string& socket_path, DaemonConnection** out) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_conns->find(socket_path);
  if (it == g_conns->end() || !it->second->DaemonAlive()) {
    auto conn = std::make_unique<DaemonConnection>();
    BATON_RETURN_IF_ERROR(conn->Connect(socket_path));
    DaemonConnection* dead = it == g_conns->end() ? nullptr : it->second;
    if (dead != nullptr) g_retired->push_back(dead);
    (*g_conns)[socket_path] = conn.get();
    if (g_first == nullptr || g_first == dead) g_first = conn.get();
    it = g_conns->find(socket_path);
    conn.release();
  }
  *out = it->second;
  return Status::Ok();
}

Status DaemonConnection::Connect(const std::string& path) {
  socket_path_ = path;
  socket_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!socket_.valid()) return Status::Errno("socket", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Status::InvalidArgument("daemon socket path too long: " + path);
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(socket_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    return Status::Unavailable("cannot reach batond at " + path + ": " + std::strerror(err) +
                               " (is the daemon running? set BATON_SOCKET to its --socket path)");
  }
  ipc::HelloRequest hello{};
  hello.h.type = static_cast<uint32_t>(ipc::MsgType::kHello);
  hello.version = ipc::kProtocolVersion;
  ipc::Reply reply;
  std::vector<UniqueFd> fds;
  BATON_RETURN_IF_ERROR(Call(&hello, sizeof hello, &reply, &fds));
  if (fds.size() != 2 || reply.value != ipc::kRingBytes) {
    return Status::Internal("daemon sent a malformed Hello reply");
  }
  BATON_RETURN_IF_ERROR(Mapping::MapShared(fds[0].get(), ipc::kRingBytes, &ring_));
  ring_view_ = ipc::RingView::At(ring_.data());
  doorbell_ = std::move(fds[1]);
  reply.message[sizeof reply.message - 1] = '\0';
  rendezvous_ = reply.message;
  for (uint32_t i = ipc::kCompletions; i > 0; --i) free_slots_.push_back(i - 1);
  return Status::Ok();
}

Status DaemonConnection::Call(void* request, size_t size, ipc::Reply* reply, std::vector<UniqueFd>* fds,
                              const std::vector<int>& pass) {
  auto* h = static_cast<ipc::MsgHeader*>(request);
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    h->request_id = next_request_++;
    BATON_RETURN_IF_ERROR(SendWithFds(socket_.get(), request, size, pass).WithContext("talking to batond: "));
  }
  std::unique_lock<std::mutex> lock(reply_mu_);
  for (;;) {
    auto it = replies_.find(h->request_id);
    if (it != replies_.end()) {
      *reply = it->second.reply;
      if (fds) *fds = std::move(it->second.fds);
      replies_.erase(it);
      return Status(static_cast<Code>(reply->code), reply->message);
    }
    if (!broken_.ok()) return broken_;
    if (reader_active_) {
      reply_cv_.wait(lock);
      continue;
    }
    // Become the reader until some reply arrives.
    reader_active_ = true;
    lock.unlock();
    Pending got;
    size_t len = 0;
    Status st = RecvWithFds(socket_.get(), &got.reply, sizeof got.reply, &len, &got.fds);
    lock.lock();
    reader_active_ = false;
    if (st.ok() && len == 0) st = Status::Unavailable("batond closed the connection (did the daemon stop?)");
    if (st.ok() && len != sizeof got.reply) st = Status::Internal("malformed reply from batond");
    if (!st.ok()) {
      broken_ = st.WithContext("talking to batond: ");
    } else {
      got.reply.message[sizeof got.reply.message - 1] = '\0';
      replies_[got.reply.h.request_id] = std::move(got);
    }
    reply_cv_.notify_all();
  }
}

Status DaemonConnection::Alloc(size_t size, void** ptr) {
  ipc::MemAllocRequest req{};
  req.h.type = static_cast<uint32_t>(ipc::MsgType::kMemAlloc);
  req.size = size;
  ipc::Reply reply;
  std::vector<UniqueFd> fds;
  BATON_RETURN_IF_ERROR(Call(&req, sizeof req, &reply, &fds));
  if (fds.size() != 1) return Status::Internal("daemon sent no memory for baton_mem_alloc");
  Segment seg;
  seg.id = reply.value;
  const size_t mapped = (size + 4095) & ~size_t{4095};
  BATON_RETURN_IF_ERROR(Mapping::MapShared(fds[0].get(), mapped, &seg.mapping));
  *ptr = seg.mapping.data();
  std::lock_guard<std::mutex> lock(seg_mu_);
  segments_[reinterpret_cast<uintptr_t>(*ptr)] = std::move(seg);
  return Status::Ok();
}

Status DaemonConnection::Free(void* ptr) {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    auto it = segments_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == segments_.end()) {
      return Status::InvalidArgument("baton_mem_free: pointer was not returned by baton_mem_alloc");
    }
    id = it->second.id;
    segments_.erase(it);
  }
  return ReleaseSegment(id);
}

Status DaemonConnection::ReleaseSegment(uint64_t segment) {
  ipc::MemFreeRequest req{};
  req.h.type = static_cast<uint32_t>(ipc::MsgType::kMemFree);
  req.segment = segment;
  ipc::Reply reply;
  return Call(&req, sizeof req, &reply);
}

Status DaemonConnection::RegisterDevice(const gpu::DevicePointer& p, uint64_t* segment) {
  std::vector<uint64_t> piece_ids;
  for (const gpu::MappedPiece& piece : p.pieces) piece_ids.push_back(piece.buffer_id);
  uint64_t replaced = 0;  // a shorter or stale registration of a span, released once the new one is in place
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    if (auto it = device_segments_.find(p.buffer_id); it != device_segments_.end()) {
      // A span is reused if it already maps these pieces (it may map more);
      // a piece mapped anew since has a new id, and the span is replaced.
      const std::vector<uint64_t>& have = it->second.piece_ids;
      if (piece_ids.size() <= have.size() && std::equal(piece_ids.begin(), piece_ids.end(), have.begin())) {
        *segment = it->second.segment;
        return Status::Ok();
      }
      replaced = it->second.segment;
      device_segments_.erase(it);
    }
  }
  if (replaced != 0) (void)ReleaseSegment(replaced);  // the daemon may have dropped it already
  PruneFreedDeviceRegistrations();
  ipc::RegisterDeviceRequest req{};
  req.h.type = static_cast<uint32_t>(ipc::MsgType::kRegisterDevice);
  gpu::ExportedAllocation exported;
  BATON_RETURN_IF_ERROR(gpu::ExportAllocation(p, &exported));
  std::memcpy(req.ipc_handle, exported.ipc_handle.data(), exported.ipc_handle.size());
  std::memcpy(req.device_uuid, exported.uuid.data(), exported.uuid.size());
  req.size = p.size;
  std::vector<int> pass;
  if (p.sharing == gpu::Sharing::kPosixFd) {
    req.sharing = ipc::kSharePosixFd;
    req.pieces = static_cast<uint32_t>(p.pieces.size());
    for (size_t i = 0; i < p.pieces.size(); ++i) req.piece_bytes[i] = p.pieces[i].size;
    for (const UniqueFd& fd : exported.fds) pass.push_back(fd.get());
  } else {
    req.sharing = ipc::kShareCudaIpc;
  }
  ipc::Reply reply;
  BATON_RETURN_IF_ERROR(Call(&req, sizeof req, &reply, nullptr, pass));
  std::lock_guard<std::mutex> lock(seg_mu_);
  device_segments_[p.buffer_id] = {reply.value, p.base, std::move(piece_ids)};
  *segment = reply.value;
  return Status::Ok();
}

void DaemonConnection::PruneFreedDeviceRegistrations() {
  std::vector<uint64_t> gone;
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    if (device_segments_.size() < prune_at_) return;
    for (auto it = device_segments_.begin(); it != device_segments_.end();) {
      if (gpu::StillAllocated(it->second.base, it->first)) {
        ++it;
        continue;
      }
      gone.push_back(it->second.segment);
      it = device_segments_.erase(it);
    }
    prune_at_ = device_segments_.size() + kPruneEvery;
  }
  for (uint64_t segment : gone) (void)ReleaseSegment(segment);  // the daemon may have dropped it already
}

Status DaemonConnection::AllocDevice(int device, size_t size, void** ptr) {
  void* p = nullptr;
  std::string why_not_fd;
  BATON_RETURN_IF_ERROR(gpu::AllocateDevice(device, size, &p, &why_not_fd));
  gpu::DevicePointer info;
  uint64_t segment = 0;
  Status st = gpu::QueryPointer(p, &info);
  if (st.ok()) st = RegisterDevice(info, &segment);
  if (st.code() == Code::kPermissionDenied && info.sharing == gpu::Sharing::kCudaIpc) {
    // A batond that takes fds only, and a GPU that could not give one.
    st = st.WithContext("baton_mem_alloc_device fell back to cudaMalloc because " + why_not_fd + ": ");
  }
  if (!st.ok()) {
    (void)gpu::FreeDevice(p);
    return st;
  }
  std::lock_guard<std::mutex> lock(seg_mu_);
  device_allocs_[reinterpret_cast<uintptr_t>(p)] = info.buffer_id;
  *ptr = p;
  return Status::Ok();
}

bool DaemonConnection::OwnsDevice(const void* ptr) const {
  std::lock_guard<std::mutex> lock(seg_mu_);
  return device_allocs_.count(reinterpret_cast<uintptr_t>(ptr)) > 0;
}

Status DaemonConnection::FreeDevice(void* ptr) {
  uint64_t segment = 0;
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    auto it = device_allocs_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == device_allocs_.end()) {
      return Status::InvalidArgument("baton_mem_free: pointer was not returned by baton_mem_alloc_device");
    }
    if (auto reg = device_segments_.find(it->second); reg != device_segments_.end()) {
      segment = reg->second.segment;
      device_segments_.erase(reg);
    }
    device_allocs_.erase(it);
  }
  // The daemon closes its mapping first (once operations in flight let go),
  // then the memory goes back to CUDA.
  Status st = segment != 0 ? ReleaseSegment(segment) : Status::Ok();
  Status freed = gpu::FreeDevice(ptr);
  return st.ok() ? freed : st;
}

Status DaemonConnection::EnableStreamOrdering(void* stream) {
  std::lock_guard<std::mutex> lock(gpu_mu_);
  if (ring_for_gpu_.registered()) return Status::Ok();
  return ring_for_gpu_.Register(ring_.data(), ring_.size(), stream);
}

void DaemonConnection::Orphan(uint32_t slot, std::vector<void*> bounces) {
  std::lock_guard<std::mutex> lock(slot_mu_);
  orphans_.push_back({slot, std::move(bounces)});
}

bool DaemonConnection::Lookup(const void* ptr, uint64_t bytes, ipc::BufferRef* ref) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(seg_mu_);
  auto it = segments_.upper_bound(p);
  if (it == segments_.begin()) return false;
  --it;
  const uint64_t off = p - it->first;
  if (off > it->second.mapping.size() || bytes > it->second.mapping.size() - off) return false;
  *ref = {it->second.id, off};
  return true;
}

Status DaemonConnection::AcquireStaging(uint64_t bytes, void** ptr) {
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    auto it = staging_free_.lower_bound(bytes);
    if (it != staging_free_.end()) {
      *ptr = it->second;
      staging_free_.erase(it);
      return Status::Ok();
    }
  }
  // Power-of-two capacities keep the pool small and reusable.
  return Alloc(std::bit_ceil(std::max<uint64_t>(bytes, 4096)), ptr);
}

void DaemonConnection::ReleaseStaging(void* ptr) {
  std::lock_guard<std::mutex> lock(seg_mu_);
  auto it = segments_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it != segments_.end()) staging_free_.emplace(it->second.mapping.size(), ptr);
}

namespace {

// Power-of-two capacities up to 64 MiB keep the pool small and reusable;
// above, whole 32 MiB steps, so that a large tensor does not cost up to
// twice its size in GPU memory.
uint64_t BounceCapacity(uint64_t bytes) {
  constexpr uint64_t kStep = uint64_t{32} << 20;
  if (bytes <= 2 * kStep) return std::bit_ceil(std::max<uint64_t>(bytes, 64 << 10));
  return (bytes + kStep - 1) / kStep * kStep;
}

}  // namespace

Status DaemonConnection::AcquireBounce(int device, uint64_t bytes, Bounce* out) {
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    std::multimap<uint64_t, void*>& free = bounce_free_[device];
    if (auto it = free.lower_bound(bytes); it != free.end()) {
      bounce_free_bytes_[device] -= it->first;
      *out = {it->second, bounces_.at(it->second).ref};
      free.erase(it);
      return Status::Ok();
    }
  }
  const uint64_t capacity = BounceCapacity(bytes);
  void* p = nullptr;
  BATON_RETURN_IF_ERROR(AllocDevice(device, capacity, &p)
                            .WithContext("allocating a " + std::to_string(capacity) + "-byte bounce buffer on device " +
                                         std::to_string(device) + ": "));
  // AllocDevice registered it: this finds the registration.
  gpu::DevicePointer info;
  uint64_t segment = 0;
  Status st = gpu::QueryPointer(p, &info);
  if (st.ok()) st = RegisterDevice(info, &segment);
  if (!st.ok()) {
    (void)FreeDevice(p);
    return st;
  }
  const ipc::BufferRef ref{segment, reinterpret_cast<uintptr_t>(p) - info.base};
  std::lock_guard<std::mutex> lock(seg_mu_);
  bounces_[p] = {device, capacity, ref};
  *out = {p, ref};
  return Status::Ok();
}

void DaemonConnection::ReleaseBounce(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(seg_mu_);
    auto it = bounces_.find(ptr);
    if (it == bounces_.end()) return;
    const BounceBuffer& b = it->second;
    if (bounce_free_bytes_[b.device] + b.capacity <= kBounceKeepBytes) {
      bounce_free_[b.device].emplace(b.capacity, ptr);
      bounce_free_bytes_[b.device] += b.capacity;
      return;
    }
    bounces_.erase(it);
  }
  (void)FreeDevice(ptr);  // the pool keeps enough: this one goes back to CUDA
}

Status DaemonConnection::AcquireCompletion(uint32_t* slot) {
  std::vector<void*> released_bounces;
  Status st;
  {
    std::lock_guard<std::mutex> lock(slot_mu_);
    std::erase_if(orphans_, [&](OrphanSlot& o) {
      const ipc::Completion& c = completion(o.slot);
      if (c.state.load(std::memory_order_acquire) != ipc::kDone || c.stream_released.load() == 0) return false;
      free_slots_.push_back(o.slot);
      released_bounces.insert(released_bounces.end(), o.bounces.begin(), o.bounces.end());
      return true;
    });
    if (free_slots_.empty()) {
      st = Status::Exhausted("more than " + std::to_string(ipc::kCompletions) +
                             " operations in flight in this process: wait for some before issuing more");
    } else {
      *slot = free_slots_.back();
      free_slots_.pop_back();
      completion(*slot).state.store(ipc::kPending, std::memory_order_relaxed);
    }
  }
  for (void* p : released_bounces) ReleaseBounce(p);  // may talk to the daemon: not under slot_mu_
  return st;
}

void DaemonConnection::ReleaseCompletion(uint32_t slot) {
  completion(slot).state.store(ipc::kIdle, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(slot_mu_);
  free_slots_.push_back(slot);
}

void DaemonConnection::Enqueue(const ipc::Descriptor& d) {
  std::lock_guard<std::mutex> lock(ring_mu_);
  ipc::RingControl* ctl = ring_view_.control;
  const uint32_t tail = ctl->tail.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t head = ctl->head.load(std::memory_order_acquire);
    if (tail - head < ipc::kRingSlots) break;
    ctl->client_waiting.store(1, std::memory_order_seq_cst);
    WriteDoorbell();  // make sure the daemon is draining
    if (ctl->head.load(std::memory_order_seq_cst) == head) FutexWait(&ctl->head, head, 10'000'000);
    ctl->client_waiting.store(0, std::memory_order_relaxed);
  }
  std::memcpy(&ring_view_.slots[tail % ipc::kRingSlots], &d, sizeof d);
  // Sequentially consistent: RingDoorbell's load of daemon_polling must not
  // be ordered before it (ipc_protocol.h).
  ctl->tail.store(tail + 1, std::memory_order_seq_cst);
}

bool DaemonConnection::DaemonAlive() const {
  pollfd p{socket_.get(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return true;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0;
}

void DaemonConnection::RingDoorbell() {
  // After Enqueue's store of `tail`; pairs with the daemon's decrement of
  // daemon_polling followed by its last look at `tail`: either it sees our
  // descriptor or we see 0 here.
  if (ring_view_.control->daemon_polling.load(std::memory_order_seq_cst) != 0) return;
  WriteDoorbell();
}

void DaemonConnection::WriteDoorbell() {
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(doorbell_.get(), &one, sizeof one);
  } while (n < 0 && errno == EINTR);
}

}  // namespace baton::client
