// The job-secret handshake between daemons, over a socketpair, and the
// data-message header check.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "transports/tcp/handshake.h"
#include "transports/tcp/wire.h"

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

// The data-message header: the per-message check (HeaderMatches) accepts
// exactly what CheckHeader accepts, field by field.
namespace baton::tcp {
namespace {

TEST(DataHeader, FastCheckAgreesWithTheExplainingCheckForEveryField) {
  MessageStamp want;
  want.comm_uid = 0xfeed;
  want.seq = 7;
  want.sig = {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 3};
  const DataHeader good = MakeHeader(want, 2, 12);
  EXPECT_TRUE(HeaderMatches(good, want, 2, 12));
  EXPECT_TRUE(CheckHeader(good, want, 2, 12, "node n1").ok());
  std::vector<std::pair<const char*, DataHeader>> bad;
  auto with = [&](const char* what, auto change) {
    DataHeader h = good;
    change(h);
    bad.push_back({what, h});
  };
  with("magic", [](DataHeader& h) { h.magic ^= 1; });
  with("comm", [](DataHeader& h) { h.comm_uid ^= 1; });
  with("seq", [](DataHeader& h) { h.seq += 1; });
  with("index", [](DataHeader& h) { h.index += 1; });
  with("bytes", [](DataHeader& h) { h.bytes += 4; });
  with("count", [](DataHeader& h) { h.count += 1; });
  with("collective", [](DataHeader& h) { h.collective = static_cast<uint32_t>(Collective::kBroadcast); });
  with("dtype", [](DataHeader& h) { h.dtype = static_cast<uint32_t>(DataType::kInt32); });
  with("redop", [](DataHeader& h) { h.redop = static_cast<uint32_t>(RedOp::kMax); });
  with("root", [](DataHeader& h) { h.root = 0; });
  for (const auto& [what, h] : bad) {
    EXPECT_FALSE(HeaderMatches(h, want, 2, 12)) << what;
    EXPECT_FALSE(CheckHeader(h, want, 2, 12, "node n1").ok()) << what;
  }
  const Status mismatch = CheckHeader(bad[5].second, want, 2, 12, "node n1");
  EXPECT_EQ(mismatch.code(), Code::kMismatch);
  EXPECT_NE(mismatch.message().find("ranks on node n1 called allreduce(count=4"), std::string::npos)
      << mismatch.message();
}

}  // namespace
}  // namespace baton::tcp
