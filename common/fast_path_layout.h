// The shared region of the small-message fast path (docs/architecture.md,
// "Small collectives within a node").
//
// When every rank of a communicator is on one node, batond creates one
// region per communicator and passes it to each rank with its CommInit (or
// split) reply. Blocking collectives small enough to fit a slot then run
// among the ranks themselves, without batond: each rank copies its input
// into its own slot, publishes the sequence number, waits until every rank
// has published the same one, and computes its own output from all slots.
//
// Why two buffers per rank: a rank can run at most one fast-path operation
// ahead of the slowest (it cannot finish op k before everyone published k),
// so op k+1 writing buffer (k+1)%2 never touches buffer k%2 that a slower
// rank may still be reading, and no "done reading" handshake is needed.
//
// batond writes only the header (at creation, and `failed` when the
// communicator fails); what the ranks write it reads only to show an
// operation that waits for a rank (batonctl inflight), as untrusted data.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace baton::ipc {

inline constexpr uint32_t kFastPathMagic = 0x31504642;  // "BFP1"
inline constexpr int kFastPathMaxRanks = 64;
inline constexpr size_t kFastPathHeaderBytes = 4096;

struct FastPathHeader {
  uint32_t magic;
  uint32_t nranks;
  uint64_t slot_bytes;   // bytes of each of a rank's two buffers: the largest input that takes the fast path
  uint32_t timeout_ms;   // the communicator's collective timeout
  uint32_t reserved;
  alignas(64) std::atomic<uint32_t> sleepers;  // ranks asleep on a futex: an arriving rank wakes them
  alignas(64) std::atomic<uint32_t> failed;    // nonzero once the communicator failed (batond writes it)
  int32_t code;                                // baton::Code of the failure
  char message[1024];                          // what failed, for the waiting ranks' errors
};
static_assert(sizeof(FastPathHeader) <= kFastPathHeaderBytes);

// What a rank called: all ranks must agree (baton::OpSignature, flattened).
struct FastPathSignature {
  uint32_t collective;
  uint32_t dtype;
  uint32_t redop;
  int32_t root;
  uint64_t count;
};

struct alignas(64) FastPathRankSlot {
  std::atomic<uint32_t> arrived;    // futex word: the last fast-path op whose input this rank published
  uint32_t reserved;
  std::atomic<uint64_t> daemon_ops;  // collectives this rank has submitted to batond so far (see fast_path.cc)
  int64_t arrived_unix_us;           // when it published `arrived` (for batonctl inflight)
  FastPathSignature sig[2];          // per buffer
  // Followed by the two buffers of FastPathHeader::slot_bytes each.
};

// Bytes from one rank's slot to the next.
inline constexpr size_t FastPathSlotStride(uint64_t slot_bytes) {
  return (sizeof(FastPathRankSlot) + 2 * slot_bytes + 63) & ~size_t{63};
}
inline constexpr size_t FastPathRegionBytes(int nranks, uint64_t slot_bytes) {
  return kFastPathHeaderBytes + static_cast<size_t>(nranks) * FastPathSlotStride(slot_bytes);
}

struct FastPathView {
  FastPathHeader* header = nullptr;
  uint8_t* slots = nullptr;
  uint64_t slot_bytes = 0;

  static FastPathView At(void* base) {
    auto* p = static_cast<uint8_t*>(base);
    auto* h = reinterpret_cast<FastPathHeader*>(p);
    return {h, p + kFastPathHeaderBytes, h->slot_bytes};
  }
  FastPathRankSlot& slot(int rank) const {
    return *reinterpret_cast<FastPathRankSlot*>(slots + rank * FastPathSlotStride(slot_bytes));
  }
  uint8_t* buffer(int rank, uint32_t seq) const {
    return slots + rank * FastPathSlotStride(slot_bytes) + sizeof(FastPathRankSlot) + (seq & 1) * slot_bytes;
  }
};

}  // namespace baton::ipc
