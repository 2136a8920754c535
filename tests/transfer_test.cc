// The completion conditions of transports/tcp/transfer.h: every system call
// is offered all that is left of the message (Asio's own conditions offer
// 64 KiB), and the data arrives whole.
#include "transports/tcp/transfer.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <cstdint>
#include <vector>

namespace baton::tcp {
namespace {

namespace asio = boost::asio;
using Socket = asio::local::stream_protocol::socket;

// A stream that records how many bytes each read_some / write_some call was
// offered, then passes the call on to a real socket.
class CountingStream {
 public:
  using executor_type = Socket::executor_type;
  explicit CountingStream(Socket& s) : socket_(s) {}
  executor_type get_executor() { return socket_.get_executor(); }

  template <typename Buffers, typename Handler>
  auto async_read_some(const Buffers& b, Handler&& h) {
    offered.push_back(asio::buffer_size(b));
    return socket_.async_read_some(b, std::forward<Handler>(h));
  }
  template <typename Buffers, typename Handler>
  auto async_write_some(const Buffers& b, Handler&& h) {
    offered.push_back(asio::buffer_size(b));
    return socket_.async_write_some(b, std::forward<Handler>(h));
  }

  std::vector<size_t> offered;

 private:
  Socket& socket_;
};

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + i / 251);
  return v;
}

TEST(Transfer, EveryCallIsOfferedAllThatIsLeftAndTheMessageArrivesWhole) {
  asio::io_context io;
  Socket a(io), b(io);
  asio::local::connect_pair(a, b);
  const size_t kBytes = 1 << 20;  // 16 times what Asio's own transfer_all offers a call
  const std::vector<uint8_t> sent = Pattern(kBytes);
  std::vector<uint8_t> got(kBytes, 0);
  CountingStream writer(a), reader(b);
  size_t wrote = 0, read = 0;
  boost::system::error_code write_ec, read_ec;
  asio::async_write(writer, asio::buffer(sent), TransferAll(), [&](const boost::system::error_code& ec, size_t n) {
    write_ec = ec;
    wrote = n;
  });
  asio::async_read(reader, asio::buffer(got), TransferAll(), [&](const boost::system::error_code& ec, size_t n) {
    read_ec = ec;
    read = n;
  });
  io.run();
  ASSERT_FALSE(write_ec) << write_ec.message();
  ASSERT_FALSE(read_ec) << read_ec.message();
  EXPECT_EQ(wrote, kBytes);
  EXPECT_EQ(read, kBytes);
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(got[i], sent[i]) << "byte " << i;
  // Each call is offered the whole rest: kBytes first, and then exactly
  // what the calls before it left (the socket takes what it can per call).
  for (const auto* s : {&writer, &reader}) {
    ASSERT_FALSE(s->offered.empty());
    EXPECT_EQ(s->offered.front(), kBytes);
    for (size_t i = 1; i < s->offered.size(); ++i) EXPECT_LT(s->offered[i], s->offered[i - 1]);
  }
}

TEST(Transfer, AtLeastCompletesWithWhatHasArrivedBeyondTheMinimum) {
  asio::io_context io;
  Socket a(io), b(io);
  asio::local::connect_pair(a, b);
  const std::vector<uint8_t> sent = Pattern(300);
  asio::write(a, asio::buffer(sent));  // all there before the read starts
  std::vector<uint8_t> got(4096, 0);
  CountingStream reader(b);
  size_t read = 0;
  boost::system::error_code read_ec;
  asio::async_read(reader, asio::buffer(got), TransferAtLeast(100), [&](const boost::system::error_code& ec, size_t n) {
    read_ec = ec;
    read = n;
  });
  io.run();
  ASSERT_FALSE(read_ec) << read_ec.message();
  EXPECT_EQ(read, sent.size());  // not 100: the rest came with the same call
  ASSERT_EQ(reader.offered.size(), 1u);
  EXPECT_EQ(reader.offered[0], got.size());
  for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(got[i], sent[i]) << "byte " << i;
}

TEST(Transfer, AnErrorOrAReachedMinimumEndsTheOperation) {
  const boost::system::error_code reset = asio::error::connection_reset;
  EXPECT_EQ(TransferAll()(reset, 0), 0u);
  EXPECT_GT(TransferAll()({}, 12345), size_t{1} << 32);
  EXPECT_EQ(TransferAtLeast(10)(reset, 0), 0u);
  EXPECT_EQ(TransferAtLeast(10)({}, 10), 0u);
  EXPECT_EQ(TransferAtLeast(10)({}, 11), 0u);
  EXPECT_GT(TransferAtLeast(10)({}, 9), size_t{1} << 32);
}

}  // namespace
}  // namespace baton::tcp
