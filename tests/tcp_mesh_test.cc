// TcpMesh on its own: two meshes (or a mesh and a hand-written peer) over
// loopback connections, checked byte by byte. The daemon tests cover the
// mesh inside collectives; these cover the message framing itself: small
// messages batched into one system call, large ones alone or striped, a
// batch arriving a byte at a time, and a bad header inside a batch.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "tests/allocation_counter.h"
#include "transports/tcp/tcp_mesh.h"
#include "transports/tcp/wire.h"

namespace baton::tcp {
namespace {

using namespace std::chrono_literals;

// Two ends of one loopback TCP connection (client, server); a non-zero
// `client_rcvbuf` is set before connecting, so that the window it implies
// is the one negotiated (shrinking it later makes the kernel drop data).
std::pair<UniqueFd, UniqueFd> ConnectedPair(int client_rcvbuf = 0) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(listener.get(), 1), 0);
  EXPECT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  UniqueFd client(::socket(AF_INET, SOCK_STREAM, 0));
  if (client_rcvbuf > 0) {
    EXPECT_EQ(::setsockopt(client.get(), SOL_SOCKET, SO_RCVBUF, &client_rcvbuf, sizeof client_rcvbuf), 0);
  }
  EXPECT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  UniqueFd server(::accept(listener.get(), nullptr, nullptr));
  int one = 1;
  ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(server.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return {std::move(client), std::move(server)};
}

// Node 0's and node 1's meshes, `lanes` connections between them. Node 0
// polls before blocking, node 1 does not: both waiting paths run.
struct MeshPair {
  std::unique_ptr<TcpMesh> mesh[2];
};

MeshPair MakeMeshes(int lanes) {
  std::vector<std::vector<UniqueFd>> sockets0(2), sockets1(2);
  for (int l = 0; l < lanes; ++l) {
    auto [a, b] = ConnectedPair();
    sockets0[1].push_back(std::move(a));
    sockets1[0].push_back(std::move(b));
  }
  MeshPair p;
  p.mesh[0] = std::make_unique<TcpMesh>(std::vector<std::string>{"self", "peer"}, std::move(sockets0), 50us);
  p.mesh[1] = std::make_unique<TcpMesh>(std::vector<std::string>{"peer", "self"}, std::move(sockets1), 0us);
  return p;
}

MessageStamp Stamp(uint64_t seq) {
  MessageStamp s;
  s.comm_uid = 77;
  s.seq = seq;
  s.sig = OpSignature{Collective::kAllToAll, DataType::kUint8, RedOp::kSum, -1, 1234};
  return s;
}

// Byte-wise sum, so that any message length can be folded.
const ReduceFn kAddBytes = [](uint8_t* dst, const uint8_t* a, const uint8_t* in, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(a[i] + in[i]);
};

uint8_t Pattern(int from, size_t msg, size_t i) { return static_cast<uint8_t>(from * 101 + msg * 31 + i * 7); }

// One direction of traffic: what a node sends, and how the other receives
// each message (alternately a plain receive and a fold with an operand).
struct Stream {
  std::vector<std::vector<uint8_t>> sent, received, operand;
};

Stream MakeStream(int from, const std::vector<size_t>& sizes) {
  Stream s;
  for (size_t m = 0; m < sizes.size(); ++m) {
    std::vector<uint8_t> data(sizes[m]), op(sizes[m]);
    for (size_t i = 0; i < sizes[m]; ++i) {
      data[i] = Pattern(from, m, i);
      op[i] = Pattern(from + 7, m, i);
    }
    s.sent.push_back(std::move(data));
    s.operand.push_back(std::move(op));
    s.received.emplace_back(sizes[m], 0xEE);
  }
  return s;
}

void AddOps(int peer, Stream& out, Stream& in, std::vector<NetOp>* ops) {
  for (size_t m = 0; m < out.sent.size(); ++m) {
    ops->push_back({NetOp::kSend, peer, out.sent[m].data(), out.sent[m].size(), static_cast<uint32_t>(m)});
  }
  for (size_t m = 0; m < in.received.size(); ++m) {
    const bool fold = m % 2 == 1;
    ops->push_back({fold ? NetOp::kRecvReduce : NetOp::kRecv, peer, in.received[m].data(), in.received[m].size(),
                    static_cast<uint32_t>(m), fold ? in.operand[m].data() : nullptr});
  }
}

void ExpectDelivered(const Stream& s, const char* what) {
  for (size_t m = 0; m < s.sent.size(); ++m) {
    for (size_t i = 0; i < s.sent[m].size(); ++i) {
      const uint8_t want = m % 2 == 1 ? static_cast<uint8_t>(s.operand[m][i] + s.sent[m][i]) : s.sent[m][i];
      ASSERT_EQ(s.received[m][i], want) << what << ": message " << m << " (" << s.sent[m].size() << " B), byte " << i;
    }
  }
}

// One exchange between the two meshes, both ways at once: node 0 sends
// messages of the `up` sizes and receives ones of the `down` sizes. Checks
// both results and every byte delivered; returns how many times node 0's
// thread allocated during its Exchange.
int ExchangeAndCheck(MeshPair& p, uint64_t seq, const std::vector<size_t>& up, const std::vector<size_t>& down) {
  Stream s01 = MakeStream(0, up), s10 = MakeStream(1, down);
  std::vector<NetOp> ops0, ops1;
  AddOps(1, s01, s10, &ops0);
  AddOps(0, s10, s01, &ops1);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  Status st1;
  std::thread t([&] { st1 = p.mesh[1]->Exchange(ops1, Stamp(seq), kAddBytes, deadline); });
  Status st0;
  int allocations = 0;
  {
    baton::testing::AllocationCounter counter;
    st0 = p.mesh[0]->Exchange(ops0, Stamp(seq), kAddBytes, deadline);
    allocations = counter.count();
  }
  t.join();
  EXPECT_TRUE(st0.ok()) << st0.ToString();
  EXPECT_TRUE(st1.ok()) << st1.ToString();
  if (st0.ok() && st1.ok()) {
    ExpectDelivered(s01, "node 0 to node 1");
    ExpectDelivered(s10, "node 1 to node 0");
  }
  return allocations;
}

class TcpMeshLanes : public ::testing::TestWithParam<int> {};

// More small messages than one batch holds, small messages whose total
// overflows a batch, batches that a large message splits, empty messages,
// messages of exactly the small limit and one byte more, and one large
// enough to be striped over the lanes; both directions at once, two
// exchanges in a row on the same connections.
TEST_P(TcpMeshLanes, MixedSizesArriveWholeAndInOrderBothWays) {
  MeshPair p = MakeMeshes(GetParam());
  const size_t small = TcpMesh::kSmallMessageMaxBytes;
  const std::vector<size_t> up = {0, 8, small, 100, small + 1, 3, 0, 300000, 16, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1};
  const std::vector<size_t> down = {small + 1, 0, 0, 0, 2, small / 2, small / 2, small / 2, 64, 1 << 20, 12, 0};
  for (uint64_t seq = 1; seq <= 2 && !HasFailure(); ++seq) ExchangeAndCheck(p, seq, up, down);
}

// A small collective's exchange (a signal and 8 bytes each way, one of
// them folded) allocates nothing once the mesh has carried one like it.
TEST_P(TcpMeshLanes, ASmallExchangeAllocatesNothingOnceWarm) {
  MeshPair p = MakeMeshes(GetParam());
  const std::vector<size_t> sizes = {0, 8};
  int allocations = 0;
  for (uint64_t seq = 1; seq <= 10 && !HasFailure(); ++seq) {
    const int n = ExchangeAndCheck(p, seq, sizes, sizes);
    if (seq > 2) allocations += n;
  }
  EXPECT_EQ(allocations, 0) << "allocations in 8 warm exchanges";
}

INSTANTIATE_TEST_SUITE_P(OneAndTwoLanes, TcpMeshLanes, ::testing::Values(1, 2),
                         [](const auto& info) { return std::to_string(info.param) + "_lanes"; });

// A peer written by hand: one connection whose far end the test drives.
struct RawPeer {
  std::unique_ptr<TcpMesh> mesh;
  UniqueFd far;
};

RawPeer MakeRawPeer() {
  auto [a, b] = ConnectedPair();
  std::vector<std::vector<UniqueFd>> sockets(2);
  sockets[0].push_back(std::move(b));
  RawPeer p;
  p.mesh = std::make_unique<TcpMesh>(std::vector<std::string>{"raw peer", "self"}, std::move(sockets), 20us);
  p.far = std::move(a);
  return p;
}

std::vector<uint8_t> Framed(const MessageStamp& stamp, uint32_t index, const std::vector<uint8_t>& body,
                            uint64_t declared_bytes) {
  const DataHeader h = MakeHeader(stamp, index, declared_bytes);
  std::vector<uint8_t> out(sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// Small messages sent straight from the exchange (not through Asio) into a
// socket that takes only part of the batch: the rest follows, whole and in
// order, once the far end reads.
TEST(TcpMesh, ASmallBatchLargerThanTheSocketBufferGoesOutWhole) {
  const int small_buffer = 4096;
  auto [a, b] = ConnectedPair(small_buffer);
  ASSERT_EQ(::setsockopt(b.get(), SOL_SOCKET, SO_SNDBUF, &small_buffer, sizeof small_buffer), 0);
  std::vector<std::vector<UniqueFd>> sockets(2);
  sockets[0].push_back(std::move(b));
  TcpMesh mesh(std::vector<std::string>{"raw peer", "self"}, std::move(sockets), 20us);
  UniqueFd far = std::move(a);
  const MessageStamp stamp = Stamp(4);
  // 64 batches of 8 messages of 4000 B: far more than both buffers hold.
  constexpr uint32_t kMessages = 512;
  std::vector<std::vector<uint8_t>> bodies;
  std::vector<NetOp> ops;
  for (uint32_t i = 0; i < kMessages; ++i) {
    bodies.emplace_back(4000);
    for (size_t k = 0; k < 4000; ++k) bodies.back()[k] = Pattern(0, i, k);
  }
  for (uint32_t i = 0; i < kMessages; ++i) ops.push_back({NetOp::kSend, 0, bodies[i].data(), 4000, i});
  std::vector<uint8_t> wire;
  std::thread reader([&] {
    std::this_thread::sleep_for(100ms);  // let the sender fill the socket first
    const size_t want = kMessages * (sizeof(DataHeader) + 4000);
    wire.resize(want);
    size_t have = 0;
    while (have < want) {
      const ssize_t got = ::recv(far.get(), wire.data() + have, want - have, 0);
      ASSERT_GT(got, 0);
      have += static_cast<size_t>(got);
    }
  });
  const Status st = mesh.Exchange(ops, stamp, kAddBytes, std::chrono::steady_clock::now() + 30s);
  reader.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (uint32_t i = 0; i < kMessages; ++i) {
    DataHeader h;
    const uint8_t* at = wire.data() + i * (sizeof h + 4000);
    std::memcpy(&h, at, sizeof h);
    ASSERT_TRUE(HeaderMatches(h, stamp, i, 4000)) << "message " << i;
    ASSERT_EQ(std::memcmp(at + sizeof h, bodies[i].data(), 4000), 0) << "message " << i;
  }
}

// The batch [0 B, 8 B, 4 B] arrives one byte per segment: every partial
// header and partial body is waited for and completed. With no gap between
// the bytes they come while the mesh polls the socket itself; with 200 us
// between them (the mesh polls for 20 us) it waits for each in Asio, and
// polls again after each.
class TcpMeshByteGaps : public ::testing::TestWithParam<std::chrono::microseconds> {};

TEST_P(TcpMeshByteGaps, ABatchArrivingOneByteAtATimeIsReassembled) {
  const auto gap = GetParam();
  RawPeer p = MakeRawPeer();
  const MessageStamp stamp = Stamp(5);
  const std::vector<uint8_t> a = {}, b = {1, 2, 3, 4, 5, 6, 7, 8}, c = {9, 10, 11, 12};
  std::vector<uint8_t> wire;
  for (const auto& [i, body] : {std::pair<uint32_t, const std::vector<uint8_t>*>{0, &a}, {1, &b}, {2, &c}}) {
    const auto f = Framed(stamp, i, *body, body->size());
    wire.insert(wire.end(), f.begin(), f.end());
  }
  std::thread writer([&] {
    for (uint8_t byte : wire) {
      ASSERT_EQ(::send(p.far.get(), &byte, 1, MSG_NOSIGNAL), 1);
      if (gap.count() > 0) std::this_thread::sleep_for(gap);
    }
  });
  std::vector<uint8_t> got_b(8, 0), got_c(4, 0), operand_c = {100, 100, 100, 100};
  const std::vector<NetOp> ops = {{NetOp::kRecv, 0, nullptr, 0, 0},
                                  {NetOp::kRecv, 0, got_b.data(), 8, 1},
                                  {NetOp::kRecvReduce, 0, got_c.data(), 4, 2, operand_c.data()}};
  const Status st = p.mesh->Exchange(ops, stamp, kAddBytes, std::chrono::steady_clock::now() + 30s);
  writer.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got_b, b);
  EXPECT_EQ(got_c, (std::vector<uint8_t>{109, 110, 111, 112}));
}

INSTANTIATE_TEST_SUITE_P(PolledAndWaited, TcpMeshByteGaps, ::testing::Values(0us, 200us),
                         [](const auto& info) { return std::to_string(info.param.count()) + "us_apart"; });

// Inside a batch, the second message belongs to another collective: the
// mesh reports the mismatch, naming both, as soon as that header is in.
TEST(TcpMesh, AForeignHeaderInsideABatchIsAMismatchNamingBothCollectives) {
  RawPeer p = MakeRawPeer();
  const MessageStamp stamp = Stamp(9);
  MessageStamp other = stamp;
  other.sig.count = 99;
  std::vector<uint8_t> wire = Framed(stamp, 0, {}, 0);
  const auto second = Framed(other, 1, {1, 2, 3, 4, 5, 6, 7, 8}, 8);
  wire.insert(wire.end(), second.begin(), second.end());
  ASSERT_EQ(::send(p.far.get(), wire.data(), wire.size(), MSG_NOSIGNAL), static_cast<ssize_t>(wire.size()));
  std::vector<uint8_t> got(8, 0);
  const std::vector<NetOp> ops = {{NetOp::kRecv, 0, nullptr, 0, 0}, {NetOp::kRecv, 0, got.data(), 8, 1}};
  const Status st = p.mesh->Exchange(ops, stamp, kAddBytes, std::chrono::steady_clock::now() + 60s);
  EXPECT_EQ(st.code(), Code::kMismatch) << st.ToString();
  EXPECT_NE(st.message().find("count=99"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("count=1234"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("raw peer"), std::string::npos) << st.message();
}

// A header that announces more bytes than expected, and the bytes never
// come: reported from the header alone (not a timeout waiting for a body).
TEST(TcpMesh, ALongerMessageThanExpectedIsReportedFromItsHeader) {
  RawPeer p = MakeRawPeer();
  const MessageStamp stamp = Stamp(3);
  const auto wire = Framed(stamp, 0, {}, 16);
  ASSERT_EQ(::send(p.far.get(), wire.data(), wire.size(), MSG_NOSIGNAL), static_cast<ssize_t>(wire.size()));
  std::vector<uint8_t> got(8, 0), next(4, 0);
  const std::vector<NetOp> ops = {{NetOp::kRecv, 0, got.data(), 8, 0}, {NetOp::kRecv, 0, next.data(), 4, 1}};
  const Status st = p.mesh->Exchange(ops, stamp, kAddBytes, std::chrono::steady_clock::now() + 60s);
  EXPECT_EQ(st.code(), Code::kInternalError) << st.ToString();
  EXPECT_NE(st.message().find("message 0 of 16 bytes, expected message 0 of 8 bytes"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace baton::tcp
