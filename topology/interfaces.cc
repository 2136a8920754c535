#include "topology/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>

namespace baton::topo {

Status ListInterfaces(std::vector<InterfaceAddress>* out) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return Status::Errno("getifaddrs", errno);
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress a;
    a.name = i->ifa_name;
    a.ipv6 = family == AF_INET6;
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    a.up = (i->ifa_flags & IFF_UP) != 0;
    char buf[INET6_ADDRSTRLEN] = {};
    if (family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      ::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
      a.link_local = (ntohl(sin->sin_addr.s_addr) >> 16) == 0xa9fe;  // 169.254/16
    } else {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      ::inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof buf);
      a.link_local = IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr);
    }
    a.address = buf;
    out->push_back(a);
  }
  ::freeifaddrs(list);
  return Status::Ok();
}

IfnameFilter IfnameFilter::Parse(const std::string& spec) {
  IfnameFilter f;
  std::string s = spec;
  if (!s.empty() && s[0] == '^') {
    f.exclude_ = true;
    s.erase(0, 1);
  }
  if (!s.empty() && s[0] == '=') {
    f.exact_ = true;
    s.erase(0, 1);
  }
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) f.names_.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return f;
}

bool IfnameFilter::Matches(const std::string& ifname) const {
  bool hit = false;
  for (const auto& n : names_) {
    if (exact_ ? ifname == n : ifname.rfind(n, 0) == 0) hit = true;
  }
  return exclude_ ? !hit : hit;
}

Status SelectInterfaces(const std::vector<InterfaceAddress>& all, const std::string& spec,
                        std::vector<InterfaceAddress>* out) {
  out->clear();
  const IfnameFilter filter = IfnameFilter::Parse(spec);
  auto default_ok = [](const InterfaceAddress& a) {
    return !a.loopback && !a.link_local && a.name.rfind("docker", 0) != 0 && a.name.rfind("veth", 0) != 0;
  };
  for (const auto& a : all) {
    if (!a.up) continue;
    if (filter.empty() ? default_ok(a) : filter.Matches(a.name)) out->push_back(a);
  }
  if (out->empty() && filter.empty()) {
    for (const auto& a : all) {
      if (a.up && a.loopback) out->push_back(a);  // a single machine: loopback is all there is
    }
  }
  if (out->empty()) {
    std::string have;
    for (const auto& a : all) have += (have.empty() ? "" : ", ") + a.name + " (" + a.address + ")";
    return Status::InvalidArgument("BATON_SOCKET_IFNAME='" + spec + "' matches no interface that is up; interfaces here: " +
                                   (have.empty() ? "none" : have));
  }
  std::stable_sort(out->begin(), out->end(), [](const InterfaceAddress& a, const InterfaceAddress& b) {
    if (a.ipv6 != b.ipv6) return !a.ipv6;
    return a.name < b.name;
  });
  return Status::Ok();
}

Status SelectRdmaDevices(const std::vector<std::string>& devices, const std::string& spec,
                         std::vector<std::string>* out) {
  out->clear();
  // Drop ":port" suffixes from every item of the list.
  std::string names;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string item = spec.substr(pos, comma - pos);
    if (auto colon = item.find(':'); colon != std::string::npos) item.resize(colon);
    names += (pos ? "," : "") + item;
    pos = comma + 1;
  }
  const IfnameFilter filter = IfnameFilter::Parse(names);
  for (const auto& d : devices) {
    if (filter.empty() || filter.Matches(d)) out->push_back(d);
  }
  if (out->empty() && !filter.empty()) {
    std::string have;
    for (const auto& d : devices) have += (have.empty() ? "" : ", ") + d;
    return Status::InvalidArgument("BATON_IB_HCA='" + spec + "' matches no RDMA device; devices here: " +
                                   (have.empty() ? "none" : have));
  }
  return Status::Ok();
}

}  // namespace baton::topo
