#include "tests/sysfs_fixture.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace baton::test {
namespace fs = std::filesystem;

namespace {
void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}
std::string Hex(unsigned v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
  return buf;
}
}  // namespace

SysfsFixture::SysfsFixture() {
  char tmpl[] = "/tmp/baton-sysfs-XXXXXX";
  root_ = ::mkdtemp(tmpl);
  fs::create_directories(root_ + "/devices/system/node");
  fs::create_directories(root_ + "/devices/virtual/net");
  fs::create_directories(root_ + "/bus/pci/devices");
  fs::create_directories(root_ + "/class/net");
  fs::create_directories(root_ + "/class/infiniband");
}

SysfsFixture::~SysfsFixture() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void SysfsFixture::NoInfiniband() { fs::remove_all(root_ + "/class/infiniband"); }

std::string SysfsFixture::Dir(const std::vector<std::string>& path) const {
  std::string d = root_ + "/devices";
  for (const auto& p : path) d += "/" + p;
  return d;
}

void SysfsFixture::AddNuma(int id, const std::string& cpulist) {
  Write(root_ + "/devices/system/node/node" + std::to_string(id) + "/cpulist", cpulist);
}

void SysfsFixture::AddPci(const std::vector<std::string>& path, unsigned vendor, unsigned class_code, int numa,
                          const std::string& speed, int width) {
  const std::string dir = Dir(path);
  Write(dir + "/vendor", Hex(vendor, 4));
  Write(dir + "/device", "0x1234");
  Write(dir + "/class", Hex(class_code, 6));
  Write(dir + "/numa_node", std::to_string(numa));
  Write(dir + "/current_link_speed", speed);
  Write(dir + "/current_link_width", std::to_string(width));
  fs::create_symlink(fs::relative(dir, root_ + "/bus/pci/devices"), root_ + "/bus/pci/devices/" + path.back());
}

void SysfsFixture::AddBridge(const std::vector<std::string>& path, int numa) {
  AddPci(path, 0x10b5, 0x060400, numa);  // a PCIe switch port (PLX-like vendor)
}

void SysfsFixture::AddNic(const std::string& name, const std::vector<std::string>& pci, int speed,
                          const std::string& state, const std::string& via) {
  std::string dir;
  if (pci.empty()) {
    dir = root_ + "/devices/virtual/net/" + name;
  } else {
    const std::string parent = Dir(pci) + (via.empty() ? "" : "/" + via);
    dir = parent + "/net/" + name;
    fs::create_directories(dir);
    fs::create_symlink(fs::relative(parent, dir), dir + "/device");
  }
  Write(dir + "/speed", std::to_string(speed));
  Write(dir + "/mtu", "1500");
  Write(dir + "/operstate", state);
  fs::create_symlink(fs::relative(dir, root_ + "/class/net"), root_ + "/class/net/" + name);
}

void SysfsFixture::AddIb(const std::string& name, const std::vector<std::string>& pci, const std::string& state,
                         const std::string& rate) {
  const std::string parent = Dir(pci);
  const std::string dir = parent + "/infiniband/" + name;
  Write(dir + "/ports/1/state", state);
  Write(dir + "/ports/1/rate", rate);
  fs::create_symlink(fs::relative(parent, dir), dir + "/device");
  fs::create_symlink(fs::relative(dir, root_ + "/class/infiniband"), root_ + "/class/infiniband/" + name);
}

}  // namespace baton::test
