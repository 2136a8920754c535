// Completion conditions for asio::async_read / async_write that let one
// system call move a whole message.
//
// Asio's own conditions (transfer_all, the default, transfer_at_least,
// transfer_exactly) ask for at most 64 KiB per read_some / write_some. A
// large message then costs one system call, and one trip through the
// reactor (a handler queued, an epoll_wait), per 64 KiB: a 4 MiB Broadcast
// between two daemons took 1.5x as long as with one call per message
// (docs/benchmarks.md, "One system call per message"). The kernel takes or
// returns as much as the socket buffer allows in one call, so these
// conditions offer it everything that is left.
#pragma once
#include <boost/system/error_code.hpp>
#include <cstddef>

namespace baton::tcp {

// Asks for everything left of the buffers, in as few calls as the socket allows.
struct TransferAll {
  size_t operator()(const boost::system::error_code& ec, size_t /*transferred*/) const {
    return ec ? 0 : kAsMuchAsFits;
  }
  // Larger than any buffer sequence: the operation clips it to what is left.
  static constexpr size_t kAsMuchAsFits = size_t{1} << 40;
};

// Completes once `minimum` bytes have arrived; each call may fill the rest of
// the buffer (what has already arrived beyond `minimum` comes with it).
class TransferAtLeast {
 public:
  explicit TransferAtLeast(size_t minimum) : minimum_(minimum) {}
  size_t operator()(const boost::system::error_code& ec, size_t transferred) const {
    return ec || transferred >= minimum_ ? 0 : TransferAll::kAsMuchAsFits;
  }

 private:
  size_t minimum_;
};

}  // namespace baton::tcp
