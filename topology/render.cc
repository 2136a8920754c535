// Topology as JSON (batonctl topo --json, BATON_TOPO_DUMP_FILE) and as a tree.
#include <cstdio>
#include <map>

#include "topology/topology.h"

namespace baton::topo {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string Hex(unsigned v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
  return buf;
}

}  // namespace

std::string Topology::ToJson() const {
  std::string o = "{\n  \"numa\": [";
  for (size_t i = 0; i < numa.size(); ++i) {
    o += std::string(i ? ", " : "") + "{\"id\": " + std::to_string(numa[i].id) + ", \"cpus\": " +
         std::to_string(numa[i].cpus) + ", \"cpulist\": " + Quote(numa[i].cpulist) + "}";
  }
  o += "],\n  \"gpus\": [";
  const std::vector<int> closest = ClosestNicPerGpu();
  for (size_t i = 0; i < gpus.size(); ++i) {
    const PciDevice* d = FindPci(gpus[i].bdf);
    o += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(gpus[i].index) +
         ", \"pci\": " + Quote(gpus[i].bdf) + ", \"numa\": " + std::to_string(d ? d->numa_node : 0) +
         ", \"nic\": " + (closest[i] >= 0 ? Quote(nics[closest[i]].name) : "null") + ", \"nic_path\": " +
         (closest[i] >= 0 ? Quote(PathClassName(Path(gpus[i].bdf, nics[closest[i]].bdf))) : "null") + "}";
  }
  o += "],\n  \"nics\": [";
  for (size_t i = 0; i < nics.size(); ++i) {
    const Nic& n = nics[i];
    const PciDevice* d = n.bdf.empty() ? nullptr : FindPci(n.bdf);
    o += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + Quote(n.name) + ", \"pci\": " +
         (n.bdf.empty() ? "null" : Quote(n.bdf)) + ", \"virtual\": " + (n.is_virtual ? "true" : "false") +
         ", \"speed_mbps\": " + std::to_string(n.speed_mbps) + ", \"mtu\": " + std::to_string(n.mtu) +
         ", \"operstate\": " + Quote(n.operstate) + ", \"numa\": " + std::to_string(d ? d->numa_node : 0) + "}";
  }
  o += "],\n  \"rdma\": [";
  for (size_t i = 0; i < ib.size(); ++i) {
    o += std::string(i ? ", " : "") + "{\"name\": " + Quote(ib[i].name) + ", \"pci\": " + Quote(ib[i].bdf) +
         ", \"ports\": [";
    for (size_t p = 0; p < ib[i].ports.size(); ++p) {
      o += std::string(p ? ", " : "") + "{\"port\": " + std::to_string(ib[i].ports[p].port) + ", \"state\": " +
           Quote(ib[i].ports[p].state) + ", \"rate\": " + Quote(ib[i].ports[p].rate) + "}";
    }
    o += "]}";
  }
  o += "],\n  \"nvlinks\": [";
  bool first_link = true;
  for (const auto& [pair, links] : nvlinks) {
    o += std::string(first_link ? "" : ", ") + "{\"from\": " + std::to_string(pair.first) + ", \"to\": " +
         std::to_string(pair.second) + ", \"links\": " + std::to_string(links) + "}";
    first_link = false;
  }
  o += "],\n  \"rdma_note\": " + Quote(rdma_note) + ",\n  \"gpu_note\": " + Quote(gpu_note) +
       ",\n  \"nvml_note\": " + Quote(nvml_note) + ",\n  \"pci\": [";
  for (size_t i = 0; i < pci.size(); ++i) {
    const PciDevice& d = pci[i];
    o += std::string(i ? ",\n    " : "\n    ") + "{\"bdf\": " + Quote(d.bdf) + ", \"root\": " + Quote(d.root_complex) +
         ", \"vendor\": " + Quote(Hex(d.vendor, 4)) + ", \"class\": " + Quote(Hex(d.class_code, 6)) +
         ", \"numa\": " + std::to_string(d.numa_node) + ", \"link\": " + Quote(d.link_speed) +
         ", \"width\": " + std::to_string(d.link_width) + "}";
  }
  return o + "]\n}\n";
}

std::string Topology::ToTree() const {
  std::string o;
  for (const auto& n : numa) {
    o += "NUMA node " + std::to_string(n.id) + ": " + std::to_string(n.cpus) + " CPUs (" + n.cpulist + ")\n";
    // Devices of interest on this NUMA node, grouped by root complex.
    std::map<std::string, std::vector<std::string>> by_root;
    for (const auto& g : gpus) {
      const PciDevice* d = FindPci(g.bdf);
      if (d && d->numa_node == n.id) {
        by_root[d->root_complex].push_back("GPU" + std::to_string(g.index) + " " + g.bdf +
                                           (g.name.empty() ? "" : " " + g.name) +
                                           (g.nvswitch_links ? " " + std::to_string(g.nvswitch_links) + " NVLinks to NVSwitch" : "") +
                                           (d->link_width ? " x" + std::to_string(d->link_width) + " " + d->link_speed : ""));
      }
    }
    for (const auto& nic : nics) {
      const PciDevice* d = nic.bdf.empty() ? nullptr : FindPci(nic.bdf);
      if (d && d->numa_node == n.id) {
        by_root[d->root_complex].push_back(
            "NIC " + nic.name + " " + nic.bdf + " " + (nic.speed_mbps > 0 ? std::to_string(nic.speed_mbps) + " Mb/s" : "speed unknown") +
            ", mtu " + std::to_string(nic.mtu) + ", " + nic.operstate);
      }
    }
    for (const auto& d : ib) {
      const PciDevice* p = FindPci(d.bdf);
      if (p && p->numa_node == n.id) {
        std::string ports;
        for (const auto& port : d.ports) ports += " port" + std::to_string(port.port) + "=" + port.state;
        by_root[p->root_complex].push_back("RDMA " + d.name + " " + d.bdf + ports);
      }
    }
    for (const auto& [root, items] : by_root) {
      o += "  " + root + "\n";
      for (const auto& item : items) o += "    " + item + "\n";
    }
  }
  for (const auto& nic : nics) {
    if (nic.is_virtual || nic.bdf.empty()) o += "virtual interface " + nic.name + " (" + nic.operstate + ")\n";
  }
  if (gpus.empty()) o += "GPUs: none (" + gpu_note + ")\n";
  for (const auto& [pair, links] : nvlinks) {
    o += "GPU" + std::to_string(pair.first) + " -> GPU" + std::to_string(pair.second) + ": " + std::to_string(links) +
         " NVLinks\n";
  }
  if (!nvml_note.empty()) o += "NVML: " + nvml_note + "\n";
  if (ib.empty()) o += "RDMA: none (" + rdma_note + ")\n";
  const std::vector<int> closest = ClosestNicPerGpu();
  for (size_t i = 0; i < gpus.size(); ++i) {
    o += "GPU" + std::to_string(gpus[i].index) + " -> " +
         (closest[i] >= 0 ? nics[closest[i]].name + " (" + PathClassName(Path(gpus[i].bdf, nics[closest[i]].bdf)) + ")"
                          : std::string("no NIC")) +
         "\n";
  }
  return o;
}

}  // namespace baton::topo
