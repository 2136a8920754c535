// Mesh: the data connections of one communicator on one node, to every other
// node of that communicator. The executor hands it one phase of network steps
// at a time; an implementation moves the bytes (TCP today, RDMA later).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "common/status.h"
#include "common/types.h"

namespace baton {

// Stamped on every message of a collective so that a receiver can tell a
// mismatched collective (different op, count, dtype, root or sequence) from
// a matching one without an extra round trip.
struct MessageStamp {
  uint64_t comm_uid = 0;
  uint64_t seq = 0;
  OpSignature sig;
};

struct NetOp {
  enum Kind { kSend, kRecv, kRecvReduce } kind = kSend;
  int peer = -1;          // node index
  uint8_t* data = nullptr;
  uint64_t bytes = 0;
  uint32_t index = 0;     // position of this message in the (this node, peer) stream of the collective
  // kRecvReduce only: when set, data = operand (op) incoming; data's old
  // contents are not read (operand may equal data).
  const uint8_t* operand = nullptr;
};

// Combines `bytes` of incoming data with an operand: dst = a (op) incoming.
// `a` is dst itself for a fold in place, or a kRecvReduce's operand.
using ReduceFn = std::function<void(uint8_t* dst, const uint8_t* a, const uint8_t* incoming, uint64_t bytes)>;

class Mesh {
 public:
  virtual ~Mesh() = default;

  // Runs `ops` concurrently (messages to or from one peer keep their order)
  // and returns when all are done, one fails, or `deadline` passes.
  virtual Status Exchange(std::span<const NetOp> ops, const MessageStamp& stamp, const ReduceFn& reduce,
                          std::chrono::steady_clock::time_point deadline) = 0;

  // Closes every connection; peers blocked on us see the failure at once.
  // Only from the thread that calls Exchange.
  virtual void Close() = 0;

  // Thread-safe: makes a running (or the next) Exchange fail promptly.
  virtual void Interrupt() = 0;

  // "node 2 (10.0.0.3:7100)" for messages.
  virtual std::string DescribePeer(int node) const = 0;
};

}  // namespace baton
