// The client <-> daemon protocol.
//
// Control messages travel over a Unix SOCK_SEQPACKET socket as fixed-size
// structs (one message per packet; the daemon checks type and exact size
// before reading a field). Memory segments and the submission ring are
// memfds that the daemon creates and passes with SCM_RIGHTS. The client
// passes an fd only with RegisterDevice (a GPU allocation).
//
// Collectives do not use the socket: the client writes a Descriptor into the
// submission ring in shared memory, bumps `tail` and writes the doorbell
// eventfd; the daemon copies the descriptor out (so later writes by the
// client cannot change what was validated), executes it and publishes the
// result in the Completion slot the descriptor named, waking the client with
// a futex. Everything the client writes is untrusted input to the daemon.
//
// Three words save a system call per operation on each side when the other
// side is polling rather than sleeping (each is a Dekker-style handshake:
// one side stores, then reads the other's word, both sequentially
// consistent, so at least one of them sees the other):
//  - RingControl::daemon_polling: batond threads checking `tail` right now;
//    the client rings the doorbell only when it is 0. A thread that stops
//    polling decrements it, then checks `tail` once more.
//  - RingControl::client_waiting: the client sleeps on `head` (ring full);
//    batond wakes it only then.
//  - Completion::client_sleeping: the client sleeps on `state`; batond
//    wakes it only then.
// A client that scribbles on them only delays its own operations.
//
// GPU buffers (docs/gpu.md): the client registers each device allocation
// once (RegisterDevice: a CUDA IPC handle, or the allocation itself as a
// POSIX fd with SCM_RIGHTS) and names it in descriptors like a segment. A stream-ordered descriptor (kDescStreamOrdered) also uses
// three words of its Completion slot, which the client has registered with
// CUDA: its stream writes stream_ready when it reaches the operation,
// waits for batond's stream_done, then writes stream_released.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace baton::ipc {

inline constexpr uint32_t kProtocolVersion = 6;
inline constexpr size_t kMaxMessage = 4096;

enum class MsgType : uint32_t {
  kHello = 1,
  kMemAlloc = 2,
  kMemFree = 3,
  kCommInit = 4,
  kCommSplit = 5,
  kCommDestroy = 6,
  kRegisterDevice = 7,
  kCommFailed = 8,
  kReply = 100,
};

struct MsgHeader {
  uint32_t type;
  uint32_t request_id;
};

struct HelloRequest {
  MsgHeader h;
  uint32_t version;
  uint32_t reserved;
};

struct MemAllocRequest {
  MsgHeader h;
  uint64_t size;
};

struct MemFreeRequest {
  MsgHeader h;
  uint64_t segment;
};

struct CommInitRequest {
  MsgHeader h;
  char job_id[128];
  char comm_name[64];
  char rendezvous[256];  // host:port; empty = the daemon's default
  char secret[64];
  int32_t nranks;
  int32_t rank;
  uint32_t timeout_ms;  // collective timeout; 0 = daemon default
  char algorithm[16];   // BATON_ALGO of the rank: auto, ring, hd, tree, rd, direct ("" = auto)
};

struct CommSplitRequest {
  MsgHeader h;
  uint64_t parent;
  uint64_t seq;  // the split is a collective on the parent: next sequence number
  int32_t color;  // negative: this rank joins no new communicator
  int32_t key;
};

struct CommDestroyRequest {
  MsgHeader h;
  uint64_t comm;
  uint32_t abort;  // nonzero: baton_comm_abort (fail the communicator everywhere)
  uint32_t reserved;
};

// A rank found its communicator broken on the small-message fast path
// (common/fast_path_layout.h: ranks on one node that called different
// collectives, or a rank that never came): batond aborts the communicator
// as it would for the same failure of its own, so that every rank, the
// flight recorder and batonctl see it.
struct CommFailedRequest {
  MsgHeader h;
  uint64_t comm;
  int32_t code;        // baton::Code: kMismatch or kTimeout
  uint32_t reserved;
  char message[1024];  // the rank's error, NUL-terminated
};

// Registers a device allocation, opened once by batond; the reply's value
// is its segment id, released with MemFree. The only request that carries
// file descriptors: with kSharePosixFd one per piece, none otherwise.
enum DeviceSharing : uint32_t {
  kShareCudaIpc = 0,  // ipc_handle: cudaIpcMemHandle_t of a cudaMalloc allocation
  kSharePosixFd = 1,  // the fds: cuMemCreate allocations (cuMemExportToShareableHandle)
};
// The most cuMemCreate allocations one registration maps side by side, each
// passed as an fd. PyTorch's expandable segments map 20 MiB at a time, so a
// 1 GiB tensor spans 52; 128 covers 2.5 GiB. Bounded by the kernel (at most
// 253 fds on one message, SCM_MAX_FD) and by the fds a client holds open
// while it registers.
inline constexpr uint32_t kMaxDevicePieces = 128;
struct RegisterDeviceRequest {
  MsgHeader h;
  uint8_t ipc_handle[64];   // kShareCudaIpc only
  uint8_t device_uuid[16];  // the device it is on (ordinals differ between processes)
  uint64_t size;            // bytes of the allocation (kSharePosixFd: of all pieces)
  uint32_t sharing;         // DeviceSharing
  uint32_t pieces;          // kSharePosixFd: fds passed, 1..kMaxDevicePieces; else 0
  uint64_t piece_bytes[kMaxDevicePieces];  // kSharePosixFd: bytes mapped of fd i, from its start, side by side
};

// The one reply type. Fds (ring + doorbell for Hello, the segment for
// MemAlloc, the fast path region for CommInit/Split when all ranks are on
// this node) ride along with SCM_RIGHTS.
struct Reply {
  MsgHeader h;
  int32_t code;      // baton::Code
  uint32_t reserved;
  uint64_t value;    // Hello: ring bytes; MemAlloc: segment id; CommInit/Split: comm handle
  int32_t rank;      // CommInit/Split: this rank in the communicator
  int32_t nranks;    //   and its size (0 for a split with negative color)
  char message[1024];  // error text; Hello: the daemon's rendezvous address
};

// ---- shared-memory submission ring ----

struct BufferRef {
  uint64_t segment;  // 0 = no buffer
  uint64_t offset;
};

struct Descriptor {
  uint64_t comm;        // handle from CommInit/Split
  uint64_t seq;         // per-communicator sequence number (collectives), per-peer (send/recv)
  uint32_t collective;  // baton::Collective
  uint32_t dtype;       // baton::DataType
  uint32_t redop;       // baton::RedOp
  int32_t root;         // root, or peer for send/recv; -1 if none
  uint64_t count;
  BufferRef send;
  BufferRef recv;
  uint32_t completion;  // index of the Completion slot to publish into
  uint32_t flags;       // DescriptorFlags
  uint64_t reserved[2];
};
static_assert(sizeof(Descriptor) == 96);

enum DescriptorFlags : uint32_t {
  // Wait for Completion::stream_ready before touching the buffers.
  kDescStreamOrdered = 1u << 0,
};
inline constexpr uint32_t kKnownDescriptorFlags = kDescStreamOrdered;

enum CompletionState : uint32_t { kIdle = 0, kPending = 1, kDone = 2 };

struct alignas(64) Completion {
  std::atomic<uint32_t> state;  // futex word
  int32_t code;
  // Stream-ordered operations only (see the top of this file).
  std::atomic<uint32_t> stream_ready;     // 1: the client's stream reached the operation (written by the GPU)
  std::atomic<uint32_t> stream_done;      // 1: batond finished it, either way (the stream waits for it)
  std::atomic<uint32_t> stream_released;  // 1: the stream went past its wait; the slot may be reused
  std::atomic<uint32_t> client_sleeping;  // 1: the client waits on `state` with a futex (client writes)
  char message[488];
};
static_assert(sizeof(Completion) == 512);

struct alignas(64) RingControl {
  std::atomic<uint32_t> tail;  // next slot the client fills (client writes)
  uint32_t pad0[15];
  std::atomic<uint32_t> head;  // next slot the daemon consumes (daemon writes; futex word)
  uint32_t pad1[15];
  uint32_t num_slots;
  uint32_t num_completions;
  uint32_t pad2[14];
  std::atomic<uint32_t> daemon_polling;  // batond threads checking `tail` now (daemon writes)
  uint32_t pad3[15];
  std::atomic<uint32_t> client_waiting;  // 1: the client waits on `head` for a free slot (client writes)
};
static_assert(sizeof(RingControl) <= 4096);
static_assert(sizeof(RegisterDeviceRequest) <= kMaxMessage);

inline constexpr uint32_t kRingSlots = 256;
inline constexpr uint32_t kCompletions = 1024;
inline constexpr size_t kRingControlBytes = 4096;
inline constexpr size_t kRingBytes =
    kRingControlBytes + kRingSlots * sizeof(Descriptor) + kCompletions * sizeof(Completion);

struct RingView {
  RingControl* control;
  Descriptor* slots;
  Completion* completions;

  static RingView At(void* base) {
    auto* p = static_cast<uint8_t*>(base);
    return {reinterpret_cast<RingControl*>(p), reinterpret_cast<Descriptor*>(p + kRingControlBytes),
            reinterpret_cast<Completion*>(p + kRingControlBytes + kRingSlots * sizeof(Descriptor))};
  }
};

}  // namespace baton::ipc
