#include "daemon/session.h"

#include <linux/mempolicy.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/cross_process_order.h"
#include "common/fd_passing.h"
#include "common/futex.h"
#include "common/logging.h"
#include "common/thread_name.h"
#include "control/rendezvous_client.h"
#include "daemon/comm_registry.h"
#include "daemon/descriptor_check.h"

namespace baton {

namespace {

// Copies a fixed-size char field that must be NUL-terminated.
bool FixedString(const char* field, size_t cap, std::string* out) {
  const void* nul = std::memchr(field, '\0', cap);
  if (nul == nullptr) return false;
  out->assign(field, static_cast<const char*>(nul));
  return true;
}

uint64_t RoundUpToPage(uint64_t n) { return (n + 4095) & ~uint64_t{4095}; }

}  // namespace

void LocalOp::Finish(const Status& st) const {
  Status result = st;
  if (device && st.ok()) result = device->Conclude(bufs);
  if (auto s = session.lock()) s->Complete(completion, result);
}

Session::Session(const SessionEnv& env, boost::asio::io_context& io, Socket socket, const ucred& peer, uint64_t id,
                 std::atomic<uint32_t>* client_count)
    : env_(env),
      io_(io),
      socket_(std::move(socket)),
      peer_(peer),
      identity_(ClientIdentity::FromPeer(peer.pid, peer.uid, peer.gid)),
      id_(id),
      client_count_(client_count) {
  ++*client_count_;
}

Session::~Session() {
  // Last reference gone: nothing of this client is in flight any more.
  for (const std::string& job : jobs_held_) env_.access->ReleaseJob(job);
  env_.access->ReleaseMemory(peer_.uid, segment_bytes_);
  for (int i = 0; i < comms_charged_; ++i) env_.access->ReleaseComm(peer_.uid);
  if (client_counted_) env_.access->RemoveClient(peer_.uid);
  --*client_count_;
}

std::string Session::Who() const {
  return "pid " + std::to_string(peer_.pid) + " (uid " + std::to_string(peer_.uid) + ")";
}

void Session::Start() {
  BATON_INFO(kClient, "client #{} connected: {}", id_, Who());
  ReadNext();
}

void Session::ReadNext() {
  // Waits for readability and then reads the packet itself: asio's receive
  // cannot take the file descriptors a RegisterDevice carries.
  socket_.async_wait(Socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec) {
      self->Close(ec.message());
      return;
    }
    size_t len = 0;
    bool would_block = false;
    std::vector<UniqueFd> fds;
    Status st = RecvWithFds(self->socket_.native_handle(), self->inbox_.data(), self->inbox_.size(), &len, &fds,
                            &would_block);
    if (!st.ok() || (len == 0 && !would_block)) {
      self->Close(st.ok() ? "disconnected" : st.message());
      return;
    }
    if (!would_block) self->Dispatch(len, std::move(fds));
    if (!self->closed_) self->ReadNext();
  });
}

void Session::Dispatch(size_t len, std::vector<UniqueFd> fds) {
  if (len < sizeof(ipc::MsgHeader)) return Close("runt message");
  ipc::MsgHeader h;
  std::memcpy(&h, inbox_.data(), sizeof h);
  if (!fds.empty() && static_cast<ipc::MsgType>(h.type) != ipc::MsgType::kRegisterDevice) {
    return Close("a file descriptor came with a request that takes none (type " + std::to_string(h.type) + ")");
  }
  // Every request is a fixed-size struct: anything else is a protocol error.
  auto as = [&](auto* req) {
    if (len != sizeof(*req)) return false;
    std::memcpy(req, inbox_.data(), sizeof(*req));
    return true;
  };
  const auto type = static_cast<ipc::MsgType>(h.type);
  if (!hello_done_ && type != ipc::MsgType::kHello) return Close("first message was not Hello");
  switch (type) {
    case ipc::MsgType::kHello: {
      ipc::HelloRequest req;
      if (!as(&req)) return Close("bad Hello size");
      return OnHello(req);
    }
    case ipc::MsgType::kMemAlloc: {
      ipc::MemAllocRequest req;
      if (!as(&req)) return Close("bad MemAlloc size");
      return OnMemAlloc(req);
    }
    case ipc::MsgType::kMemFree: {
      ipc::MemFreeRequest req;
      if (!as(&req)) return Close("bad MemFree size");
      return OnMemFree(req);
    }
    case ipc::MsgType::kRegisterDevice: {
      ipc::RegisterDeviceRequest req;
      if (!as(&req)) return Close("bad RegisterDevice size");
      return OnRegisterDevice(req, std::move(fds));
    }
    case ipc::MsgType::kCommInit: {
      auto req = std::make_unique<ipc::CommInitRequest>();
      if (!as(req.get())) return Close("bad CommInit size");
      return OnCommInit(*req);
    }
    case ipc::MsgType::kCommSplit: {
      ipc::CommSplitRequest req;
      if (!as(&req)) return Close("bad CommSplit size");
      return OnCommSplit(req);
    }
    case ipc::MsgType::kCommDestroy: {
      ipc::CommDestroyRequest req;
      if (!as(&req)) return Close("bad CommDestroy size");
      return OnCommDestroy(req);
    }
    case ipc::MsgType::kCommFailed: {
      auto req = std::make_unique<ipc::CommFailedRequest>();
      if (!as(req.get())) return Close("bad CommFailed size");
      return OnCommFailed(*req);
    }
    default:
      return Reply(h.request_id, Status::InvalidArgument("unknown request type " + std::to_string(h.type)));
  }
}

void Session::Reply(uint32_t request_id, const Status& st, uint64_t value, int rank, int nranks,
                    const std::vector<int>& fds, const std::string& text) {
  auto r = std::make_unique<ipc::Reply>();
  std::memset(r.get(), 0, sizeof *r);
  r->h = {static_cast<uint32_t>(ipc::MsgType::kReply), request_id};
  r->code = static_cast<int32_t>(st.code());
  r->value = value;
  r->rank = rank;
  r->nranks = nranks;
  std::strncpy(r->message, st.ok() ? text.c_str() : st.message().c_str(), sizeof r->message - 1);
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  Status sent = SendWithFds(socket_.native_handle(), r.get(), sizeof *r, fds);
  if (!sent.ok()) BATON_WARN("reply to client {} failed: {}", Who(), sent.ToString());
}

void Session::OnHello(const ipc::HelloRequest& req) {
  if (hello_done_) return Close("second Hello");
  if (Status st = env_.access->AddClient(peer_.uid); !st.ok()) {
    Reply(req.h.request_id, st);
    return Close(st.message());
  }
  client_counted_ = true;
  if (req.version != ipc::kProtocolVersion) {
    Reply(req.h.request_id, Status::InvalidArgument("client protocol version " + std::to_string(req.version) +
                                                    " but batond speaks " + std::to_string(ipc::kProtocolVersion) +
                                                    ": use a libbaton from the same release as the daemon"));
    return Close("protocol version mismatch");
  }
  int ring_fd = -1;
  Status st = CreateMemfd("baton-ring", ipc::kRingBytes, &ring_fd);
  UniqueFd ring_owner(ring_fd);
  if (st.ok()) st = Mapping::MapShared(ring_fd, ipc::kRingBytes, ring_.get());
  UniqueFd bell(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (st.ok() && !bell.valid()) st = Status::Errno("eventfd", errno);
  if (!st.ok()) {
    Reply(req.h.request_id, st);
    return Close("cannot set up the submission ring: " + st.message());
  }
  ring_view_ = ipc::RingView::At(ring_->data());
  ring_view_.control->num_slots = ipc::kRingSlots;
  ring_view_.control->num_completions = ipc::kCompletions;
  const int bell_fd = bell.get();
  doorbell_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, bell.release());
  hello_done_ = true;
  Reply(req.h.request_id, Status::Ok(), ipc::kRingBytes, 0, 0, {ring_fd, bell_fd}, env_.rendezvous);
  WaitDoorbell();
}

void Session::OnMemAlloc(const ipc::MemAllocRequest& req) {
  if (req.size == 0 || req.size > (1ull << 46)) {
    return Reply(req.h.request_id, Status::InvalidArgument("allocation size must be 1 byte .. 64 TiB"));
  }
  const uint64_t size = RoundUpToPage(req.size);
  uint64_t used = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    used = segment_bytes_;
  }
  if (used + size > env_.options->max_client_bytes) {
    return Reply(req.h.request_id,
                 Status::Exhausted("baton_mem_alloc of " + std::to_string(size) + " bytes would exceed this process's " +
                                   "shared-memory limit of " + std::to_string(env_.options->max_client_bytes) +
                                   " bytes (" + std::to_string(used) + " in use); free buffers or raise batond " +
                                   "--max-client-memory"));
  }
  if (Status charged = env_.access->ChargeMemory(peer_.uid, size); !charged.ok()) {
    return Reply(req.h.request_id, charged.WithContext("baton_mem_alloc: "));
  }
  int fd = -1;
  Status st = CreateMemfd("baton-segment", size, &fd);
  UniqueFd owner(fd);
  auto mapping = std::make_shared<Mapping>();
  if (st.ok()) st = Mapping::MapShared(fd, size, mapping.get());
  if (st.ok() && env_.pool_numa_node >= 0) {
    // Prefer the data NIC's NUMA node for this shared memory: the policy
    // belongs to the memfd, so it holds whichever process touches a page first.
    unsigned long mask = 1ul << env_.pool_numa_node;
    ::syscall(SYS_mbind, mapping->data(), mapping->size(), MPOL_PREFERRED, &mask, sizeof(mask) * 8, 0);
  }
  if (!st.ok()) {
    env_.access->ReleaseMemory(peer_.uid, size);
    return Reply(req.h.request_id, st.WithContext("baton_mem_alloc: "));
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_segment_++;
    segments_[id] = std::move(mapping);
    segment_bytes_ += size;
  }
  BATON_DEBUG(kAlloc, "client {}: segment {} of {} bytes", Who(), id, size);
  Reply(req.h.request_id, Status::Ok(), id, 0, 0, {fd});
}

void Session::OnMemFree(const ipc::MemFreeRequest& req) {
  std::unique_lock<std::mutex> lock(mu_);
  if (auto dev = device_segments_.find(req.segment); dev != device_segments_.end()) {
    std::erase_if(device_by_handle_, [&](const auto& entry) { return entry.second == req.segment; });
    device_segments_.erase(dev);  // closed once in-flight operations let go of it
    lock.unlock();
    return Reply(req.h.request_id, Status::Ok());
  }
  auto it = segments_.find(req.segment);
  if (it == segments_.end()) {
    lock.unlock();
    return Reply(req.h.request_id, Status::InvalidArgument("baton_mem_free: segment " + std::to_string(req.segment) +
                                                           " is not allocated"));
  }
  segment_bytes_ -= it->second->size();
  env_.access->ReleaseMemory(peer_.uid, it->second->size());
  segments_.erase(it);  // in-flight operations still hold the mapping
  lock.unlock();
  Reply(req.h.request_id, Status::Ok());
}

namespace {

// The pieces of a RegisterDevice (cuMemCreate allocations mapped side by
// side), checked against the file descriptors that came with it.
Status CheckDeviceRegistration(const ipc::RegisterDeviceRequest& req, size_t fds, std::vector<uint64_t>* pieces) {
  if (req.sharing == ipc::kShareCudaIpc) {
    if (fds != 0 || req.pieces != 0) {
      return Status::InvalidArgument("RegisterDevice: a CUDA IPC handle comes with no file descriptor and no pieces, "
                                     "not " + std::to_string(fds) + " and " + std::to_string(req.pieces));
    }
    return Status::Ok();
  }
  if (req.sharing != ipc::kSharePosixFd) {
    return Status::InvalidArgument("RegisterDevice: unknown sharing " + std::to_string(req.sharing) +
                                   " (0: CUDA IPC handle, 1: file descriptors)");
  }
  if (req.pieces < 1 || req.pieces > ipc::kMaxDevicePieces) {
    return Status::InvalidArgument("RegisterDevice: cuMemCreate memory comes in 1 to " +
                                   std::to_string(ipc::kMaxDevicePieces) + " pieces, not " +
                                   std::to_string(req.pieces));
  }
  if (fds != req.pieces) {
    return Status::InvalidArgument("RegisterDevice: " + std::to_string(req.pieces) +
                                   " pieces of cuMemCreate memory come with as many file descriptors, not " +
                                   std::to_string(fds));
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < req.pieces; ++i) {
    const uint64_t bytes = req.piece_bytes[i];
    if (bytes == 0 || bytes > (1ull << 46)) {
      return Status::InvalidArgument("RegisterDevice: piece " + std::to_string(i) + " claims " +
                                     std::to_string(bytes) + " bytes (1 byte .. 64 TiB)");
    }
    total += bytes;  // at most 16 x 2^46: no overflow
    pieces->push_back(bytes);
  }
  if (total != req.size) {
    return Status::InvalidArgument("RegisterDevice: the pieces hold " + std::to_string(total) +
                                   " bytes, but the registration claims " + std::to_string(req.size));
  }
  return Status::Ok();
}

}  // namespace

void Session::OnRegisterDevice(const ipc::RegisterDeviceRequest& req, std::vector<UniqueFd> fds) {
  gpu::DeviceUuid uuid;
  std::memcpy(uuid.data(), req.device_uuid, uuid.size());
  const bool as_fd = req.sharing == ipc::kSharePosixFd;
  std::vector<uint64_t> pieces;
  if (Status st = CheckDeviceRegistration(req, fds.size(), &pieces); !st.ok()) return Reply(req.h.request_id, st);
  if (!as_fd && env_.options->device_sharing == DeviceSharingPolicy::kFdOnly) {
    return Reply(req.h.request_id,
                 Status::PermissionDenied(
                     "GPU buffer of " + Who() + ": this batond accepts only GPU memory passed as a file descriptor "
                     "(--device-sharing fd-only), and this buffer is from cudaMalloc, shared as a CUDA IPC handle; "
                     "allocate it with baton_mem_alloc_device, or with cuMemCreate and requestedHandleTypes = "
                     "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"));
  }
  gpu::IpcHandle handle;
  std::memcpy(handle.data(), req.ipc_handle, handle.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The same CUDA IPC handle cannot be opened twice in one process: reuse
    // it. (Each fd is a new import; the client library caches them.)
    if (auto it = device_by_handle_.find(handle); !as_fd && it != device_by_handle_.end()) {
      const uint64_t id = it->second;
      if (req.size <= device_segments_.at(id)->size()) return Reply(req.h.request_id, Status::Ok(), id);
    }
    if (device_segments_.size() >= kMaxDeviceSegments) {
      return Reply(req.h.request_id,
                   Status::Exhausted("this process has registered " + std::to_string(kMaxDeviceSegments) +
                                     " GPU allocations with batond, the limit per client; free some with "
                                     "baton_mem_free or reuse buffers"));
    }
  }
  std::unique_ptr<gpu::DeviceSegment> opened;
  std::vector<int> raw_fds;
  for (const UniqueFd& fd : fds) raw_fds.push_back(fd.get());
  Status st = as_fd ? gpu::DeviceSegment::Import(raw_fds, pieces, uuid, &opened)
                    : gpu::DeviceSegment::Open(handle, uuid, req.size, &opened);
  fds.clear();  // the mapping, if any, holds the memory now
  if (!st.ok()) return Reply(req.h.request_id, st.WithContext("GPU buffer of " + Who() + ": "));
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_segment_++;
    device_segments_[id] = std::move(opened);
    if (!as_fd) device_by_handle_[handle] = id;
  }
  BATON_DEBUG(kAlloc, "client {}: GPU allocation {} of {} bytes ({})", Who(), id, req.size,
              as_fd ? "file descriptor" : "CUDA IPC handle");
  Reply(req.h.request_id, Status::Ok(), id);
}

void Session::OnCommInit(const ipc::CommInitRequest& req) {
  std::string job, name, rendezvous, secret;
  if (!FixedString(req.job_id, sizeof req.job_id, &job) || !FixedString(req.comm_name, sizeof req.comm_name, &name) ||
      !FixedString(req.rendezvous, sizeof req.rendezvous, &rendezvous) ||
      !FixedString(req.secret, sizeof req.secret, &secret)) {
    return Reply(req.h.request_id, Status::InvalidArgument("communicator init: a string field is not terminated"));
  }
  if (job.empty()) return Reply(req.h.request_id, Status::InvalidArgument("communicator init: empty job id"));
  if (req.nranks <= 0 || req.rank < 0 || req.rank >= req.nranks) {
    return Reply(req.h.request_id, Status::InvalidArgument("communicator init: rank " + std::to_string(req.rank) +
                                                           " is not in 0.." + std::to_string(req.nranks - 1)));
  }
  if (rendezvous.empty()) rendezvous = env_.rendezvous;
  const auto timeout = req.timeout_ms ? std::chrono::milliseconds(req.timeout_ms) : env_.options->default_timeout;
  Algorithm algo = Algorithm::kAuto;
  baton::v1::JoinRequest join;
  join.set_job_id(job);
  join.set_comm_name(name.empty() ? "world" : name);
  join.set_world_size(static_cast<uint32_t>(req.nranks));
  join.set_rank(static_cast<uint32_t>(req.rank));
  join.set_node_id(env_.node_id);
  join.set_data_address(env_.data_address);
  join.set_grpc_address(env_.grpc_address);
  join.set_sockets_per_peer(static_cast<uint32_t>(env_.options->sockets_per_peer));
  join.set_secret(secret);
  join.set_timeout_ms(static_cast<uint32_t>(std::min<int64_t>(timeout.count(), 3600000)));
  std::string algo_name;
  if (!FixedString(req.algorithm, sizeof req.algorithm, &algo_name) || !ParseAlgorithm(algo_name, &algo)) {
    return Reply(req.h.request_id, Status::InvalidArgument("BATON_ALGO '" + algo_name +
                                                           "' is not one of auto, ring, hd, tree, rd, direct"));
  }
  if (Status st = ReserveJoin(); !st.ok()) return Reply(req.h.request_id, st);
  bool held = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held = jobs_held_.count(job) > 0;
  }
  if (!held) {
    if (Status st = env_.access->AcquireJob(job, identity_); !st.ok()) {
      BATON_WARN("client {} refused: {}", Who(), st.message());
      {
        std::lock_guard<std::mutex> lock(mu_);
        --pending_joins_;
      }
      ReleaseCommCharge();
      return Reply(req.h.request_id, st);
    }
    std::lock_guard<std::mutex> lock(mu_);
    jobs_held_.insert(job);
  }
  const uint32_t request_id = req.h.request_id;
  const int rank = req.rank;
  auto cancel = std::make_shared<JoinCancel>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    joins_.push_back(cancel);
  }
  // Rendezvous blocks until every rank has joined: do it off the io thread.
  std::thread([self = shared_from_this(), join, rendezvous, timeout, algo, request_id, rank, cancel] {
    NameThisThread("batond-join");
    baton::v1::JoinResponse resp;
    Status st = JoinRendezvous(rendezvous, join, &resp, cancel.get());
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      std::erase(self->joins_, cancel);
    }
    CommSpec spec;
    if (st.ok()) {
      spec.job = join.job_id();
      spec.name = join.comm_name();
      spec.uid = resp.comm_uid();
      spec.timeout = timeout;
      spec.algorithm = algo;
      spec.secret = join.secret();
      // Nodes are numbered in order of their lowest rank.
      uint32_t sockets = UINT32_MAX;
      std::map<std::string, int> node_index;
      std::vector<int> node_of_rank;
      for (const auto& r : resp.ranks()) {
        auto [it, inserted] = node_index.try_emplace(r.node_id(), static_cast<int>(node_index.size()));
        if (inserted) {
          // node ids are "name/instance"; messages use the name.
          spec.node_names.push_back(r.node_id().substr(0, r.node_id().find('/')));
          spec.node_addresses.push_back(r.data_address());
          spec.node_grpc.push_back(r.grpc_address());
        }
        node_of_rank.push_back(it->second);
        // Every node must open the same number: the smallest any asked for.
        sockets = std::min<uint32_t>(sockets, std::max<uint32_t>(r.sockets_per_peer(), 1));
      }
      spec.sockets_per_peer = static_cast<int>(std::min<uint32_t>(sockets, 16));
      st = NodeLayout::FromNodeOfRank(node_of_rank, &spec.layout);
      auto mine = node_index.find(self->env_.node_id);
      if (st.ok() && mine == node_index.end()) st = Status::Internal("rendezvous layout does not contain this node");
      if (st.ok()) spec.my_node = mine->second;
    }
    if (!st.ok()) return self->FinishJoin(request_id, st, nullptr, rank, 0);
    auto comm = self->env_.services.registry->GetOrCreate(spec, self->env_.services);
    const int nranks = spec.layout.world_size();
    std::weak_ptr<Session> weak = self;
    comm->Attach(rank, [weak, comm, request_id, rank, nranks](const Status& ready) {
      if (auto s = weak.lock()) {
        s->FinishJoin(request_id, ready, ready.ok() ? comm : nullptr, rank, nranks);
      } else {
        comm->Detach(rank, Status::Remote("rank " + std::to_string(rank) + " exited during communicator init"));
      }
    });
  }).detach();
}

void Session::FinishJoin(uint32_t request_id, const Status& st, std::shared_ptr<Communicator> comm, int rank,
                         int nranks) {
  uint64_t handle = 0;
  std::vector<int> fds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --pending_joins_;
  }
  if (!st.ok() || !comm) ReleaseCommCharge();  // no communicator came of it
  if (st.ok() && comm) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      comm->Detach(rank, Status::Remote("rank " + std::to_string(rank) + " of " + comm->Describe() + " (" + Who() +
                                        ") disconnected during init"));
      return;
    }
    handle = next_comm_++;
    comms_[handle] = {comm, rank};
    if (comm->FastPathFd() >= 0) fds.push_back(comm->FastPathFd());
  }
  Reply(request_id, st, handle, rank, st.ok() ? nranks : 0, fds);
}

Status Session::ReserveJoin() {
  std::lock_guard<std::mutex> lock(mu_);
  const int held = static_cast<int>(comms_.size()) + pending_joins_;
  if (held >= env_.options->max_client_comms) {
    return Status::Exhausted("this process already holds or is joining " + std::to_string(held) +
                             " communicators, batond's limit per client (--max-client-comms " +
                             std::to_string(env_.options->max_client_comms) +
                             "); destroy communicators it no longer uses");
  }
  BATON_RETURN_IF_ERROR(env_.access->ChargeComm(peer_.uid));
  ++pending_joins_;
  ++comms_charged_;
  return Status::Ok();
}

void Session::ReleaseCommCharge() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (comms_charged_ == 0) return;
    --comms_charged_;
  }
  env_.access->ReleaseComm(peer_.uid);
}

Session::Membership Session::FindComm(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(handle);
  return it != comms_.end() ? it->second : Membership{};
}

void Session::OnCommSplit(const ipc::CommSplitRequest& req) {
  const Membership m = FindComm(req.parent);
  if (!m.comm) return Reply(req.h.request_id, Status::InvalidArgument("split of an unknown communicator handle"));
  if (Status st = ReserveJoin(); !st.ok()) return Reply(req.h.request_id, st);
  LocalOp op;
  op.rank = m.rank;
  op.seq = req.seq;
  op.sig = {Collective::kSplit, DataType::kInt32, RedOp::kSum, -1, 2};
  op.session = weak_from_this();
  op.color = req.color;
  op.key = req.key;
  std::weak_ptr<Session> weak = shared_from_this();
  const uint32_t request_id = req.h.request_id;
  op.on_split = [weak, request_id](const Status& st, std::shared_ptr<Communicator> comm, int rank, int size) {
    if (auto s = weak.lock()) {
      s->FinishJoin(request_id, st, std::move(comm), rank, size);
    } else if (comm) {
      comm->Detach(rank, Status::Remote("rank " + std::to_string(rank) + " exited during communicator split"));
    }
  };
  m.comm->Submit(std::move(op));
}

void Session::OnCommDestroy(const ipc::CommDestroyRequest& req) {
  Membership m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = comms_.find(req.comm);
    if (it != comms_.end()) {
      m = std::move(it->second);
      comms_.erase(it);
    }
  }
  if (!m.comm) return Reply(req.h.request_id, Status::InvalidArgument("destroy of an unknown communicator handle"));
  {
    std::lock_guard<std::mutex> ring_lock(ring_mu_);  // what guards gates_
    RetireIdleGates();  // the handle's gate ends now, or when the operations queued in it are done
  }
  ReleaseCommCharge();
  m.comm->Detach(m.rank, req.abort ? Status::Aborted("rank " + std::to_string(m.rank) + " of " + m.comm->Describe() +
                                                      " called baton_comm_abort")
                                    : Status::Ok());
  Reply(req.h.request_id, Status::Ok());
}

void Session::OnCommFailed(const ipc::CommFailedRequest& req) {
  const Membership m = FindComm(req.comm);
  if (!m.comm) return Reply(req.h.request_id, Status::InvalidArgument("failure report for an unknown communicator handle"));
  std::string message;
  const auto code = static_cast<Code>(req.code);
  if (!FixedString(req.message, sizeof req.message, &message) || (code != Code::kMismatch && code != Code::kTimeout)) {
    return Reply(req.h.request_id, Status::InvalidArgument("malformed failure report"));
  }
  BATON_DEBUG(kColl, "client {}: rank {} reports {}", Who(), m.rank, message);
  m.comm->Abort(Status(code, message));
  Reply(req.h.request_id, Status::Ok());
}

void Session::WaitDoorbell() {
  doorbell_->async_read_some(boost::asio::buffer(&doorbell_value_, sizeof doorbell_value_),
                             [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                               if (ec) return;  // closed with the session
                               self->DrainRing();
                               if (self->closed_) return;
                               self->WaitDoorbell();
                               if (!self->polling_ && self->worker_pollers_.load() == 0) {
                                 self->polling_ = true;
                                 self->ClaimPolling();
                                 self->PollRing(std::chrono::steady_clock::now() +
                                                self->env_.services.progress_spin);
                               }
                             });
}

// Why poll: a rank submits its next operation microseconds after the last
// one completed. Waking the I/O thread from epoll for each doorbell costs
// tens of microseconds on a busy machine; checking the ring (one atomic
// load) from a handler that requeues itself for a moment after activity
// picks the submission up at once. Other sockets' handlers still run in
// between, and an idle client costs nothing: polling stops once `until`
// passes without a new descriptor. It also stops as soon as a
// communicator's worker polls the ring: two threads polling one ring would
// only take turns on the cores.
void Session::PollRing(std::chrono::steady_clock::time_point until) {
  const auto now = std::chrono::steady_clock::now();
  if (!closed_ && RingHasNews()) {
    DrainRing();
    until = now + env_.services.progress_spin;
  }
  if (closed_ || now >= until || worker_pollers_.load() > 0) return StopPollingRing();
  std::this_thread::yield();  // the ranks may need this core
  boost::asio::post(io_, [self = shared_from_this(), until] { self->PollRing(until); });
}

void Session::StopPollingRing() {
  polling_ = false;
  ReleasePolling();
}

bool Session::RingHasNews() const {
  return ring_view_.control->tail.load(std::memory_order_seq_cst) != ring_head_.load(std::memory_order_relaxed);
}

void Session::ClaimPolling() { ring_view_.control->daemon_polling.fetch_add(1, std::memory_order_seq_cst); }

void Session::ReleasePolling() {
  ring_view_.control->daemon_polling.fetch_sub(1, std::memory_order_seq_cst);
  // The client may have skipped the doorbell for a descriptor it added
  // while we were polling (ipc_protocol.h): look once more.
  if (!closed_ && RingHasNews()) DrainRing();
}

void Session::StartPolling() {
  worker_pollers_.fetch_add(1);
  ClaimPolling();
}

void Session::PollSubmissions() {
  if (RingHasNews()) DrainRing();
}

void Session::StopPolling() {
  worker_pollers_.fetch_sub(1);
  ReleasePolling();
}

void Session::DrainRing() {
  std::lock_guard<std::mutex> lock(ring_mu_);
  DrainRingLocked();
}

void Session::DrainRingLocked() {
  if (closed_ || ring_broken_) return;
  ipc::RingControl* ctl = ring_view_.control;
  const uint32_t tail = ctl->tail.load(std::memory_order_acquire);
  uint32_t head = ring_head_.load(std::memory_order_relaxed);
  if (tail - head > ipc::kRingSlots) {
    ring_broken_ = true;
    return CloseSoon("submission ring tail out of range");
  }
  bool consumed = false;
  while (head != tail) {
    ipc::Descriptor d;
    // Copy first: the client could rewrite the slot while we validate.
    std::memcpy(&d, &ring_view_.slots[head % ipc::kRingSlots], sizeof d);
    ++head;
    ring_head_.store(head, std::memory_order_relaxed);
    consumed = true;
    if (d.completion >= ipc::kCompletions) {
      ring_broken_ = true;
      return CloseSoon("descriptor names completion slot out of range");
    }
    LocalOp op;
    Membership m;
    Status st = Validate(d, &op, &m);
    if (!st.ok()) {
      BATON_DEBUG(kClient, "client {}: rejected descriptor: {}", Who(), st.ToString());
      Complete(d.completion, st);
      // The other ranks of a collective would wait for this one forever:
      // fail the communicator for all of them, saying why.
      const bool p2p = d.collective == static_cast<uint32_t>(Collective::kSend) ||
                       d.collective == static_cast<uint32_t>(Collective::kRecv);
      if (m.comm && !p2p) {
        m.comm->Abort(Status::Aborted("rank " + std::to_string(m.rank) + " (" + Who() + ") submitted an invalid op #" +
                                      std::to_string(d.seq) + ": " + st.message()));
      }
      continue;
    }
    Route(std::move(op), m, d.comm);
  }
  if (consumed) {
    ctl->head.store(head, std::memory_order_seq_cst);
    if (ctl->client_waiting.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&ctl->head);
  }
}

void Session::Route(LocalOp op, const Membership& m, uint64_t handle) {
  auto gate = gates_.find(handle);
  if (!op.device && (gate == gates_.end() || !gate->second->busy())) return m.comm->Submit(std::move(op));
  if (!env_.services.pinned) {  // an embedding without a pool (never batond itself)
    const Status none = Status::Internal("this daemon has no pinned memory pool for GPU operations");
    m.comm->Abort(none);
    return op.Finish(none);
  }
  if (gate == gates_.end()) {
    RetireIdleGates();
    gate = gates_.emplace(handle, std::make_unique<StreamGate>(env_.services.pinned)).first;
  }
  const auto deadline = std::chrono::steady_clock::now() + m.comm->spec().timeout;
  gate->second->Push(std::move(op), m.comm, deadline);
}

void Session::RetireIdleGates() {
  std::set<uint64_t> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [handle, m] : comms_) live.insert(handle);
  }
  // A gate with nothing queued has its thread waiting for work: it ends at
  // once. One still busy (an operation queued, or one it has just submitted
  // and not yet counted off) ends its thread by itself when it drains, and
  // the object goes at a later call.
  std::erase_if(gates_, [&](const auto& g) {
    if (live.contains(g.first)) return false;
    if (!g.second->busy()) return true;
    g.second->Retire();
    return false;
  });
}

Status Session::ResolveBuffer(const ipc::BufferRef& ref, uint64_t bytes, const char* which, uint8_t** ptr,
                              std::shared_ptr<Mapping>* hold, DeviceStaging::Side* device) {
  if (bytes == 0) {
    *ptr = nullptr;
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto dev = device_segments_.find(ref.segment); dev != device_segments_.end()) {
    BATON_RETURN_IF_ERROR(CheckBufferRange(ref.offset, bytes, dev->second->size(), which));
    device->segment = dev->second;
    device->device_ptr = dev->second->data() + ref.offset;
    *ptr = device->device_ptr;  // replaced by host staging before the collective runs
    return Status::Ok();
  }
  auto it = segments_.find(ref.segment);
  if (it == segments_.end()) {
    return Status::InvalidArgument(std::string(which) + " buffer is in segment " + std::to_string(ref.segment) +
                                   ", which this process has not allocated (or already freed)");
  }
  const Mapping& m = *it->second;
  BATON_RETURN_IF_ERROR(CheckBufferRange(ref.offset, bytes, m.size(), which));
  *ptr = m.data() + ref.offset;
  *hold = it->second;
  return Status::Ok();
}

Status Session::Validate(const ipc::Descriptor& d, LocalOp* op, Membership* membership) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = comms_.find(d.comm);
    if (it == comms_.end()) {
      return Status::InvalidArgument("unknown communicator handle " + std::to_string(d.comm) +
                                     " (destroyed, or never created in this process)");
    }
    *membership = it->second;
  }
  const Membership& m = *membership;
  CheckedDescriptor checked;
  Status st = CheckDescriptor(d, m.comm->spec().layout.world_size(), m.rank, &checked);
  if (!st.ok()) return Status(st.code(), st.message() + " (" + m.comm->Describe() + ")");
  const OpSignature& sig = checked.sig;
  const uint64_t send_bytes = checked.send_bytes;
  const uint64_t recv_bytes = checked.recv_bytes;
  op->rank = m.rank;
  op->seq = d.seq;
  op->sig = sig;
  op->session = weak_from_this();
  op->source = weak_from_this();
  op->completion = d.completion;
  DeviceStaging::Side send_device, recv_device;
  BATON_RETURN_IF_ERROR(ResolveBuffer(d.send, send_bytes, "send", &op->bufs.send, &op->send_hold, &send_device));
  BATON_RETURN_IF_ERROR(ResolveBuffer(d.recv, recv_bytes, "receive", &op->bufs.recv, &op->recv_hold, &recv_device));
  op->bufs.send_bytes = send_bytes;
  op->bufs.recv_bytes = recv_bytes;
  if (send_device.segment || recv_device.segment || checked.stream_ordered) {
    std::atomic<uint32_t>* ready =
        checked.stream_ordered ? &ring_view_.completions[d.completion].stream_ready : nullptr;
    op->device = std::make_shared<DeviceStaging>(std::move(send_device), std::move(recv_device), ready);
    if (ready) op->ring_hold = ring_;
  }
  return Status::Ok();
}

void Session::Complete(uint32_t completion, const Status& st) {
  if (completion >= ipc::kCompletions || ring_->data() == nullptr) return;
  ipc::Completion& c = ring_view_.completions[completion];
  // The slot's previous result may have come from another daemon thread;
  // the client, which saw it and reused the slot, orders the two.
  CrossProcessAcquire(&c);
  c.code = static_cast<int32_t>(st.code());
  const size_t n = std::min(st.message().size(), sizeof c.message - 1);
  std::memcpy(c.message, st.message().data(), n);
  c.message[n] = '\0';
  CrossProcessRelease(&c);
  c.state.store(ipc::kDone, std::memory_order_seq_cst);
  // A client still spinning sees the state change without a system call.
  if (c.client_sleeping.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&c.state);
  // Releases the client's CUDA stream if the operation was stream-ordered
  // (harmless otherwise): after the result, so that the stream's next work
  // sees it.
  c.stream_done.store(1, std::memory_order_release);
}

void Session::CloseSoon(std::string why) {
  boost::asio::post(io_, [self = shared_from_this(), why = std::move(why)] { self->Close(why); });
}

void Session::Close(const std::string& why) {
  std::map<uint64_t, Membership> comms;
  {
    // With ring_mu_ too: no drain routes an operation (or creates a gate)
    // after this.
    std::lock_guard<std::mutex> ring_lock(ring_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    comms.swap(comms_);
    for (auto& join : joins_) join->Cancel();  // their threads finish (and let go of this session) now
  }
  BATON_INFO(kClient, "client {} left: {}", Who(), why);
  for (auto& [handle, gate] : gates_) gate->Stop();  // their operations end now instead of at their timeout
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (doorbell_) doorbell_->close(ignored);
  for (auto& [handle, m] : comms) {
    m.comm->Detach(m.rank, Status::Remote("rank " + std::to_string(m.rank) + " of " + m.comm->Describe() + " (" +
                                          Who() + " on node " + env_.node_name +
                                          ") disconnected from its daemon without destroying the communicator: " +
                                          "the process exited or crashed"));
  }
}

}  // namespace baton
