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

size_t CommRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return comms_.size();
}

}  // namespace baton
