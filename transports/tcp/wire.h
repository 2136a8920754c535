// Wire format between daemons over TCP. All fields little-endian (the only
// byte order Baton supports; checked by the magic).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "transports/mesh.h"

namespace baton::tcp {

inline constexpr uint32_t kHelloMagic = 0x4e544142;  // "BATN"
inline constexpr uint32_t kDataMagic = 0x44544142;   // "BATD"
inline constexpr uint16_t kWireVersion = 1;

enum class Channel : uint16_t { kCollective = 1, kPointToPoint = 2 };

// Collective data may run over several connections per peer node (stripes):
// stripe 0 is Channel::kCollective, stripe s > 0 is channel 16 + s.
inline constexpr int kMaxSocketsPerPeer = 16;
inline Channel CollectiveStripe(int s) {
  return s == 0 ? Channel::kCollective : static_cast<Channel>(16 + s);
}

// First bytes on every new connection: who is calling and for what.
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t channel;    // Channel
  uint64_t comm_uid;
  uint32_t from_node;
  uint32_t to_node;
};
static_assert(sizeof(Hello) == 24);

// Precedes every collective message.
struct DataHeader {
  uint32_t magic;
  uint32_t index;      // message number within this collective on this (from, to) stream
  uint64_t comm_uid;
  uint64_t seq;
  uint64_t bytes;
  uint64_t count;
  uint32_t collective;
  uint32_t dtype;
  uint32_t redop;
  int32_t root;
};
static_assert(sizeof(DataHeader) == 56);

// A Hello this version accepts: magic, version and a known channel.
bool IsValidHello(const Hello& h);

DataHeader MakeHeader(const MessageStamp& stamp, uint32_t index, uint64_t bytes);

// True if `got` is exactly the header expected: the per-message check,
// which builds no strings. CheckHeader says what is wrong when it is false.
bool HeaderMatches(const DataHeader& got, const MessageStamp& want, uint32_t want_index, uint64_t want_bytes);

// Checks an incoming header against what this node expects. A different
// signature or sequence number is a kMismatch naming both sides.
Status CheckHeader(const DataHeader& got, const MessageStamp& want, uint32_t want_index, uint64_t want_bytes,
                   const std::string& peer_desc);

// Precedes every point-to-point message.
struct P2pHeader {
  uint32_t magic;
  int32_t src_rank;
  int32_t dst_rank;
  uint32_t dtype;
  uint64_t seq;     // per (src, dst) pair
  uint64_t count;
  uint64_t bytes;
};
static_assert(sizeof(P2pHeader) == 40);

}  // namespace baton::tcp
