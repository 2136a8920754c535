// Topology: what this node is made of, discovered from sysfs, and the
// distances that matter for communication (which NIC is closest to which
// GPU). The sysfs root is a parameter so tests can use fixture trees.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace baton::topo {

struct PciDevice {
  std::string bdf;                  // "0000:03:00.0"
  std::string root_complex;         // "pci0000:00"
  std::vector<std::string> chain;   // bridges from the root port down to (and including) this device
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint32_t class_code = 0;          // 24-bit PCI class
  int numa_node = 0;                // -1 in sysfs (no NUMA info) is reported as 0
  std::string link_speed;           // e.g. "16.0 GT/s PCIe" ("" if unknown)
  int link_width = 0;
};

struct Gpu {
  int index = 0;  // in PCI order
  std::string bdf;
  std::string name;        // from NVML, when available
  int nvswitch_links = 0;  // active NVLinks to NVSwitches (NVML)
};

struct Nic {
  std::string name;       // interface name
  std::string bdf;        // PCI function behind it ("" for virtual interfaces)
  bool is_virtual = false;
  int speed_mbps = -1;    // -1 if unknown (down, or virtual)
  int mtu = 0;
  std::string operstate;  // up, down, unknown
};

struct IbPort {
  int port = 0;
  std::string state;  // e.g. "ACTIVE"
  std::string rate;   // e.g. "100 Gb/sec (4X EDR)"
};

struct IbDevice {
  std::string name;  // mlx5_0
  std::string bdf;
  std::vector<IbPort> ports;
};

struct NumaNode {
  int id = 0;
  std::string cpulist;  // "0-31,64-95"
  int cpus = 0;
};

// How two PCI devices are connected, from closest to farthest (NCCL's names).
enum class PathClass {
  kNVL,  // NVLink (directly or through NVSwitch); GPU pairs only, from NVML
  kPIX,  // through a single PCIe switch
  kPXB,  // through several PCIe bridges, not the CPU
  kPHB,  // through the PCIe host bridge (same CPU root complex)
  kNODE, // between root complexes of one NUMA node
  kSYS,  // across NUMA nodes (the inter-socket link)
};
const char* PathClassName(PathClass c);

struct Topology {
  std::vector<NumaNode> numa;
  std::vector<PciDevice> pci;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<IbDevice> ib;
  std::string rdma_note;  // why RDMA is unavailable, if it is
  std::string gpu_note;   // why no GPU, if none
  std::string nvml_note;  // whether NVLink information is available, and why not
  std::map<std::pair<int, int>, int> nvlinks;  // (gpu, gpu) -> active NVLinks from the first to the second

  const PciDevice* FindPci(const std::string& bdf) const;
  // Path class between two PCI functions (kSYS if one is unknown).
  PathClass Path(const std::string& a, const std::string& b) const;
  // For each GPU, the index into `nics` of the closest physical NIC that is
  // up (ties: fastest, then first by name), or -1 if there is none.
  std::vector<int> ClosestNicPerGpu() const;

  // The NUMA node of interface `ifname` (via its PCI device), or -1.
  int NumaOfInterface(const std::string& ifname) const;
  // CPU ids of a NUMA node (empty if unknown).
  std::vector<int> CpusOfNuma(int numa_node) const;

  std::string ToJson() const;
  std::string ToTree() const;  // human-readable, for batonctl topo
};

// CPU ids of a kernel CPU list like "0-3,8,10-11" (empty if malformed,
// reversed, or naming CPU ids of 65536 and above).
std::vector<int> ParseCpuList(const std::string& list);

// Reads the node from `sysfs_root` (normally "/sys").
Status Discover(const std::string& sysfs_root, Topology* out);

}  // namespace baton::topo
