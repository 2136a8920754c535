// Data connection tuning (transports/tcp/connection_broker.h): the TCP
// congestion control batond was told to use reaches its sockets, and one
// the kernel refuses is an error at start-up, not a silent default.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <string>

#include "common/unique_fd.h"
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

}  // namespace
}  // namespace baton::tcp
