#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/access_policy.h"
#include "daemon/options.h"

namespace baton {
namespace {

Status Parse(std::vector<std::string> args, DaemonOptions* o) {
  args.insert(args.begin(), "batond");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseDaemonOptions(static_cast<int>(argv.size()), argv.data(), o);
}

std::string WriteConfig(const std::string& text) {
  char path[] = "/tmp/batond-conf-XXXXXX";
  int fd = ::mkstemp(path);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(Options, DefaultsAndFlags) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({"--listen", "10.0.0.1:7000", "--timeout=2.5", "--max-client-memory", "512M"}, &o).ok());
  EXPECT_EQ(o.listen, "10.0.0.1:7000");
  EXPECT_EQ(o.default_timeout.count(), 2500);
  EXPECT_EQ(o.max_client_bytes, 512ull << 20);
  EXPECT_EQ(o.grpc, "127.0.0.1:7101");
}

TEST(Options, AccessPolicyAndLimits) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({"--socket-mode", "0660", "--allow-users", "root,1005", "--allow-groups", "0",
                     "--max-user-memory", "2G", "--max-client-comms", "8", "--max-p2p-buffer", "16M"},
                    &o)
                  .ok());
  EXPECT_EQ(o.socket_mode, 0660u);
  EXPECT_EQ(o.max_user_bytes, 2ull << 30);
  EXPECT_EQ(o.max_client_comms, 8);
  EXPECT_EQ(o.max_p2p_buffer, 16ull << 20);
  std::vector<uid_t> uids;
  ASSERT_TRUE(ParseUserList(o.allow_users, &uids).ok());
  EXPECT_EQ(uids, (std::vector<uid_t>{0, 1005}));
  std::vector<gid_t> gids;
  ASSERT_TRUE(ParseGroupList(o.allow_groups, &gids).ok());
  EXPECT_EQ(gids, (std::vector<gid_t>{0}));

  Status st = ParseUserList("nosuchuser-baton", &uids);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'nosuchuser-baton' is neither a uid nor a user name"), std::string::npos)
      << st.message();
  st = Parse({"--socket-mode", "0999"}, &o);
  EXPECT_NE(st.message().find("--socket-mode '0999' is not an octal mode"), std::string::npos) << st.message();
  st = Parse({"--max-client-comms", "0"}, &o);
  EXPECT_NE(st.message().find("--max-client-comms '0' is not a positive count"), std::string::npos) << st.message();
}

TEST(Options, ConfigFileIsOverriddenByTheCommandLine) {
  const std::string path = WriteConfig("# comment\nlisten = 10.1.1.1:7100  # trailing\ntimeout = 7\n\ntrace-dir = /x\n");
  DaemonOptions o;
  ASSERT_TRUE(Parse({"--timeout", "9", "--config", path}, &o).ok());
  EXPECT_EQ(o.listen, "10.1.1.1:7100");
  EXPECT_EQ(o.default_timeout.count(), 9000);  // the flag wins, wherever it stands
  EXPECT_EQ(o.trace_dir, "/x");
  std::remove(path.c_str());
}

TEST(Options, UnknownConfigKeyNamesTheLine) {
  const std::string path = WriteConfig("listen = 1.2.3.4:5\ntimeuot = 5\n");
  DaemonOptions o;
  Status st = Parse({"--config", path}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("line 2: unknown key 'timeuot'"), std::string::npos) << st.message();
  std::remove(path.c_str());
}

TEST(Options, InvalidValuesAreRejected) {
  DaemonOptions o;
  Status st = Parse({"--timeout", "-1"}, &o);
  EXPECT_NE(st.message().find("--timeout '-1' (command line) is not a positive number of seconds"), std::string::npos);
  st = Parse({"--max-client-memory", "lots"}, &o);
  EXPECT_NE(st.message().find("not a size"), std::string::npos) << st.message();
  st = Parse({"--bogus"}, &o);
  EXPECT_NE(st.message().find("unknown option '--bogus'"), std::string::npos) << st.message();
  st = Parse({"--listen"}, &o);
  EXPECT_NE(st.message().find("--listen needs a value"), std::string::npos) << st.message();
}


TEST(Options, ShippedConfigFileParses) {
  DaemonOptions o;
  Status st = Parse({"--config", std::string(BATON_SOURCE_DIR) + "/deploy/batond.conf"}, &o);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(o.socket_path, "/run/baton/batond.sock");
  EXPECT_EQ(o.peer_timeout.count(), 10000);
  EXPECT_EQ(o.trace_dir, "/var/lib/baton/traces");
}


TEST(Options, PrecedenceIsDefaultsConfigEnvironmentCommandLine) {
  const std::string path = WriteConfig("timeout = 7\nstraggler-warning = 3\n");
  ::setenv("BATON_TIMEOUT", "8", 1);
  DaemonOptions o;
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_EQ(o.default_timeout.count(), 8000);  // environment over config
  EXPECT_EQ(o.straggler_warning.count(), 3000);
  ASSERT_TRUE(Parse({"--config", path, "--timeout", "9"}, &o).ok());
  EXPECT_EQ(o.default_timeout.count(), 9000);  // command line over environment
  const std::string printed = PrintConfig(o);
  EXPECT_NE(printed.find("timeout            = 9"), std::string::npos) << printed;
  EXPECT_NE(printed.find("# command line"), std::string::npos) << printed;
  EXPECT_NE(printed.find("# config " + path + " line 2"), std::string::npos) << printed;
  EXPECT_NE(printed.find("heartbeat          = 1                                # default"), std::string::npos)
      << printed;
  ::unsetenv("BATON_TIMEOUT");
  std::remove(path.c_str());
}

TEST(Options, SocketsPerPeerFromFlagConfigAndBatonNsocks) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.sockets_per_peer, 2);
  ASSERT_TRUE(Parse({"--sockets-per-peer", "4"}, &o).ok());
  EXPECT_EQ(o.sockets_per_peer, 4);
  ::setenv("BATON_NSOCKS", "3", 1);
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.sockets_per_peer, 3);
  ::unsetenv("BATON_NSOCKS");
  const std::string path = WriteConfig("sockets-per-peer = 5\n");
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_EQ(o.sockets_per_peer, 5);
  std::remove(path.c_str());
  Status st = Parse({"--sockets-per-peer", "0"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--sockets-per-peer must be 1..16, not 0"), std::string::npos) << st.message();
  st = Parse({"--sockets-per-peer", "17"}, &o);
  EXPECT_NE(st.message().find("--sockets-per-peer '17' is not a count up to 16 (1..16)"), std::string::npos)
      << st.message();
}

TEST(Options, TcpBufferBytesFromFlagConfigAndEnvironment) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.tcp_buffer_bytes, DaemonOptions{}.tcp_buffer_bytes);
  ASSERT_TRUE(Parse({"--tcp-buffer-bytes", "8M"}, &o).ok());
  EXPECT_EQ(o.tcp_buffer_bytes, 8u << 20);
  ASSERT_TRUE(Parse({"--tcp-buffer-bytes", "0"}, &o).ok());
  EXPECT_EQ(o.tcp_buffer_bytes, 0u);
  ::setenv("BATON_TCP_BUFFER_BYTES", "256K", 1);
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.tcp_buffer_bytes, 256u << 10);
  ::unsetenv("BATON_TCP_BUFFER_BYTES");
  const std::string path = WriteConfig("tcp-buffer-bytes = 1M\n");
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_EQ(o.tcp_buffer_bytes, 1u << 20);
  std::remove(path.c_str());
  const Status st = Parse({"--tcp-buffer-bytes", "2G"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--tcp-buffer-bytes '2G' is not a size from 0 to 1G"), std::string::npos)
      << st.message();
}

TEST(Options, FastPathLimitFromFlagAndConfig) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.fast_path_max_bytes, 16384u);
  ASSERT_TRUE(Parse({"--fast-path-max-bytes", "64K"}, &o).ok());
  EXPECT_EQ(o.fast_path_max_bytes, 65536u);
  ASSERT_TRUE(Parse({"--fast-path-max-bytes", "0"}, &o).ok());
  EXPECT_EQ(o.fast_path_max_bytes, 0u);
  const std::string path = WriteConfig("fast-path-max-bytes = 1M\n");
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_EQ(o.fast_path_max_bytes, 1u << 20);
  std::remove(path.c_str());
  Status st = Parse({"--fast-path-max-bytes", "2M"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--fast-path-max-bytes '2M' is not a size from 0 to 1M"), std::string::npos)
      << st.message();
}

TEST(Options, GpuCollectivesOnByDefaultOffByFlagOrConfig) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_TRUE(o.gpu_collectives);
  ASSERT_TRUE(Parse({"--gpu-collectives", "off"}, &o).ok());
  EXPECT_FALSE(o.gpu_collectives);
  const std::string path = WriteConfig("gpu-collectives = off\n");
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_FALSE(o.gpu_collectives);
  EXPECT_NE(PrintConfig(o).find("gpu-collectives    = off"), std::string::npos) << PrintConfig(o);
  ASSERT_TRUE(Parse({"--config", path, "--gpu-collectives", "on"}, &o).ok());
  EXPECT_TRUE(o.gpu_collectives);
  std::remove(path.c_str());
  const Status st = Parse({"--gpu-collectives", "yes"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--gpu-collectives 'yes': say on or off"), std::string::npos) << st.message();
}

TEST(Options, GpuAllReduceShapeIsAutoUnlessNamed) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.gpu_allreduce, GpuAllReduceShape::kAuto);
  ASSERT_TRUE(Parse({"--gpu-allreduce", "spread"}, &o).ok());
  EXPECT_EQ(o.gpu_allreduce, GpuAllReduceShape::kSpread);
  const std::string path = WriteConfig("gpu-allreduce = gathered\n");
  o = DaemonOptions{};
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_EQ(o.gpu_allreduce, GpuAllReduceShape::kGathered);
  EXPECT_NE(PrintConfig(o).find("gpu-allreduce      = gathered"), std::string::npos) << PrintConfig(o);
  std::remove(path.c_str());
  const Status st = Parse({"--gpu-allreduce", "ring"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--gpu-allreduce 'ring': say auto, spread or gathered"), std::string::npos)
      << st.message();
}

TEST(Options, DeviceSharingAcceptsAnyUnlessFdOnlyIsNamed) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.device_sharing, DeviceSharingPolicy::kAny);
  const std::string path = WriteConfig("device-sharing = fd-only\n");
  ASSERT_TRUE(Parse({"--config", path}, &o).ok());
  EXPECT_EQ(o.device_sharing, DeviceSharingPolicy::kFdOnly);
  EXPECT_NE(PrintConfig(o).find("device-sharing     = fd-only"), std::string::npos) << PrintConfig(o);
  ASSERT_TRUE(Parse({"--config", path, "--device-sharing", "any"}, &o).ok());
  EXPECT_EQ(o.device_sharing, DeviceSharingPolicy::kAny);
  std::remove(path.c_str());
  const Status st = Parse({"--device-sharing", "ipc"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--device-sharing 'ipc': say any or fd-only"), std::string::npos) << st.message();
}

TEST(Options, TcpCongestionIsANameOrTheSystemDefault) {
  DaemonOptions o;
  ASSERT_TRUE(Parse({}, &o).ok());
  EXPECT_EQ(o.tcp_congestion, "");
  ASSERT_TRUE(Parse({"--tcp-congestion", "cubic"}, &o).ok());
  EXPECT_EQ(o.tcp_congestion, "cubic");
  Status st = Parse({"--tcp-congestion", "cu bic;"}, &o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--tcp-congestion 'cu bic;' is not an algorithm name"), std::string::npos)
      << st.message();
}

TEST(Options, InvalidValueFromTheEnvironmentSaysWhere) {
  ::setenv("BATON_DEBUG", "LOUD", 1);
  DaemonOptions o;
  Status st = Parse({}, &o);
  ::unsetenv("BATON_DEBUG");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("debug level 'LOUD' (environment BATON_DEBUG)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace baton
