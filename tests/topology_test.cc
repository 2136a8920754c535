// Topology discovery against fixture sysfs trees that mirror real machines,
// and interface selection with BATON_SOCKET_IFNAME's syntax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "tests/sysfs_fixture.h"
#include "topology/interfaces.h"
#include "topology/nvml.h"
#include "topology/topology.h"

namespace baton::test {
namespace {

using topo::PathClass;

constexpr unsigned kNvidia = 0x10de, kMellanox = 0x15b3, kIntel = 0x8086, kVirtio = 0x1af4;
constexpr unsigned k3dController = 0x030200, kEthernet = 0x020000, kInfiniband = 0x020700;

// An 8-GPU server like a DGX: 2 NUMA nodes, 4 PCIe switches (one per root
// complex), 2 GPUs and 1 RDMA NIC under each switch.
void BuildDgx(SysfsFixture& f) {
  f.AddNuma(0, "0-63");
  f.AddNuma(1, "64-127");
  const char* roots[] = {"pci0000:00", "pci0000:40", "pci0000:80", "pci0000:c0"};
  const char* buses[] = {"00", "40", "80", "c0"};
  int gpu = 0;
  for (int s = 0; s < 4; ++s) {
    const int numa = s / 2;
    const std::string b = buses[s];
    const std::string root = roots[s];
    auto bdf = [&](int bus_off, const char* dev) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0000:%02x:%s", std::stoi(b, nullptr, 16) + bus_off, dev);
      return std::string(buf);
    };
    const std::vector<std::string> rp = {root, bdf(0, "01.0")};
    auto up = rp;
    up.push_back(bdf(1, "00.0"));
    f.AddBridge(rp, numa);
    f.AddBridge(up, numa);
    for (int port = 0; port < 3; ++port) {
      auto down = up;
      down.push_back(bdf(2, port == 0 ? "00.0" : port == 1 ? "08.0" : "10.0"));
      f.AddBridge(down, numa);
      auto dev = down;
      dev.push_back(bdf(3 + port, "00.0"));
      if (port < 2) {
        f.AddPci(dev, kNvidia, k3dController, numa);
        ++gpu;
      } else {
        f.AddPci(dev, kMellanox, kInfiniband, numa);
        f.AddNic("ibp" + std::to_string(s), dev, 200000, "up");
        f.AddIb("mlx5_" + std::to_string(s), dev, "4: ACTIVE", "200 Gb/sec (4X HDR)");
      }
    }
  }
  // A slow management NIC on the first root complex, directly on a root port.
  f.AddBridge({"pci0000:00", "0000:00:1c.0"}, 0);
  f.AddPci({"pci0000:00", "0000:00:1c.0", "0000:0f:00.0"}, kIntel, kEthernet, 0);
  f.AddNic("eno1", {"pci0000:00", "0000:00:1c.0", "0000:0f:00.0"}, 1000, "up");
  f.AddNic("lo", {}, -1, "unknown");
}

TEST(Topology, CpuListsParseAndHostileOnesAreRejected) {
  EXPECT_EQ(topo::ParseCpuList("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(topo::ParseCpuList("5"), (std::vector<int>{5}));
  EXPECT_TRUE(topo::ParseCpuList("0-x").empty());
  EXPECT_TRUE(topo::ParseCpuList("7-3").empty());
  // Found by text_fuzz: a huge range once expanded into billions of entries.
  EXPECT_TRUE(topo::ParseCpuList("0-2147483647").empty());
  EXPECT_TRUE(topo::ParseCpuList("65536").empty());
}

TEST(Topology, DgxClassServer) {
  SysfsFixture f;
  BuildDgx(f);
  topo::Topology t;
  ASSERT_TRUE(topo::Discover(f.root(), &t).ok());
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.numa[1].cpus, 64);
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.ib.size(), 4u);
  EXPECT_EQ(t.ib[0].ports[0].state, "ACTIVE");
  EXPECT_EQ(t.ib[0].ports[0].rate, "200 Gb/sec (4X HDR)");
  EXPECT_TRUE(t.rdma_note.empty());
  // Path classes between GPU pairs.
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.gpus[1].bdf), PathClass::kPIX);   // same switch
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.gpus[2].bdf), PathClass::kNODE);  // other root complex, same socket
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.gpus[7].bdf), PathClass::kSYS);   // other socket
  // Each GPU's closest NIC is the one under its own switch.
  const std::vector<int> nic = t.ClosestNicPerGpu();
  for (int g = 0; g < 8; ++g) {
    ASSERT_GE(nic[g], 0);
    EXPECT_EQ(t.nics[nic[g]].name, "ibp" + std::to_string(g / 2)) << "GPU" << g;
    EXPECT_EQ(t.Path(t.gpus[g].bdf, t.nics[nic[g]].bdf), PathClass::kPIX) << "GPU" << g;
  }
  // The management NIC is PHB from GPU0 (same root complex, other root port).
  const auto eno1 = std::find_if(t.nics.begin(), t.nics.end(), [](const topo::Nic& n) { return n.name == "eno1"; });
  ASSERT_NE(eno1, t.nics.end());
  EXPECT_EQ(t.Path(t.gpus[0].bdf, eno1->bdf), PathClass::kPHB);
  const std::string json = t.ToJson();
  EXPECT_NE(json.find("\"nic\": \"ibp3\", \"nic_path\": \"PIX\""), std::string::npos) << json;
  // Where daemon threads serving a NIC should run: that NIC's NUMA node.
  EXPECT_EQ(t.NumaOfInterface("ibp3"), 1);
  EXPECT_EQ(t.NumaOfInterface("eno1"), 0);
  EXPECT_EQ(t.NumaOfInterface("lo"), -1);
  const std::vector<int> cpus = t.CpusOfNuma(1);
  ASSERT_EQ(cpus.size(), 64u);
  EXPECT_EQ(cpus.front(), 64);
  EXPECT_EQ(cpus.back(), 127);
}

TEST(Topology, TwoGpuWorkstation) {
  SysfsFixture f;
  f.NoInfiniband();
  f.AddNuma(0, "0-15");
  f.AddBridge({"pci0000:00", "0000:00:01.0"}, 0);
  f.AddPci({"pci0000:00", "0000:00:01.0", "0000:01:00.0"}, kNvidia, 0x030000, 0);  // VGA-class GPU
  f.AddBridge({"pci0000:00", "0000:00:03.0"}, 0);
  f.AddPci({"pci0000:00", "0000:00:03.0", "0000:02:00.0"}, kNvidia, k3dController, 0);
  f.AddBridge({"pci0000:00", "0000:00:1c.0"}, 0);
  f.AddPci({"pci0000:00", "0000:00:1c.0", "0000:05:00.0"}, kIntel, kEthernet, 0, "5.0 GT/s PCIe", 1);
  f.AddNic("enp5s0", {"pci0000:00", "0000:00:1c.0", "0000:05:00.0"}, 10000, "up");
  f.AddNic("lo", {}, -1, "unknown");
  topo::Topology t;
  ASSERT_TRUE(topo::Discover(f.root(), &t).ok());
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.gpus[1].bdf), PathClass::kPHB);
  const auto nic = t.ClosestNicPerGpu();
  EXPECT_EQ(t.nics[nic[0]].name, "enp5s0");
  EXPECT_EQ(t.nics[nic[1]].name, "enp5s0");
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.nics[nic[0]].bdf), PathClass::kPHB);
  EXPECT_NE(t.rdma_note.find("no RDMA device"), std::string::npos);
  EXPECT_EQ(t.FindPci("0000:05:00.0")->link_width, 1);
}

TEST(Topology, CloudVmWithDockerAndVeth) {
  SysfsFixture f;
  f.NoInfiniband();
  f.AddNuma(0, "0-1");
  f.AddPci({"pci0000:00", "0000:00:03.0"}, kVirtio, kEthernet, -1);
  f.AddNic("eth0", {"pci0000:00", "0000:00:03.0"}, -1, "up", "virtio2");
  f.AddNic("docker0", {}, -1, "down");
  f.AddNic("veth1a2b", {}, 10000, "up");
  f.AddNic("lo", {}, -1, "unknown");
  topo::Topology t;
  ASSERT_TRUE(topo::Discover(f.root(), &t).ok());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, "no NVIDIA GPU on the PCI bus");
  ASSERT_EQ(t.nics.size(), 4u);
  const auto& eth0 = *std::find_if(t.nics.begin(), t.nics.end(), [](const topo::Nic& n) { return n.name == "eth0"; });
  EXPECT_FALSE(eth0.is_virtual);
  EXPECT_EQ(eth0.bdf, "0000:00:03.0");  // found through the virtio device
  for (const auto& n : t.nics) {
    if (n.name != "eth0") {
      EXPECT_TRUE(n.is_virtual) << n.name;
    }
  }
  EXPECT_EQ(t.numa[0].cpus, 2);
  EXPECT_NE(t.ToTree().find("GPUs: none"), std::string::npos) << t.ToTree();
}

TEST(Topology, NotSysfsIsAnError) {
  topo::Topology t;
  Status st = topo::Discover("/nonexistent", &t);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("does not look like sysfs"), std::string::npos);
}

std::vector<topo::InterfaceAddress> Interfaces() {
  return {{"lo", "127.0.0.1", false, true, false, true},
          {"eth0", "10.0.0.5", false, false, false, true},
          {"eth0", "fe80::1", true, false, true, true},
          {"eth1", "10.1.0.5", false, false, false, true},
          {"docker0", "172.17.0.1", false, false, false, true},
          {"veth9", "169.254.3.3", false, false, true, true},
          {"ib0", "192.168.5.5", false, false, false, true},
          {"ib0", "2001:db8::5", true, false, false, true}};
}

std::vector<std::string> Names(const std::vector<topo::InterfaceAddress>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(a.name + "/" + a.address);
  return out;
}

TEST(Interfaces, DefaultSkipsLoopbackDockerVethAndLinkLocal) {
  std::vector<topo::InterfaceAddress> out;
  ASSERT_TRUE(topo::SelectInterfaces(Interfaces(), "", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"eth0/10.0.0.5", "eth1/10.1.0.5", "ib0/192.168.5.5",
                                                   "ib0/2001:db8::5"}));
}

TEST(Interfaces, PrefixExclusionAndExactMatch) {
  std::vector<topo::InterfaceAddress> out;
  ASSERT_TRUE(topo::SelectInterfaces(Interfaces(), "ib", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"ib0/192.168.5.5", "ib0/2001:db8::5"}));
  ASSERT_TRUE(topo::SelectInterfaces(Interfaces(), "^eth,lo,docker,veth", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"ib0/192.168.5.5", "ib0/2001:db8::5"}));
  ASSERT_TRUE(topo::SelectInterfaces(Interfaces(), "=eth", &out).code() == Code::kInvalidArgument);
  ASSERT_TRUE(topo::SelectInterfaces(Interfaces(), "=eth1", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"eth1/10.1.0.5"}));
  ASSERT_TRUE(topo::SelectInterfaces(Interfaces(), "^=eth0,lo,ib0,docker0,veth9", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"eth1/10.1.0.5"}));
}

TEST(Interfaces, NoMatchListsWhatExists) {
  std::vector<topo::InterfaceAddress> out;
  Status st = topo::SelectInterfaces(Interfaces(), "enp", &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("BATON_SOCKET_IFNAME='enp' matches no interface"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("eth1 (10.1.0.5)"), std::string::npos) << st.message();
}

TEST(Interfaces, Ipv6OnlyHost) {
  std::vector<topo::InterfaceAddress> v6 = {{"lo", "::1", true, true, false, true},
                                             {"eth0", "fe80::2", true, false, true, true},
                                             {"eth0", "2001:db8::7", true, false, false, true}};
  std::vector<topo::InterfaceAddress> out;
  ASSERT_TRUE(topo::SelectInterfaces(v6, "", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"eth0/2001:db8::7"}));
}

TEST(Interfaces, LoopbackOnlyMachineFallsBackToLoopback) {
  std::vector<topo::InterfaceAddress> lo = {{"lo", "127.0.0.1", false, true, false, true}};
  std::vector<topo::InterfaceAddress> out;
  ASSERT_TRUE(topo::SelectInterfaces(lo, "", &out).ok());
  EXPECT_EQ(Names(out), (std::vector<std::string>{"lo/127.0.0.1"}));
}


TEST(Interfaces, RdmaDeviceSelection) {
  const std::vector<std::string> devs = {"mlx5_0", "mlx5_1", "mlx5_10", "bnxt_re0"};
  std::vector<std::string> out;
  ASSERT_TRUE(topo::SelectRdmaDevices(devs, "", &out).ok());
  EXPECT_EQ(out, devs);
  ASSERT_TRUE(topo::SelectRdmaDevices(devs, "mlx5_1:1", &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"mlx5_1", "mlx5_10"}));  // prefix match, as NCCL
  ASSERT_TRUE(topo::SelectRdmaDevices(devs, "=mlx5_1:1", &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"mlx5_1"}));
  ASSERT_TRUE(topo::SelectRdmaDevices(devs, "^mlx5", &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"bnxt_re0"}));
  Status st = topo::SelectRdmaDevices(devs, "=mlx5_7", &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("devices here: mlx5_0, mlx5_1, mlx5_10, bnxt_re0"), std::string::npos) << st.message();
}


TEST(Nvml, BusIdsMatchSysfsNames) {
  EXPECT_EQ(topo::NvmlBusIdToBdf("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(topo::NvmlBusIdToBdf("0000:07:00.0"), "0000:07:00.0");
}

TEST(Nvml, AbsentDriverIsReportedNotFatal) {
  topo::Topology t;
  t.gpus.push_back({0, "0000:3b:00.0", "", 0});
  topo::ProbeNvml(&t);
  // Either this machine has the NVIDIA driver, or the topology says why there is no NVLink view.
  EXPECT_FALSE(t.nvml_note.empty());
  if (t.nvml_note != "NVML available") {
    EXPECT_NE(t.nvml_note.find("NVML"), std::string::npos) << t.nvml_note;
    EXPECT_TRUE(t.nvlinks.empty());
  }
}

TEST(Nvml, NvLinkedGpusAreClosestOfAll) {
  SysfsFixture f;
  BuildDgx(f);
  topo::Topology t;
  ASSERT_TRUE(topo::Discover(f.root(), &t).ok());
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.gpus[7].bdf), PathClass::kSYS);
  // What NVML would add on such a machine: every GPU on NVSwitches.
  for (auto& g : t.gpus) g.nvswitch_links = 18;
  EXPECT_EQ(t.Path(t.gpus[0].bdf, t.gpus[7].bdf), PathClass::kNVL);
  // NIC choice is still by PCIe distance.
  EXPECT_EQ(t.nics[t.ClosestNicPerGpu()[7]].name, "ibp3");
}

}  // namespace
}  // namespace baton::test
