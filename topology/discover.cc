#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>

#include "topology/topology.h"

namespace baton::topo {
namespace fs = std::filesystem;

namespace {

std::string ReadLine(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

long ReadNumber(const fs::path& p, long fallback) {
  const std::string s = ReadLine(p);
  if (s.empty()) return fallback;
  try {
    return std::stol(s, nullptr, 0);
  } catch (...) {
    return fallback;
  }
}

bool IsBdf(const std::string& s) {
  static const std::regex re("^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$");
  return std::regex_match(s, re);
}

// The PCI function a sysfs device path belongs to: the last BDF component
// of its real path (a virtio NIC sits below its PCI function).
std::string PciOf(const fs::path& device_link) {
  std::error_code ec;
  const fs::path real = fs::canonical(device_link, ec);
  if (ec) return "";
  std::string bdf;
  for (const auto& part : real) {
    if (IsBdf(part.string())) bdf = part.string();
  }
  return bdf;
}

void DiscoverNuma(const fs::path& root, Topology* t) {
  std::error_code ec;
  const fs::path nodes = root / "devices/system/node";
  for (const auto& e : fs::directory_iterator(nodes, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 || !std::isdigit(static_cast<unsigned char>(name[4]))) continue;
    NumaNode n;
    n.id = std::stoi(name.substr(4));
    n.cpulist = ReadLine(e.path() / "cpulist");
    n.cpus = static_cast<int>(ParseCpuList(n.cpulist).size());
    t->numa.push_back(n);
  }
  if (t->numa.empty()) {  // kernel without NUMA: one node with every CPU
    NumaNode n;
    n.cpulist = ReadLine(root / "devices/system/cpu/online");
    n.cpus = static_cast<int>(ParseCpuList(n.cpulist).size());
    t->numa.push_back(n);
  }
  std::sort(t->numa.begin(), t->numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
}

void DiscoverPci(const fs::path& root, Topology* t) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "bus/pci/devices", ec)) {
    PciDevice d;
    d.bdf = e.path().filename().string();
    const fs::path real = fs::canonical(e.path(), ec);
    if (ec) continue;
    for (const auto& part : real) {
      const std::string s = part.string();
      if (s.rfind("pci", 0) == 0 && s.find(':') != std::string::npos) d.root_complex = s;
      if (IsBdf(s)) d.chain.push_back(s);
    }
    d.vendor = static_cast<uint16_t>(ReadNumber(real / "vendor", 0));
    d.device = static_cast<uint16_t>(ReadNumber(real / "device", 0));
    d.class_code = static_cast<uint32_t>(ReadNumber(real / "class", 0));
    d.numa_node = static_cast<int>(std::max(0L, ReadNumber(real / "numa_node", 0)));
    d.link_speed = ReadLine(real / "current_link_speed");
    d.link_width = static_cast<int>(ReadNumber(real / "current_link_width", 0));
    t->pci.push_back(std::move(d));
  }
  std::sort(t->pci.begin(), t->pci.end(), [](const PciDevice& a, const PciDevice& b) { return a.bdf < b.bdf; });
  for (const auto& d : t->pci) {
    const uint32_t base_class = d.class_code >> 16;
    const uint32_t sub = (d.class_code >> 8) & 0xff;
    // NVIDIA display controllers: VGA (0300) or 3D controller (0302).
    if (d.vendor == 0x10de && base_class == 0x03 && (sub == 0x00 || sub == 0x02)) {
      t->gpus.push_back({static_cast<int>(t->gpus.size()), d.bdf, "", 0});
    }
  }
  if (t->gpus.empty()) t->gpu_note = "no NVIDIA GPU on the PCI bus";
}

void DiscoverNics(const fs::path& root, Topology* t) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "class/net", ec)) {
    Nic n;
    n.name = e.path().filename().string();
    const fs::path dir = fs::canonical(e.path(), ec);
    if (ec) continue;
    n.is_virtual = dir.string().find("/devices/virtual/") != std::string::npos || !fs::exists(dir / "device");
    if (!n.is_virtual) n.bdf = PciOf(dir / "device");
    n.speed_mbps = static_cast<int>(ReadNumber(dir / "speed", -1));
    n.mtu = static_cast<int>(ReadNumber(dir / "mtu", 0));
    n.operstate = ReadLine(dir / "operstate");
    t->nics.push_back(std::move(n));
  }
  std::sort(t->nics.begin(), t->nics.end(), [](const Nic& a, const Nic& b) { return a.name < b.name; });
}

void DiscoverIb(const fs::path& root, Topology* t) {
  std::error_code ec;
  const fs::path ib = root / "class/infiniband";
  if (!fs::exists(ib, ec)) {
    t->rdma_note = "no RDMA device (" + ib.string() + " does not exist: no InfiniBand/RoCE driver loaded)";
    return;
  }
  for (const auto& e : fs::directory_iterator(ib, ec)) {
    IbDevice d;
    d.name = e.path().filename().string();
    d.bdf = PciOf(e.path() / "device");
    for (const auto& p : fs::directory_iterator(e.path() / "ports", ec)) {
      IbPort port;
      port.port = std::atoi(p.path().filename().c_str());
      std::string state = ReadLine(p.path() / "state");  // "4: ACTIVE"
      if (auto colon = state.find(": "); colon != std::string::npos) state = state.substr(colon + 2);
      port.state = state;
      port.rate = ReadLine(p.path() / "rate");
      d.ports.push_back(port);
    }
    std::sort(d.ports.begin(), d.ports.end(), [](const IbPort& a, const IbPort& b) { return a.port < b.port; });
    t->ib.push_back(std::move(d));
  }
  std::sort(t->ib.begin(), t->ib.end(), [](const IbDevice& a, const IbDevice& b) { return a.name < b.name; });
  if (t->ib.empty()) t->rdma_note = "no RDMA device under " + ib.string();
}

}  // namespace

Status Discover(const std::string& sysfs_root, Topology* out) {
  const fs::path root(sysfs_root);
  std::error_code ec;
  if (!fs::is_directory(root / "devices", ec)) {
    return Status::InvalidArgument("'" + sysfs_root + "' does not look like sysfs (no devices/ directory)");
  }
  Topology t;
  DiscoverNuma(root, &t);
  DiscoverPci(root, &t);
  DiscoverNics(root, &t);
  DiscoverIb(root, &t);
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace baton::topo
