// The job-secret handshake between daemons, over a socketpair.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "transports/tcp/handshake.h"

namespace baton::tcp {
namespace {

struct Outcome {
  Status dialer;
  Status listener;
};

Outcome Handshake(const std::string& dialer_secret, const std::string& listener_secret, const Hello& dialer_hello,
            const Hello& listener_hello) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Outcome out;
  std::thread dialer([&] {
    DialerHandshake h;
    out.dialer = h.Start(sv[0], deadline);
    if (out.dialer.ok()) out.dialer = h.Finish(sv[0], dialer_secret, dialer_hello, deadline);
    ::shutdown(sv[0], SHUT_RDWR);
  });
  out.listener = AuthenticateListener(sv[1], listener_secret, listener_hello, deadline);
  ::shutdown(sv[1], SHUT_RDWR);
  dialer.join();
  ::close(sv[0]);
  ::close(sv[1]);
  return out;
}

const Hello kHello{kHelloMagic, kWireVersion, 1, 0x1234, 0, 1};

TEST(Handshake, SameSecretAuthenticatesBothWays) {
  Outcome o = Handshake("s3cret", "s3cret", kHello, kHello);
  EXPECT_TRUE(o.dialer.ok()) << o.dialer.ToString();
  EXPECT_TRUE(o.listener.ok()) << o.listener.ToString();
}

TEST(Handshake, WrongSecretIsRefusedOnBothSides) {
  Outcome o = Handshake("guess", "s3cret", kHello, kHello);
  EXPECT_EQ(o.dialer.code(), Code::kRemoteError);
  EXPECT_NE(o.dialer.message().find("authentication failed"), std::string::npos) << o.dialer.message();
  EXPECT_EQ(o.listener.code(), Code::kRemoteError) << o.listener.ToString();
}

TEST(Handshake, ProofIsBoundToTheConnection) {
  // A proof computed for another communicator (or direction) does not pass.
  Hello other = kHello;
  other.comm_uid = 0x9999;
  Outcome o = Handshake("s3cret", "s3cret", other, kHello);
  EXPECT_FALSE(o.dialer.ok());
  EXPECT_FALSE(o.listener.ok());
}

TEST(Handshake, SilentPeerTimesOut) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Status st = AuthenticateListener(sv[1], "x", kHello, std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
  EXPECT_EQ(st.code(), Code::kTimeout);
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
}  // namespace baton::tcp
