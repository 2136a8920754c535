// The text an operator or environment hands the daemon: sizes, host:port,
// CPU lists, interface and RDMA device selections, config files.
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "common/address.h"
#include "daemon/options.h"
#include "fuzz/fuzz_input.h"
#include "topology/interfaces.h"
#include "topology/topology.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  uint64_t bytes = 0;
  (void)ParseSize(in.String(64), &bytes);
  HostPort hp;
  (void)ParseHostPort(in.String(128), &hp);
  (void)topo::ParseCpuList(in.String(256));
  const std::string spec = in.String(128);
  (void)topo::IfnameFilter::Parse(spec).Matches(in.String(32));
  std::vector<std::string> chosen;
  (void)topo::SelectRdmaDevices({"mlx5_0", "mlx5_1", "mlx5_10"}, spec, &chosen);
  std::vector<topo::InterfaceAddress> all = {{"eth0", "10.0.0.1"}, {"ib0", "192.168.0.1"}, {"lo", "127.0.0.1"}};
  std::vector<topo::InterfaceAddress> picked;
  (void)topo::SelectInterfaces(all, spec, &picked);

  // The rest is a config file.
  char path[] = "/tmp/baton-fuzz-config-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return 0;
  const std::string text = in.Rest();
  if (::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size())) {
    std::string arg0 = "batond";
    std::string flag = "--config";
    char* argv[] = {arg0.data(), flag.data(), path, nullptr};
    DaemonOptions o;
    (void)ParseDaemonOptions(3, argv, &o);
  }
  ::close(fd);
  ::unlink(path);
  return 0;
}
