#include "daemon/communicator.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/logging.h"
#include "common/thread_name.h"
#include "control/peer_client.h"
#include "daemon/comm_registry.h"
#include "daemon/device_execution.h"
#include "daemon/link_calibration.h"
#include "daemon/metrics.h"
#include "daemon/p2p_link.h"
#include "transports/tcp/connection_broker.h"
#include "transports/tcp/handshake.h"
#include "transports/tcp/tcp_mesh.h"

namespace baton {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

Communicator::Communicator(CommSpec spec, DaemonServices services)
    : spec_(std::move(spec)),
      services_(services),
      local_ranks_(spec_.layout.ranks_of_node[spec_.my_node]),
      detached_(local_ranks_.size(), false),
      next_seq_(local_ranks_.size(), 1),
      recorder_(services.flight_records) {
  const int world = spec_.layout.world_size();
  if (spec_.layout.num_nodes() == 1 && services_.fast_path_max_bytes > 0 && world <= ipc::kFastPathMaxRanks) {
    Status st = FastPathRegion::Create(world, services_.fast_path_max_bytes, spec_.timeout, &fast_path_);
    // Without it the ranks simply send every operation through batond.
    if (!st.ok()) BATON_WARN("{}: no small-message fast path: {}", Describe(), st.ToString());
  }
}

Communicator::~Communicator() = default;

std::string Communicator::Describe() const {
  return "communicator '" + spec_.name + "' of job '" + spec_.job + "'";
}

int Communicator::LocalIndex(int rank) const {
  auto it = std::lower_bound(local_ranks_.begin(), local_ranks_.end(), rank);
  return it != local_ranks_.end() && *it == rank ? static_cast<int>(it - local_ranks_.begin()) : -1;
}

void Communicator::Attach(int rank, ReadyFn ready) {
  std::unique_lock<std::mutex> lock(mu_);
  if (LocalIndex(rank) < 0 || attached_.count(rank)) {
    lock.unlock();
    ready(Status::Internal("rank " + std::to_string(rank) + " cannot attach to " + Describe() + " on this node"));
    return;
  }
  attached_[rank] = std::move(ready);
  StartLocked();
  NotifyLocked();
}

void Communicator::StartLocked() {
  if (started_) return;
  started_ = true;
  // The worker keeps the communicator alive until every local rank has left.
  std::thread([self = shared_from_this()] {
    NameThisThread("batond-comm");
    self->Worker();
  }).detach();
}

void Communicator::NotifyLocked() {
  changes_.fetch_add(1, std::memory_order_release);
  cv_.notify_all();
}

// Why spin: a small collective completes in a few microseconds once every
// local rank has submitted it, and ranks submit their next operation right
// after the previous one completes. Sleeping on the condition variable costs
// a futex wake-up (tens of microseconds on a busy machine) for each of those
// arrivals; polling briefly catches them at once. The spin only ever follows
// a wake-up or a completed operation, so an idle communicator sleeps.
bool Communicator::SpinUntilChangedLocked(std::unique_lock<std::mutex>& lock) {
  if (services_.progress_spin.count() <= 0) return false;
  const uint64_t seen = changes_.load(std::memory_order_acquire);
  lock.unlock();
  StartPollingSources();
  const auto until = std::chrono::steady_clock::now() + services_.progress_spin;
  bool changed = false;
  for (;;) {
    for (const auto& source : polling_) source->PollSubmissions();
    if ((changed = changes_.load(std::memory_order_acquire) != seen)) break;
    if (std::chrono::steady_clock::now() >= until) {
      StopPollingSources();  // about to sleep: the clients must ring again
      changed = changes_.load(std::memory_order_acquire) != seen;
      break;
    }
    std::this_thread::yield();  // the ranks we wait for may need this core
  }
  lock.lock();
  return changed;
}

void Communicator::StartPollingSources() {
  if (polling_on_ || services_.progress_spin.count() <= 0) return;
  polling_on_ = true;
  for (const auto& weak : sources_) {
    auto source = weak.lock();
    // Two local ranks in one process share a ring: poll it once.
    if (!source || std::find(polling_.begin(), polling_.end(), source) != polling_.end()) continue;
    source->StartPolling();
    polling_.push_back(std::move(source));
  }
}

void Communicator::StopPollingSources() {
  if (!polling_on_) return;
  polling_on_ = false;
  for (const auto& source : polling_) source->StopPolling();
  polling_.clear();
}

bool Communicator::AllDetachedLocked() const {
  return std::all_of(detached_.begin(), detached_.end(), [](bool d) { return d; });
}

void Communicator::Submit(LocalOp op) {
  std::unique_lock<std::mutex> lock(mu_);
  const int idx = LocalIndex(op.rank);
  if (idx < 0) {
    lock.unlock();
    return op.Finish(Status::Internal("operation for a rank that is not on this node"));
  }
  if (!failed_.ok()) {
    lock.unlock();
    return op.Finish(failed_);
  }
  if (op.sig.collective == Collective::kSend || op.sig.collective == Collective::kRecv) {
    return SubmitP2p(std::move(op), lock);
  }
  if (op.seq != next_seq_[idx]) {
    const uint64_t want = next_seq_[idx];
    lock.unlock();
    return op.Finish(Status::InvalidArgument("rank " + std::to_string(op.rank) + " submitted op #" +
                                             std::to_string(op.seq) + " but op #" + std::to_string(want) +
                                             " was expected (client library bug or corrupted ring)"));
  }
  ++next_seq_[idx];
  auto it = pending_.find(op.seq);
  if (it == pending_.end()) it = NewPendingLocked(op.seq);
  PendingOp& slot = it->second;
  slot.ops[idx] = std::move(op);
  slot.arrival_us[idx] = FlightRecorder::NowMicros();
  NotifyLocked();
}

std::map<uint64_t, Communicator::PendingOp>::iterator Communicator::NewPendingLocked(uint64_t seq) {
  std::map<uint64_t, PendingOp>::iterator it;
  if (spare_pending_.empty()) {
    it = pending_.try_emplace(seq).first;
    it->second.ops.resize(local_ranks_.size());
    it->second.arrival_us.resize(local_ranks_.size(), 0);
  } else {
    auto node = std::move(spare_pending_.back());
    spare_pending_.pop_back();
    node.key() = seq;
    it = pending_.insert(std::move(node)).position;
  }
  it->second.first_arrival = std::chrono::steady_clock::now();
  return it;
}

void Communicator::SubmitP2p(LocalOp op, std::unique_lock<std::mutex>& lock) {
  const int peer = op.sig.root;
  const bool is_send = op.sig.collective == Collective::kSend;
  const bool peer_local = LocalIndex(peer) >= 0;
  if (!peer_local) {
    if (!p2p_) {
      // Not connected yet (ready_ is false): cannot happen for a client that
      // waited for init, but a hostile one might try.
      lock.unlock();
      return op.Finish(Status::InvalidArgument("point-to-point operation before the communicator is ready"));
    }
    if (is_send) {
      p2p_->Send(std::move(op));
    } else {
      p2p_->Recv(std::move(op));
    }
    return;
  }
  const int src = is_send ? op.rank : peer;
  const int dst = is_send ? peer : op.rank;
  (is_send ? p2p_sends_ : p2p_recvs_)[{src, dst}].push_back(std::move(op));
  MatchLocalP2pLocked(src, dst);
}

void Communicator::MatchLocalP2pLocked(int src, int dst) {
  auto& sends = p2p_sends_[{src, dst}];
  auto& recvs = p2p_recvs_[{src, dst}];
  while (!sends.empty() && !recvs.empty()) {
    LocalOp s = std::move(sends.front());
    LocalOp r = std::move(recvs.front());
    sends.pop_front();
    recvs.pop_front();
    if (s.bufs.send_bytes != r.bufs.recv_bytes || s.sig.dtype != r.sig.dtype) {
      Status st = Status::InvalidArgument("rank " + std::to_string(dst) + " posted recv of " +
                                          std::to_string(r.sig.count) + " x " + DataTypeName(r.sig.dtype) +
                                          " from rank " + std::to_string(src) + ", which sent " +
                                          std::to_string(s.sig.count) + " x " + DataTypeName(s.sig.dtype));
      s.Finish(st);
      r.Finish(st);
      continue;
    }
    if (s.bufs.send_bytes > 0 && s.bufs.send != r.bufs.recv) std::memmove(r.bufs.recv, s.bufs.send, s.bufs.send_bytes);
    s.Finish(Status::Ok());
    r.Finish(Status::Ok());
  }
}

void Communicator::Detach(int rank, const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int idx = LocalIndex(rank);
    if (idx < 0) return;
    detached_[idx] = true;
    NotifyLocked();
    // A rank still waiting in the fast path for this one would wait forever.
    if (fast_path_ && reason.ok()) {
      fast_path_->Fail(Status::Aborted("rank " + std::to_string(rank) + " destroyed " + Describe() +
                                       " without calling this collective"));
    }
  }
  if (!reason.ok()) Abort(reason);
}

void Communicator::FailAllLocked(const Status& st) {
  for (auto& [seq, p] : pending_) {
    for (auto& op : p.ops) {
      if (!op) continue;
      if (op->on_split) {
        op->on_split(st, nullptr, -1, 0);
      } else {
        op->Finish(st);
      }
    }
  }
  pending_.clear();
  for (auto* queues : {&p2p_sends_, &p2p_recvs_}) {
    for (auto& [pair, q] : *queues) {
      for (auto& op : q) op.Finish(st);
    }
    queues->clear();
  }
}

bool Communicator::AbortLocked(const Status& reason) {
  if (!failed_.ok()) return false;
  failed_ = reason;
  BATON_WARN("{} aborted: {}", Describe(), reason.ToString());
  if (fast_path_) fast_path_->Fail(reason);
  FailAllLocked(reason);
  if (p2p_) p2p_->Close(reason);
  if (mesh_) mesh_->Interrupt();
  NotifyLocked();
  return true;
}

void Communicator::Abort(const Status& reason) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!AbortLocked(reason)) return;
  lock.unlock();
  DumpTrace();
  lock.lock();
  std::vector<std::string> peers;
  for (int n = 0; n < spec_.layout.num_nodes(); ++n) {
    if (n != spec_.my_node && n < static_cast<int>(spec_.node_grpc.size())) peers.push_back(spec_.node_grpc[n]);
  }
  if (peers.empty()) return;
  baton::v1::AbortRequest req;
  req.set_comm_uid(spec_.uid);
  req.set_from_node(spec_.node_names[spec_.my_node]);
  req.set_code(static_cast<int32_t>(reason.code()));
  req.set_reason(reason.message());
  BroadcastAbort(std::move(peers), std::move(req));
}

void Communicator::AbortFromPeer(const Status& reason) {
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = AbortLocked(reason);
  }
  if (aborted) DumpTrace();
}

std::string Communicator::Trace(bool chrome) const {
  return chrome ? recorder_.ToChromeTrace(spec_.node_names[spec_.my_node], spec_.my_node, spec_.name)
                : recorder_.ToJson();
}

void Communicator::StartRecordLocked(uint64_t seq, const PendingOp& p, FlightRecord* r) const {
  r->seq = seq;
  r->sig = OpSignature{};
  r->bytes = 0;
  r->arrivals.clear();  // keeps its capacity: no allocation per operation
  r->end_us = 0;
  r->result.clear();
  bool named = false;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (!p.ops[i]) continue;
    if (!named) r->sig = p.ops[i]->sig;
    named = true;
    r->bytes += p.ops[i]->bufs.send_bytes;
    r->arrivals.push_back({local_ranks_[i], p.arrival_us[i]});
  }
  r->start_us = FlightRecorder::NowMicros();
}

void Communicator::DumpTrace() const {
  if (services_.trace_dir.empty()) return;
  char uid[24];
  std::snprintf(uid, sizeof uid, "%016llx", static_cast<unsigned long long>(spec_.uid));
  std::string safe_job;
  for (char c : spec_.job + "-" + spec_.name) safe_job += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  const std::string path = services_.trace_dir + "/baton-trace-" + safe_job + "-" + uid + "-" +
                           spec_.node_names[spec_.my_node] + ".json";
  const std::string trace = Trace(/*chrome=*/true);
  FILE* f = std::fopen(path.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(trace.data(), 1, trace.size(), f) == trace.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  const int err = errno;
  if (!ok && f != nullptr) std::remove(path.c_str());  // no half-written trace
  if (ok) {
    BATON_WARN("{}: flight recorder written to {}", Describe(), path);
  } else {
    // A full disk must not take the daemon down: say so and go on.
    BATON_WARN("{}: could not write the flight recorder to {}: {}", Describe(), path, std::strerror(err));
  }
}

CommSnapshot Communicator::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  CommSnapshot s;
  s.state = !failed_.ok() ? "failed" : ready_ ? "ready" : "connecting";
  s.error = failed_.ok() ? "" : failed_.ToString();
  s.last_completed_seq = last_completed_seq_;
  s.ops_completed = ops_completed_;
  s.bytes_completed = bytes_completed_;
  if (fast_path_) s.fast_path_ops = fast_path_->OpsEveryRankReached();
  s.local_ranks = local_ranks_;
  return s;
}

std::vector<InflightSnapshot> Communicator::Inflight() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  std::vector<InflightSnapshot> out;
  if (running_seq_ != 0) {
    InflightSnapshot r;
    r.seq = running_seq_;
    r.op = running_sig_.collective == Collective::kSplit ? "comm split" : running_sig_.ToString();
    r.waiting_seconds = std::chrono::duration<double>(now - running_since_).count();
    r.running = true;
    r.arrived = local_ranks_;
    r.arrival_us = running_arrivals_;
    out.push_back(std::move(r));
  }
  for (const auto& [seq, p] : pending_) {
    InflightSnapshot r;
    r.seq = seq;
    r.waiting_seconds = std::chrono::duration<double>(now - p.first_arrival).count();
    for (size_t i = 0; i < p.ops.size(); ++i) {
      (p.ops[i] ? r.arrived : r.missing).push_back(local_ranks_[i]);
      if (p.ops[i]) r.arrival_us.push_back(p.arrival_us[i]);
      if (p.ops[i] && r.op.empty()) {
        r.op = p.ops[i]->sig.collective == Collective::kSplit ? "comm split" : p.ops[i]->sig.ToString();
      }
    }
    out.push_back(std::move(r));
  }
  if (fast_path_) {
    if (auto w = fast_path_->Waiting()) {
      InflightSnapshot r;
      r.seq = w->seq;
      r.op = std::move(w->op);
      r.waiting_seconds = w->waiting_seconds;
      r.arrival_us = std::move(w->arrival_unix_us);
      for (int i : w->arrived) r.arrived.push_back(local_ranks_[i]);
      for (int i : w->missing) r.missing.push_back(local_ranks_[i]);
      out.push_back(std::move(r));
    }
  }
  return out;
}

void Communicator::WarnStragglersLocked(std::chrono::steady_clock::time_point now) {
  if (pending_.empty()) return;
  const auto& [seq, p] = *pending_.begin();
  const auto waited = now - p.first_arrival;
  if (waited < services_.straggler_warning || now < next_straggler_warning_) return;
  // One line per late local rank, then again after twice as long, and so on.
  std::string op;
  for (const auto& o : p.ops) {
    if (o) op = o->sig.collective == Collective::kSplit ? "comm split" : CollectiveName(o->sig.collective);
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", std::chrono::duration<double>(waited).count());
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i]) continue;
    BATON_WARN("{} seq {} on comm \"{}\" (job {}): waiting {} for rank {} (node {}, last completed seq {})", op, seq,
               spec_.name, spec_.job, secs, local_ranks_[i], spec_.node_names[spec_.my_node], last_completed_seq_);
  }
  next_straggler_warning_ = now + waited;
}

Status Communicator::Connect() {
  const int n = spec_.layout.num_nodes();
  if (n == 1) return Status::Ok();
  const auto deadline = std::chrono::steady_clock::now() + spec_.timeout;
  // Connections to each peer node: the collective stripes, then the
  // point-to-point channel. conns[j][c] carries channels[c].
  std::vector<tcp::Channel> channels;
  for (int s = 0; s < spec_.sockets_per_peer; ++s) channels.push_back(tcp::CollectiveStripe(s));
  channels.push_back(tcp::Channel::kPointToPoint);
  const size_t num_channels = channels.size();
  std::vector<std::vector<UniqueFd>> conns(n);
  for (auto& c : conns) c.resize(num_channels);
  const int me = spec_.my_node;
  // Lower node indices dial higher ones. Dialling and the first half of the
  // dialer's handshake never wait for the peer's communicator (its listener
  // parks the connection), then this node authenticates its incoming
  // connections, then it finishes its own dials: every wait points at a
  // lower node, so no cycle of daemons can deadlock.
  auto hello_for = [&](tcp::Channel ch, int from, int to) {
    return tcp::Hello{tcp::kHelloMagic, tcp::kWireVersion, static_cast<uint16_t>(ch), spec_.uid,
                      static_cast<uint32_t>(from), static_cast<uint32_t>(to)};
  };
  std::vector<std::vector<tcp::DialerHandshake>> dialing(n, std::vector<tcp::DialerHandshake>(num_channels));
  for (int j = me + 1; j < n; ++j) {
    for (size_t c = 0; c < num_channels; ++c) {
      UniqueFd fd;
      Status st = tcp::ConnectAndHello(spec_.node_addresses[j], hello_for(channels[c], me, j), deadline, &fd);
      if (st.ok()) st = dialing[j][c].Start(fd.get(), deadline);
      if (!st.ok()) return st.WithContext("connecting to node " + spec_.node_names[j] + ": ");
      conns[j][c] = std::move(fd);
    }
  }
  for (int j = 0; j < me; ++j) {
    for (size_t c = 0; c < num_channels; ++c) {
      UniqueFd fd;
      Status st = services_.broker->Await(spec_.uid, channels[c], static_cast<uint32_t>(j), deadline, &fd);
      if (!st.ok()) {
        return Status::Timeout("node " + spec_.node_names[j] + " (" + spec_.node_addresses[j] +
                               ") did not connect within the timeout; is its daemon reachable from here and back?");
      }
      st = tcp::AuthenticateListener(fd.get(), spec_.secret, hello_for(channels[c], j, me), deadline);
      if (!st.ok()) {
        if (services_.metrics != nullptr) services_.metrics->RecordAuthFailure();
        BATON_WARN("{}: connection claiming to be node {} refused: {}", Describe(), spec_.node_names[j], st.message());
        return st.WithContext("connection from node " + spec_.node_names[j] + ": ");
      }
      conns[j][c] = std::move(fd);
    }
  }
  for (int j = me + 1; j < n; ++j) {
    for (size_t c = 0; c < num_channels; ++c) {
      Status st = dialing[j][c].Finish(conns[j][c].get(), spec_.secret, hello_for(channels[c], me, j), deadline);
      if (!st.ok()) {
        if (services_.metrics != nullptr) services_.metrics->RecordAuthFailure();
        return st.WithContext("authenticating to node " + spec_.node_names[j] + ": ");
      }
    }
  }
  std::vector<std::vector<UniqueFd>> coll(n);
  std::vector<UniqueFd> p2p(n);
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    for (size_t c = 0; c + 1 < num_channels; ++c) coll[j].push_back(std::move(conns[j][c]));
    p2p[j] = std::move(conns[j].back());
  }
  std::vector<std::string> names;
  for (int j = 0; j < n; ++j) names.push_back(spec_.node_names[j] + " " + spec_.node_addresses[j]);
  BATON_INFO(kNet, "{}: connected to {} peer node(s), {} connection(s) per peer node for collective data",
             Describe(), n - 1, spec_.sockets_per_peer);
  std::lock_guard<std::mutex> lock(mu_);
  mesh_ = std::make_unique<tcp::TcpMesh>(names, std::move(coll), services_.progress_spin);
  p2p_ = std::make_unique<P2pLink>(spec_.layout.node_of_rank, spec_.node_names, std::move(p2p),
                                   services_.max_p2p_buffer);
  return Status::Ok();
}

void Communicator::Worker() {
  if (!services_.worker_cpus.empty()) {
    // Run next to the NIC that carries this communicator's data.
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : services_.worker_cpus) {
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    }
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  Status st;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const bool all = cv_.wait_for(lock, spec_.timeout, [&] {
      return attached_.size() == local_ranks_.size() || !failed_.ok();
    });
    if (!all && failed_.ok()) {
      std::vector<int> missing;
      for (int r : local_ranks_) {
        if (!attached_.count(r)) missing.push_back(r);
      }
      failed_ = Status::Timeout("local ranks " + RankList(missing) + " did not attach to " + Describe());
    }
    st = failed_;
  }
  if (st.ok()) {
    st = Connect();
    if (st.ok()) st = CalibrateLinks();
    if (st.ok()) {
      BATON_INFO(kInit, "{} ready: {} ranks on {} nodes, {} local ({}), uid {:x}", Describe(),
                 spec_.layout.world_size(), spec_.layout.num_nodes(), local_ranks_.size(), RankList(local_ranks_),
                 spec_.uid);
    }
  }
  std::vector<ReadyFn> readies;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!st.ok() && failed_.ok()) failed_ = st;
    ready_ = st.ok();
    for (auto& [rank, fn] : attached_) {
      if (fn) readies.push_back(std::move(fn));
      fn = nullptr;
    }
  }
  for (auto& fn : readies) fn(st);

  // Kept across operations so that a small collective allocates nothing here.
  std::vector<LocalOp> ops;
  FlightRecord record;
  while (true) {
    uint64_t seq = 0;  // `ops` is empty here: cleared at the end of each operation
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Wait until every local rank submitted the next operation, but not
      // forever: a rank that never arrives fails the communicator.
      auto ready = [&] {
        if (AllDetachedLocked() || !failed_.ok()) return true;
        if (pending_.empty()) return false;
        const auto& slot = pending_.begin()->second.ops;
        return std::all_of(slot.begin(), slot.end(), [](const auto& o) { return o.has_value(); });
      };
      while (!ready()) {
        // Poll first; sleep only when nothing arrived for a while.
        if (SpinUntilChangedLocked(lock)) continue;
        if (pending_.empty()) {
          cv_.wait(lock);
          continue;
        }
        const auto deadline = pending_.begin()->second.first_arrival + spec_.timeout;
        const auto wake = std::min(deadline, std::chrono::steady_clock::now() + services_.straggler_warning / 4 +
                                                 std::chrono::milliseconds(1));
        cv_.wait_until(lock, wake);
        const auto now = std::chrono::steady_clock::now();
        if (ready() || pending_.empty()) continue;
        WarnStragglersLocked(now);
        if (now >= deadline) {
          const Status late = LateRanksLocked(pending_.begin()->first, pending_.begin()->second);
          FlightRecord r;
          StartRecordLocked(pending_.begin()->first, pending_.begin()->second, &r);
          r.end_us = r.start_us;
          r.result = late.ToString();
          recorder_.Record(&r);
          lock.unlock();
          Abort(late);
          lock.lock();
        }
      }
      if (!failed_.ok()) {
        FailAllLocked(failed_);
        // Closing our connections tells the peer daemons at once.
        if (mesh_) mesh_->Close();
      }
      if (AllDetachedLocked() || !failed_.ok()) {
        if (AllDetachedLocked()) break;
        // Failed but ranks still attached: keep failing their submissions
        // until they leave. Those now come with a doorbell.
        lock.unlock();
        StopPollingSources();
        lock.lock();
        cv_.wait(lock, [&] { return AllDetachedLocked() || !pending_.empty(); });
        continue;
      }
      seq = pending_.begin()->first;
      StartRecordLocked(seq, pending_.begin()->second, &record);
      for (auto& o : pending_.begin()->second.ops) {
        ops.push_back(std::move(*o));
        o.reset();
      }
      sources_.resize(ops.size());
      for (size_t i = 0; i < ops.size(); ++i) sources_[i] = ops[i].source;
      // The slot (its map node and vectors) serves a later operation.
      if (spare_pending_.size() < kMaxSparePending) {
        spare_pending_.push_back(pending_.extract(pending_.begin()));
      } else {
        pending_.erase(pending_.begin());
      }
      running_seq_ = seq;
      running_sig_ = ops[0].sig;  // formatted only if someone asks (Inflight)
      running_since_ = std::chrono::steady_clock::now();
      running_arrivals_.clear();
      for (const auto& [rank, us] : record.arrivals) running_arrivals_.push_back(us);
      next_straggler_warning_ = {};
    }
    // Submissions that come while this one runs (other communicators',
    // point-to-point) must not wait for this worker: they ring again.
    StopPollingSources();
    const auto started = std::chrono::steady_clock::now();
    Status result = RunCollective(ops, seq);
    if (services_.metrics != nullptr) {
      services_.metrics->RecordOp(ops[0].sig.collective, record.bytes, std::chrono::steady_clock::now() - started,
                                  result.ok());
    }
    record.end_us = FlightRecorder::NowMicros();
    record.result = result.ok() ? "ok" : result.ToString();
    recorder_.Record(&record);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_seq_ = 0;
      if (result.ok()) {
        last_completed_seq_ = seq;
        ++ops_completed_;
        for (const LocalOp& o : ops) bytes_completed_ += o.bufs.send_bytes;
      }
    }
    if (!result.ok()) Abort(result);
    ops.clear();  // let go of the clients' buffers now, not at the next operation
  }
  StopPollingSources();
  if (mesh_) mesh_->Close();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (p2p_) p2p_->Close(Status::Aborted(Describe() + " was destroyed"));
  }
  services_.broker->Forget(spec_.uid);
  services_.registry->Remove(spec_.uid);
  BATON_INFO(kInit, "{} closed on this node", Describe());
}

Status Communicator::CheckSignatures(const std::vector<LocalOp>& ops, uint64_t seq) const {
  bool same = std::all_of(ops.begin(), ops.end(), [&](const LocalOp& o) { return o.sig == ops[0].sig; });
  if (same) return Status::Ok();
  // Group ranks by what they called: "ranks 0,1 called allreduce(...); rank 2 called broadcast(...)".
  std::vector<std::pair<OpSignature, std::vector<int>>> groups;
  for (const LocalOp& o : ops) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == o.sig; });
    if (it == groups.end()) {
      groups.push_back({o.sig, {o.rank}});
    } else {
      it->second.push_back(o.rank);
    }
  }
  std::string msg = "mismatched collectives as op #" + std::to_string(seq) + " on " + Describe() + ": ";
  for (size_t i = 0; i < groups.size(); ++i) {
    msg += (i ? "; " : "") + std::string(groups[i].second.size() > 1 ? "ranks " : "rank ") +
           RankList(groups[i].second) + " called " + groups[i].first.ToString();
  }
  return Status::Mismatch(msg);
}

Status Communicator::LateRanksLocked(uint64_t seq, const PendingOp& p) const {
  std::vector<int> late;
  std::string what;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (!p.ops[i]) {
      late.push_back(local_ranks_[i]);
    } else if (what.empty()) {
      what = p.ops[i]->sig.collective == Collective::kSplit ? "comm split" : p.ops[i]->sig.ToString();
    }
  }
  return Status::Timeout(what + " as op #" + std::to_string(seq) + " on " + Describe() + ": rank" +
                         (late.size() > 1 ? "s " : " ") + RankList(late) + " on node " +
                         spec_.node_names[spec_.my_node] + " did not call it within " + Seconds(spec_.timeout));
}

Status Communicator::DiagnoseNetworkTimeout(uint64_t seq, const OpSignature& sig, const Status& st) const {
  // Ask the other nodes which of their ranks have not called this operation.
  std::vector<std::string> late;
  for (int n = 0; n < spec_.layout.num_nodes(); ++n) {
    if (n == spec_.my_node || n >= static_cast<int>(spec_.node_grpc.size())) continue;
    baton::v1::ArrivalsResponse peer;
    Status ps = GetPeerArrivals(spec_.node_grpc[n], spec_.uid, seq, std::chrono::milliseconds(1000), &peer);
    if (!ps.ok()) {
      late.push_back("node " + spec_.node_names[n] + " is not answering (" + ps.message() + ")");
      continue;
    }
    for (const auto& a : peer.ranks()) {
      if (!a.arrived()) {
        late.push_back("rank " + std::to_string(a.rank()) + " on node " + spec_.node_names[n] +
                       " did not call it (last completed seq " + std::to_string(a.last_completed_seq()) + ")");
      }
    }
  }
  std::string why = st.message();
  if (!late.empty()) {
    why.clear();
    for (const auto& l : late) why += (why.empty() ? "" : "; ") + l;
  }
  return Status::Timeout(sig.ToString() + " as op #" + std::to_string(seq) + " on " + Describe() + " timed out after " +
                         Seconds(spec_.timeout) + ": " + why);
}

void Communicator::CountTraffic(const Schedule& schedule, bool on_gpus) const {
  uint64_t sent = 0, received = 0, local = 0;
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      switch (s.kind) {
        case StepKind::kSend: sent += s.src.bytes; break;
        case StepKind::kRecv:
        case StepKind::kRecvReduce: received += s.dst.bytes; break;
        case StepKind::kCopy:
        case StepKind::kReduce: local += s.src.bytes; break;
        case StepKind::kDivide: break;
      }
    }
  }
  services_.metrics->RecordNetwork(sent, received);
  if (on_gpus) {
    services_.metrics->RecordGpuCopy(local);
  } else {
    services_.metrics->RecordLocalCopy(local);
  }
}

Status Communicator::CalibrateLinks() {
  if (spec_.layout.num_nodes() == 1) return Status::Ok();
  LinkParams measured;
  BATON_RETURN_IF_ERROR(MeasureLinks(*mesh_, spec_.uid, spec_.layout.num_nodes(), spec_.my_node,
                                     std::chrono::steady_clock::now() + spec_.timeout, &link_, &measured));
  BATON_LOG(spdlog::level::debug, Subsys::kTuning, "{}: links calibrated by node {}: {} (this node measured {})",
            Describe(), spec_.node_names[0], link_.ToString(), measured.ToString());
  return Status::Ok();
}

Algorithm Communicator::ResolveAlgorithm(const PlanInput& plan) {
  if (spec_.algorithm != Algorithm::kAuto || spec_.layout.num_nodes() == 1 ||
      plan.sig.collective == Collective::kSplit || plan.sig.count == 0) {
    return ChooseAlgorithm(plan.sig, spec_.layout.num_nodes(), spec_.algorithm);
  }
  const std::pair<Collective, uint64_t> key{plan.sig.collective, plan.sig.count * DataTypeSize(plan.sig.dtype)};
  if (auto it = algorithm_cache_.find(key); it != algorithm_cache_.end()) return it->second;
  PlanInput p = plan;
  // Every node prices every node's schedule; in-place ranks are this
  // node's own knowledge, so they are left out for all to agree.
  p.in_place_ranks.clear();
  const std::vector<AlgorithmCost> ranked = RankAlgorithms(p, link_);
  const Algorithm chosen =
      ranked.empty() ? ChooseAlgorithm(plan.sig, spec_.layout.num_nodes(), spec_.algorithm) : ranked.front().algorithm;
  std::string costs;
  for (const AlgorithmCost& c : ranked) {
    costs += fmt::format("{}{} {:.1f} us ({} network phases)", costs.empty() ? "" : ", ", AlgorithmName(c.algorithm),
                         c.cost.total_us, c.cost.network_phases);
  }
  BATON_LOG(spdlog::level::debug, Subsys::kTuning, "{} {} B on {} nodes of {}: predicted {} -> {}; {}",
            CollectiveName(plan.sig.collective), key.second, spec_.layout.num_nodes(), Describe(), costs,
            AlgorithmName(chosen), link_.ToString());
  if (algorithm_cache_.size() >= 4096) algorithm_cache_.clear();  // sizes seen in training are few
  algorithm_cache_[key] = chosen;
  return chosen;
}

Status Communicator::RunCollective(std::vector<LocalOp>& ops, uint64_t seq) {
  Status st = CheckSignatures(ops, seq);
  const OpSignature sig = ops[0].sig;
  std::vector<uint8_t> split_in;
  std::vector<uint8_t> split_out;
  if (st.ok()) {
    std::vector<RankBuffers>& buffers = buffers_;
    buffers.assign(static_cast<size_t>(spec_.layout.world_size()), RankBuffers{});
    PlanInput plan{sig, &spec_.layout, spec_.my_node, spec_.algorithm, {}};
    if (sig.collective == Collective::kSplit) {
      // The split's all-gather runs on daemon memory: (color, key) per rank.
      split_in.resize(ops.size() * 8);
      split_out.resize(static_cast<size_t>(spec_.layout.world_size()) * 8);
      for (size_t i = 0; i < ops.size(); ++i) {
        std::memcpy(&split_in[i * 8], &ops[i].color, 4);
        std::memcpy(&split_in[i * 8 + 4], &ops[i].key, 4);
        buffers[ops[i].rank] = {&split_in[i * 8], 8, split_out.data(), split_out.size()};
      }
    } else {
      for (const LocalOp& o : ops) {
        buffers[o.rank] = o.bufs;
        if (o.bufs.send != nullptr && o.bufs.send == o.bufs.recv) plan.in_place_ranks.push_back(o.rank);
      }
    }
    plan.algorithm = ResolveAlgorithm(plan);
    // Training repeats the same few collectives: the schedule of the last
    // one is kept (it names buffers by rank and offset, not by address).
    if (!schedule_cached_ || !(cached_plan_.sig == plan.sig) || cached_plan_.algorithm != plan.algorithm ||
        cached_plan_.in_place_ranks != plan.in_place_ranks) {
      schedule_cached_ = false;
      cached_schedule_ = Schedule{};
      st = BuildSchedule(plan, &cached_schedule_);
      if (st.ok()) {
        cached_plan_ = plan;
        schedule_cached_ = true;
      }
    }
    const Schedule& schedule = cached_schedule_;
    BATON_LOG(spdlog::level::trace, Subsys::kTuning, "{} op #{} on {}: {} over {} node(s), {} phases",
              sig.ToString(), seq, Describe(), AlgorithmName(plan.algorithm), spec_.layout.num_nodes(),
              schedule.phases.size());
    if (st.ok()) {
      // The node hosting a late rank times out first and tells everyone why;
      // the network wait gets a grace period so that its diagnosis wins.
      const auto grace = std::max<std::chrono::milliseconds>(std::chrono::seconds(1), spec_.timeout / 10);
      const Schedule* gpu_schedule = nullptr;  // what ran on the GPUs, if anything did
      const Schedule* host_schedule = &schedule;  // what runs on host memory (staged GPU buffers included)
      DeviceEnds& ends = device_ends_;
      if (spec_.layout.num_nodes() == 1 && services_.gpu_collectives) {
        st = RunOnDevices(schedule, ops, spec_.layout.world_size(), services_.gpu_allreduce, &gpu_schedule);
      } else if (services_.gpu_collectives) {
        st = ends.RunHead(schedule, ops, spec_.layout.world_size(), services_.gpu_allreduce, &host_schedule);
      }
      const bool on_gpus = gpu_schedule != nullptr;
      StagingPipeline staging;
      if (st.ok() && !on_gpus) st = StageDeferred(ops, *host_schedule, ends, &buffers, &staging);
      ExecutionContext ctx{&buffers, &scratch_, mesh_.get(), MessageStamp{spec_.uid, seq, sig},
                           std::chrono::steady_clock::now() + spec_.timeout + grace, services_.pool,
                           staging.active() ? &staging : nullptr, ScratchView{}};
      if (ends.uses_scratch()) ctx.fixed_scratch = ends.host_scratch();
      if (st.ok() && !on_gpus) st = ExecuteSchedule(*host_schedule, ctx);
      if (Status copied = staging.Finish(); st.ok()) st = copied;
      if (st.ok() && ends.active()) st = ends.RunTail();
      if (st.ok() && services_.metrics != nullptr) {
        CountTraffic(on_gpus ? *gpu_schedule : *host_schedule, on_gpus);
        if (ends.active()) {
          CountTraffic(ends.head(), true);
          CountTraffic(ends.tail(), true);
        }
      }
      if (st.code() == Code::kTimeout) st = DiagnoseNetworkTimeout(seq, sig, st);
    }
  }
  {
    // An abort that raced with this collective explains its failure better
    // than the closed socket it caused. When a peer closed on us, its
    // Peer.AbortCommunicator message with the cause is usually a moment away.
    std::unique_lock<std::mutex> lock(mu_);
    if (st.code() == Code::kRemoteError && failed_.ok()) {
      cv_.wait_for(lock, std::chrono::seconds(1), [&] { return !failed_.ok(); });
    }
    if (!st.ok() && !failed_.ok()) st = failed_;
  }
  // The ranks submit their next operation as soon as they see this one
  // done: from now on this worker looks for it (no doorbell needed).
  StartPollingSources();
  if (sig.collective == Collective::kSplit && st.ok()) {
    FinishSplit(ops, split_out);
  } else {
    for (const LocalOp& o : ops) {
      if (o.on_split) {
        o.on_split(st, nullptr, -1, 0);
      } else {
        o.Finish(st);
      }
    }
  }
  BATON_DEBUG(kColl, "{} op #{} {} on {}: {}", CollectiveName(sig.collective), seq, sig.ToString(), Describe(),
              st.ToString());
  return st;
}

Status Communicator::StageDeferred(std::vector<LocalOp>& ops, const Schedule& schedule, DeviceEnds& ends,
                                   std::vector<RankBuffers>* buffers, StagingPipeline* pipeline) {
  std::vector<StagedSpan> spans;
  for (LocalOp& o : ops) {
    if (!o.device || o.device->staged() || !o.device->has_device_buffers()) continue;
    if (!services_.pinned) return Status::Internal("GPU buffers on a daemon without a staging pool");
    // With the ends on the GPUs, `schedule` is the middle: buffers it never
    // touches (the other local ranks' of an AllReduce) need no host memory.
    const bool send_used = !ends.active() || TouchesBuffer(schedule, BufKind::kSend, o.rank);
    const bool recv_used = !ends.active() || TouchesBuffer(schedule, BufKind::kRecv, o.rank);
    BATON_RETURN_IF_ERROR(o.device->StageLater(*services_.pinned, &o.bufs, &spans, send_used, recv_used));
    (*buffers)[o.rank] = o.bufs;
  }
  if (ends.active() && !services_.pinned) return Status::Internal("GPU ends on a daemon without a staging pool");
  if (ends.active()) BATON_RETURN_IF_ERROR(ends.AddHeadOutputs(*buffers, *services_.pinned, &spans));
  if (spans.empty()) return Status::Ok();
  const ScratchView scratch = ends.host_scratch();  // where the middle runs, when the ends use scratch
  return pipeline->Start(schedule, *buffers, std::move(spans), ends.uses_scratch() ? &scratch : nullptr);
}

void Communicator::FinishSplit(std::vector<LocalOp>& ops, const std::vector<uint8_t>& gathered) {
  const int world = spec_.layout.world_size();
  std::vector<int32_t> color(world);
  std::vector<int32_t> key(world);
  for (int r = 0; r < world; ++r) {
    std::memcpy(&color[r], &gathered[static_cast<size_t>(r) * 8], 4);
    std::memcpy(&key[r], &gathered[static_cast<size_t>(r) * 8 + 4], 4);
  }
  for (LocalOp& op : ops) {
    if (op.color < 0) {
      op.on_split(Status::Ok(), nullptr, -1, 0);
      continue;
    }
    std::vector<int> members;
    for (int r = 0; r < world; ++r) {
      if (color[r] == op.color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return key[a] < key[b]; });
    CommSpec spec;
    spec.job = spec_.job;
    spec.name = spec_.name + "/split" + std::to_string(op.seq) + "." + std::to_string(op.color);
    spec.uid = Mix(spec_.uid ^ Mix(op.seq) ^ Mix(static_cast<uint64_t>(static_cast<uint32_t>(op.color)) << 1));
    spec.timeout = spec_.timeout;
    spec.algorithm = spec_.algorithm;
    spec.secret = spec_.secret;
    // Renumber the nodes that hold members, in order of first appearance.
    std::map<int, int> node_index;
    std::vector<int> node_of_rank;
    for (int old : members) {
      const int old_node = spec_.layout.node_of_rank[old];
      auto [it, inserted] = node_index.try_emplace(old_node, static_cast<int>(node_index.size()));
      if (inserted) {
        spec.node_names.push_back(spec_.node_names[old_node]);
        spec.node_addresses.push_back(spec_.node_addresses[old_node]);
        spec.node_grpc.push_back(spec_.node_grpc[old_node]);
      }
      node_of_rank.push_back(it->second);
    }
    (void)NodeLayout::FromNodeOfRank(node_of_rank, &spec.layout);
    spec.my_node = node_index.at(spec_.my_node);
    const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), op.rank) - members.begin());
    auto comm = services_.registry->GetOrCreate(spec, services_);
    const int size = static_cast<int>(members.size());
    comm->Attach(new_rank, [comm, new_rank, size, done = op.on_split](const Status& st) {
      done(st, st.ok() ? comm : nullptr, new_rank, size);
    });
  }
}

}  // namespace baton
