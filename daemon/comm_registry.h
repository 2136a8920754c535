// CommRegistry: the communicators this daemon takes part in, by uid.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/communicator.h"

namespace baton {

class CommRegistry {
 public:
  // Returns the communicator with spec.uid, creating it from `spec` if this
  // is the first local rank to arrive.
  std::shared_ptr<Communicator> GetOrCreate(const CommSpec& spec, DaemonServices services);
  void Remove(uint64_t uid);
  std::shared_ptr<Communicator> Find(uint64_t uid) const;
  std::vector<std::shared_ptr<Communicator>> All() const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, std::weak_ptr<Communicator>> comms_;
};

}  // namespace baton
