// NetnsSet: one Linux network namespace per simulated node, joined by a
// bridge in the caller's namespace, so that daemons have their own
// addresses and links can be cut (`ip link set ... down`). Needs root
// (CAP_NET_ADMIN) and iproute2. Everything is removed on destruction.
//
// Addresses are 10.250.S.(n+1)/24 with S derived from the creating pid;
// traffic stays inside the namespaces this object created.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace baton::launcher {

class NetnsSet {
 public:
  NetnsSet() = default;
  ~NetnsSet();
  NetnsSet(const NetnsSet&) = delete;
  NetnsSet& operator=(const NetnsSet&) = delete;

  Status Create(int nodes);

  const std::string& name(int node) const { return names_[node]; }
  const std::string& address(int node) const { return addresses_[node]; }
  // argv prefix that runs a command inside the node's namespace.
  std::vector<std::string> ExecPrefix(int node) const;
  // Brings the node's link to the bridge down (cut) or up again.
  Status SetLink(int node, bool up);

 private:
  std::string ip_;  // path of the ip binary
  std::string bridge_;
  std::vector<std::string> names_;
  std::vector<std::string> addresses_;
  std::vector<std::string> host_links_;  // bridge-side veth ends
};

// Runs argv (no shell) and waits; OK if it exited 0.
Status RunCommand(const std::vector<std::string>& argv);

}  // namespace baton::launcher
