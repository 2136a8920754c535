// Network interface selection, with NCCL_SOCKET_IFNAME's syntax
// (BATON_SOCKET_IFNAME):
//   "eth,ens"   interfaces whose names start with eth or ens
//   "^docker"   all but those starting with docker
//   "=eth0"     exactly eth0 ("^=eth0": all but exactly eth0)
// Without a setting: every interface except loopback, docker*, veth* and
// link-local addresses, falling back to loopback when nothing else exists.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace baton::topo {

struct InterfaceAddress {
  std::string name;
  std::string address;  // numeric, without brackets
  bool ipv6 = false;
  bool loopback = false;
  bool link_local = false;
  bool up = true;
};

// The addresses of this machine's interfaces (getifaddrs).
Status ListInterfaces(std::vector<InterfaceAddress>* out);

class IfnameFilter {
 public:
  static IfnameFilter Parse(const std::string& spec);
  bool Matches(const std::string& ifname) const;
  bool empty() const { return names_.empty(); }

 private:
  bool exclude_ = false;
  bool exact_ = false;
  std::vector<std::string> names_;
};

// RDMA devices chosen by BATON_IB_HCA (NCCL_IB_HCA syntax: "mlx5_0,mlx5_1",
// "^mlx5_3", "=mlx5_0"; a ":port" suffix is accepted and ignored here).
// Empty spec: every device. An error if the spec matches nothing.
Status SelectRdmaDevices(const std::vector<std::string>& devices, const std::string& spec,
                         std::vector<std::string>* out);

// The usable addresses, IPv4 first, in interface-name order. An error if
// `spec` matches nothing; the message lists what exists.
Status SelectInterfaces(const std::vector<InterfaceAddress>& all, const std::string& spec,
                        std::vector<InterfaceAddress>* out);

}  // namespace baton::topo
