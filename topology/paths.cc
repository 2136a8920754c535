// Path classes between PCI devices and NIC choice per GPU.
#include <algorithm>

#include "topology/topology.h"

namespace baton::topo {

const char* PathClassName(PathClass c) {
  switch (c) {
    case PathClass::kNVL: return "NVL";
    case PathClass::kPIX: return "PIX";
    case PathClass::kPXB: return "PXB";
    case PathClass::kPHB: return "PHB";
    case PathClass::kNODE: return "NODE";
    case PathClass::kSYS: return "SYS";
  }
  return "?";
}

const PciDevice* Topology::FindPci(const std::string& bdf) const {
  for (const auto& d : pci) {
    if (d.bdf == bdf) return &d;
  }
  return nullptr;
}

PathClass Topology::Path(const std::string& a, const std::string& b) const {
  // GPUs joined by NVLink (directly, or both on NVSwitches) beat any PCIe path.
  int ga = -1, gb = -1;
  for (const Gpu& g : gpus) {
    if (g.bdf == a) ga = g.index;
    if (g.bdf == b) gb = g.index;
  }
  if (ga >= 0 && gb >= 0 && ga != gb) {
    if (nvlinks.count({ga, gb}) || nvlinks.count({gb, ga})) return PathClass::kNVL;
    if (gpus[ga].nvswitch_links > 0 && gpus[gb].nvswitch_links > 0) return PathClass::kNVL;
  }
  const PciDevice* x = FindPci(a);
  const PciDevice* y = FindPci(b);
  if (x == nullptr || y == nullptr) return PathClass::kSYS;
  if (x->root_complex != y->root_complex) {
    return x->numa_node == y->numa_node ? PathClass::kNODE : PathClass::kSYS;
  }
  // Chains run from the root port down to the device. The shared prefix is
  // the part of the PCIe tree both paths use.
  size_t common = 0;
  while (common < x->chain.size() && common < y->chain.size() && x->chain[common] == y->chain[common]) ++common;
  if (common == 0) return PathClass::kPHB;  // they meet only at the host bridge
  // Below the shared upstream port each side crosses one downstream port
  // and reaches its device: that is one switch. Anything deeper is several.
  const size_t below_x = x->chain.size() - common;
  const size_t below_y = y->chain.size() - common;
  return below_x <= 2 && below_y <= 2 ? PathClass::kPIX : PathClass::kPXB;
}

int Topology::NumaOfInterface(const std::string& ifname) const {
  for (const auto& n : nics) {
    if (n.name != ifname || n.bdf.empty()) continue;
    if (const PciDevice* d = FindPci(n.bdf)) return d->numa_node;
  }
  return -1;
}

std::vector<int> ParseCpuList(const std::string& list) {
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    try {
      const int lo = std::stoi(item.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
      // Kernels support at most 8192 CPUs; anything beyond (or reversed) is
      // not a CPU list, and must not expand into billions of entries.
      constexpr int kMaxCpuId = 1 << 16;
      if (lo < 0 || hi < lo || hi >= kMaxCpuId) return {};
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    } catch (...) {
      return {};  // malformed list: better no placement than a wrong one
    }
    pos = comma + 1;
  }
  return cpus;
}

std::vector<int> Topology::CpusOfNuma(int numa_node) const {
  for (const auto& n : numa) {
    if (n.id == numa_node) return ParseCpuList(n.cpulist);
  }
  return {};
}

std::vector<int> Topology::ClosestNicPerGpu() const {
  std::vector<int> out;
  for (const Gpu& g : gpus) {
    int best = -1;
    for (size_t i = 0; i < nics.size(); ++i) {
      const Nic& n = nics[i];
      if (n.is_virtual || n.bdf.empty() || n.operstate == "down") continue;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const Nic& b = nics[best];
      const PathClass pn = Path(g.bdf, n.bdf);
      const PathClass pb = Path(g.bdf, b.bdf);
      if (pn < pb || (pn == pb && n.speed_mbps > b.speed_mbps)) best = static_cast<int>(i);
    }
    out.push_back(best);
  }
  return out;
}

}  // namespace baton::topo
