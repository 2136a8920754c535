// Data connection tuning (transports/tcp/connection_broker.h): the TCP
// congestion control batond was told to use reaches its sockets, and one
// the kernel refuses is an error at start-up, not a silent default; a fixed
// buffer size reaches them too, and 0 leaves them as the kernel makes them.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <string>

#include "common/unique_fd.h"
#include "daemon/options.h"
#include "transports/tcp/connection_broker.h"

namespace baton::tcp {
namespace {

std::string CongestionOf(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name - 1;
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
  return name;
}

TEST(DataSocket, CongestionControlReachesNewSocketsAndBadNamesAreRefused) {
  const std::string system_default = DataCongestionControl();
  ASSERT_FALSE(system_default.empty());
  // reno is built into every Linux kernel.
  ASSERT_TRUE(SetDataCongestionControl("reno").ok());
  EXPECT_EQ(DataCongestionControl(), "reno");
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(s.valid());
  TuneDataSocket(s.get());
  EXPECT_EQ(CongestionOf(s.get()), "reno");

  Status st = SetDataCongestionControl("no_such_cc");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("TCP congestion control 'no_such_cc' is not usable here"), std::string::npos)
      << st.message();
  EXPECT_EQ(DataCongestionControl(), "reno") << "a refused name changes nothing";

  ASSERT_TRUE(SetDataCongestionControl("").ok());
  EXPECT_EQ(DataCongestionControl(), system_default);
  UniqueFd t(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  TuneDataSocket(t.get());
  EXPECT_EQ(CongestionOf(t.get()), system_default);
}

int BufferOf(int fd, int option) {
  int value = 0;
  socklen_t len = sizeof value;
  EXPECT_EQ(::getsockopt(fd, SOL_SOCKET, option, &value, &len), 0);
  return value;
}

TEST(DataSocket, BufferSizeReachesNewSocketsAndZeroLeavesTheKernelsAutotuning) {
  // 128 KiB is under every kernel's default net.core.rmem_max / wmem_max
  // (212992), so the kernel grants it whole (and reports it doubled).
  SetDataSocketBuffer(128 << 10);
  UniqueFd fixed(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(fixed.valid());
  TuneDataSocket(fixed.get());
  EXPECT_EQ(BufferOf(fixed.get(), SO_SNDBUF), 2 * (128 << 10));
  EXPECT_EQ(BufferOf(fixed.get(), SO_RCVBUF), 2 * (128 << 10));
  const SocketBuffers probed = ProbeDataSocketBuffers();
  EXPECT_EQ(probed.send, 128u << 10);
  EXPECT_EQ(probed.receive, 128u << 10);

  SetDataSocketBuffer(0);
  UniqueFd untouched(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  UniqueFd autotuned(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(untouched.valid() && autotuned.valid());
  TuneDataSocket(autotuned.get());
  EXPECT_EQ(BufferOf(autotuned.get(), SO_SNDBUF), BufferOf(untouched.get(), SO_SNDBUF));
  EXPECT_EQ(BufferOf(autotuned.get(), SO_RCVBUF), BufferOf(untouched.get(), SO_RCVBUF));

  SetDataSocketBuffer(DaemonOptions{}.tcp_buffer_bytes);  // as the rest of the process expects
}

TEST(DataSocket, ACappedDefaultGivesWayToAutotuningAndAChosenSizeStays) {
  const uint64_t k4M = 4 << 20;
  const SocketBuffers stock{212992, 212992};  // net.core.{w,r}mem_max of a stock kernel
  const SocketBuffers raised{k4M, k4M};
  EXPECT_EQ(EffectiveDataSocketBuffer(k4M, /*chosen=*/false, stock), 0u);
  EXPECT_EQ(EffectiveDataSocketBuffer(k4M, /*chosen=*/false, SocketBuffers{k4M, 212992}), 0u) << "either side capped";
  EXPECT_EQ(EffectiveDataSocketBuffer(k4M, /*chosen=*/true, stock), k4M);
  EXPECT_EQ(EffectiveDataSocketBuffer(k4M, /*chosen=*/false, raised), k4M);
  EXPECT_EQ(EffectiveDataSocketBuffer(0, /*chosen=*/false, SocketBuffers{}), 0u);
}

}  // namespace
}  // namespace baton::tcp
