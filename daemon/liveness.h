// Liveness: heartbeats between daemons that share communicators. A peer
// daemon that does not answer for `limit` is declared dead and every
// communicator that includes it is aborted with that reason, so ranks learn
// it in seconds even when no data is moving (a hung or partitioned node
// keeps its TCP connections open and would otherwise only be noticed at
// the collective timeout).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/comm_registry.h"

namespace baton {

class Liveness {
 public:
  Liveness(CommRegistry* registry, std::string node_name, std::chrono::milliseconds interval,
           std::chrono::milliseconds limit);
  ~Liveness();

 private:
  void Run();
  void Round();

  CommRegistry* registry_;
  const std::string node_name_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds limit_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_answer_;  // by gRPC address
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace baton
