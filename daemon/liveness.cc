#include "daemon/liveness.h"

#include <set>
#include <vector>

#include "common/logging.h"
#include "common/thread_name.h"
#include "control/peer_client.h"

namespace baton {

Liveness::Liveness(CommRegistry* registry, std::string node_name, std::chrono::milliseconds interval,
                   std::chrono::milliseconds limit)
    : registry_(registry), node_name_(std::move(node_name)), interval_(interval), limit_(limit) {
  thread_ = std::thread([this] {
    NameThisThread("batond-liveness");
    Run();
  });
}

Liveness::~Liveness() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Liveness::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    Round();
    lock.lock();
  }
}

void Liveness::Round() {
  struct Peer {
    std::string name;
    std::vector<std::shared_ptr<Communicator>> comms;
  };
  std::map<std::string, Peer> peers;
  for (auto& comm : registry_->All()) {
    const CommSpec& spec = comm->spec();
    if (comm->Snapshot().state == "failed") continue;
    for (int n = 0; n < spec.layout.num_nodes(); ++n) {
      if (n == spec.my_node || n >= static_cast<int>(spec.node_grpc.size())) continue;
      Peer& p = peers[spec.node_grpc[n]];
      p.name = spec.node_names[n];
      p.comms.push_back(comm);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  // Forget peers we no longer share a communicator with.
  for (auto it = last_answer_.begin(); it != last_answer_.end();) {
    it = peers.count(it->first) ? std::next(it) : last_answer_.erase(it);
  }
  for (auto& [address, peer] : peers) {
    auto [it, inserted] = last_answer_.try_emplace(address, now);
    const auto deadline = std::min<std::chrono::milliseconds>(interval_, std::chrono::milliseconds(2000));
    if (PingPeer(address, node_name_, deadline).ok()) {
      it->second = std::chrono::steady_clock::now();
      continue;
    }
    const auto silent = std::chrono::steady_clock::now() - it->second;
    if (silent < limit_) continue;
    const double secs = std::chrono::duration<double>(silent).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", secs);
    BATON_WARN("peer daemon on node {} ({}) has not answered heartbeats for {}: declaring it dead", peer.name,
               address, buf);
    for (auto& comm : peer.comms) {
      comm->Abort(Status::Remote("node " + peer.name + " (" + address + ") is not responding: its daemon missed "
                                 "heartbeats for " + buf + " (dead, hung, or cut off from node " + node_name_ + ")"));
    }
    last_answer_.erase(it);
  }
}

}  // namespace baton
