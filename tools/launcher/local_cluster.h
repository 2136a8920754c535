// LocalCluster: real batond processes on this machine, one per simulated
// node, each with its own Unix socket and loopback ports; node 0 serves
// rendezvous. Stopped (SIGTERM, then SIGKILL) on destruction. Used by
// baton-run and by the integration tests.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace baton::launcher {

// How to start one node's daemon: an argv prefix (e.g. `ip netns exec NS`)
// and the address its data and gRPC ports bind to.
struct NodeLaunch {
  std::vector<std::string> prefix;
  std::string host = "127.0.0.1";
  std::vector<int> cpus;  // the daemon runs on these CPUs only (empty: any)
};

// This process's CPUs cut into `nodes` equal, disjoint shares, so that each
// simulated node owns its cores as a real node does (see baton-run --bind).
// Empty when there are fewer CPUs than nodes.
std::vector<std::vector<int>> SplitCpus(int nodes);

// Makes the calling thread (and what it starts from now on) run on `cpus`
// only; empty `cpus` allows every CPU this process may use. Returns false
// if the kernel refused.
bool BindThisThread(const std::vector<int>& cpus);

class LocalCluster {
 public:
  // Starts `nodes` daemons from the batond binary at `batond`. Daemon logs
  // go to dir()/nodeN.log. `launch[n]`, when given, says how to start node n.
  LocalCluster(const std::string& batond, int nodes, std::vector<std::string> extra_args = {},
               std::vector<NodeLaunch> launch = {});
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  const Status& status() const { return status_; }
  int nodes() const { return static_cast<int>(sockets_.size()); }
  const std::string& socket(int node) const { return sockets_[node]; }
  const std::string& rendezvous() const { return rendezvous_; }
  const std::string& dir() const { return dir_; }
  pid_t pid(int node) const { return pids_[node]; }
  // Kills one daemon (SIGKILL) to simulate a node failure.
  void Kill(int node);
  // True while the daemon process of `node` is running.
  bool Alive(int node);
  // Kills the daemon of `node` if it runs and starts a new one on the same
  // socket (as systemd's Restart= would). Node 0's new rendezvous address
  // is not passed to daemons already running.
  Status Restart(int node);

 private:
  Status StartNode(int node, const std::vector<std::string>& extra_args);

  std::string batond_;
  std::vector<std::string> extra_args_;
  std::vector<NodeLaunch> launch_;
  Status status_;
  std::string dir_;
  std::string rendezvous_;
  std::vector<std::string> sockets_;
  std::vector<pid_t> pids_;
};

}  // namespace baton::launcher
