#include "daemon/comm_registry.h"

namespace baton {

std::shared_ptr<Communicator> CommRegistry::GetOrCreate(const CommSpec& spec, DaemonServices services) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(spec.uid);
  if (it != comms_.end()) {
    if (auto comm = it->second.lock()) return comm;
  }
  auto comm = std::make_shared<Communicator>(spec, services);
  comms_[spec.uid] = comm;
  return comm;
}

void CommRegistry::Remove(uint64_t uid) {
  std::lock_guard<std::mutex> lock(mu_);
  comms_.erase(uid);
}

std::shared_ptr<Communicator> CommRegistry::Find(uint64_t uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = comms_.find(uid);
  return it == comms_.end() ? nullptr : it->second.lock();
}

std::vector<std::shared_ptr<Communicator>> CommRegistry::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Communicator>> out;
  for (const auto& [uid, weak] : comms_) {
    if (auto c = weak.lock()) out.push_back(std::move(c));
  }
  return out;
}

size_t CommRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return comms_.size();
}

}  // namespace baton
