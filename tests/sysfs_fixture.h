// SysfsFixture: builds a sysfs-like tree in a temporary directory, with the
// same shape the kernel uses (devices/ with the PCI hierarchy in the paths,
// bus/pci/devices and class/net, class/infiniband as symlinks into it), so
// topology discovery can be tested against machines we do not have.
#pragma once

#include <string>
#include <vector>

namespace baton::test {

class SysfsFixture {
 public:
  SysfsFixture();
  ~SysfsFixture();
  const std::string& root() const { return root_; }

  void AddNuma(int id, const std::string& cpulist);
  // `path` is the device's position: root complex, then every bridge, then
  // the device itself, e.g. {"pci0000:00", "0000:00:01.0", "0000:01:00.0"}.
  // Bridges along the way must be added too (AddBridge) to appear in lspci.
  void AddPci(const std::vector<std::string>& path, unsigned vendor, unsigned class_code, int numa,
              const std::string& speed = "16.0 GT/s PCIe", int width = 16);
  void AddBridge(const std::vector<std::string>& path, int numa);
  // A NIC on a PCI function (`via` names an intermediate device such as
  // "virtio2", as for virtio NICs), or a virtual interface if `pci` is empty.
  void AddNic(const std::string& name, const std::vector<std::string>& pci, int speed, const std::string& state,
              const std::string& via = "");
  void AddIb(const std::string& name, const std::vector<std::string>& pci, const std::string& state,
             const std::string& rate);
  void NoInfiniband();  // most machines: no class/infiniband at all

 private:
  std::string Dir(const std::vector<std::string>& path) const;
  std::string root_;
};

}  // namespace baton::test
