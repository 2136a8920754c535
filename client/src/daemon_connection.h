// DaemonConnection: this process's link to its local batond. One per
// process, shared by all communicators: the control socket, the submission
// ring, the completion slots and the shared-memory segments.
#pragma once

#include <cstdint>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/ipc_protocol.h"
#include "common/mapping.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "gpu/device_memory.h"
#include "gpu/stream_flags.h"

namespace baton::client {

class DaemonConnection {
 public:
  // The process's connection to the daemon at `socket_path`, created on
  // first use. (A process normally talks to one daemon; tests that run
  // several simulated nodes in one process talk to several.)
  static Status Get(const std::string& socket_path, DaemonConnection** out);
  // The connection for calls that name no communicator (baton_mem_alloc):
  // the first connection this process made, while its daemon lives. With
  // none, or once that daemon died: $BATON_SOCKET if set (where the
  // launcher or operator says the daemon is now), else the first
  // connection's path (a daemon restarted in place), else `fallback_path`.
  static Status Default(const std::string& fallback_path, DaemonConnection** out);
  // Frees `ptr` on whichever connection allocated it (shared memory, or
  // device memory from baton_mem_alloc_device).
  static Status FreeAnywhere(void* ptr);

  // A control request/reply round trip. `fds` receives any passed fds;
  // `pass` travels with the request (the caller keeps its copies).
  Status Call(void* request, size_t size, ipc::Reply* reply, std::vector<UniqueFd>* fds = nullptr,
              const std::vector<int>& pass = {});

  // Shared memory.
  Status Alloc(size_t size, void** ptr);
  Status Free(void* ptr);
  bool Owns(const void* ptr) const;
  // The segment reference of [ptr, ptr+bytes) if it lies in one segment.
  bool Lookup(const void* ptr, uint64_t bytes, ipc::BufferRef* ref) const;

  // GPU memory. The segment id under which the daemon knows the allocation
  // holding `p` (registered on first use, then cached by the driver's
  // buffer id, which is never reused; for cuMemCreate memory, `p` may join
  // several mappings: gpu::ExtendToCover).
  Status RegisterDevice(const gpu::DevicePointer& p, uint64_t* segment);
  // Device memory for baton_mem_alloc_device; registered at once.
  Status AllocDevice(int device, size_t size, void** ptr);
  bool OwnsDevice(const void* ptr) const;
  Status FreeDevice(void* ptr);
  // Registers the completion slots with CUDA (once, in the context of
  // `stream`; portable, so every GPU can use them) so that streams can
  // write and wait for their stream_* words.
  Status EnableStreamOrdering(void* stream);
  // A completion slot of a stream-ordered operation whose communicator is
  // gone before the slot could be reused: freed by AcquireCompletion once
  // the daemon finished the operation and the stream passed its wait; so
  // are the operation's bounce buffers, which the stream may still copy.
  void Orphan(uint32_t slot, std::vector<void*> bounces = {});

  // Staging buffers for pointers outside every segment (pooled).
  Status AcquireStaging(uint64_t bytes, void** ptr);
  void ReleaseStaging(void* ptr);

  // Bounce buffers: device memory of libbaton's own (as from
  // baton_mem_alloc_device), registered with the daemon, that stands in
  // for device memory the daemon cannot open (gpu::DevicePointer::
  // unshareable); the caller copies the data in and out. Pooled per
  // device: up to kBounceKeepBytes of free ones are kept for reuse.
  struct Bounce {
    void* ptr = nullptr;
    ipc::BufferRef ref{};
  };
  Status AcquireBounce(int device, uint64_t bytes, Bounce* out);
  void ReleaseBounce(void* ptr);
  static constexpr uint64_t kBounceKeepBytes = uint64_t{1} << 30;

  // Completion slots.
  Status AcquireCompletion(uint32_t* slot);
  void ReleaseCompletion(uint32_t slot);
  ipc::Completion& completion(uint32_t slot) { return ring_view_.completions[slot]; }
  // The ring's shared control words (tests play a client that scribbles on them).
  ipc::RingControl& ring_control() { return *ring_view_.control; }

  // Writes `d` into the ring (waiting for space if it is full). The daemon
  // looks at it after RingDoorbell.
  void Enqueue(const ipc::Descriptor& d);
  // Wakes the daemon, unless one of its threads is polling the ring now
  // (ipc_protocol.h): that one sees the descriptor without a system call.
  void RingDoorbell();

  // False once the daemon has closed its end of the control socket (it
  // exited or crashed): operations in flight will never complete.
  bool DaemonAlive() const;
  const std::string& socket_path() const { return socket_path_; }
  // The daemon's default rendezvous address (host:port), from its Hello reply.
  const std::string& rendezvous() const { return rendezvous_; }

 private:
  void WriteDoorbell();

  struct Segment {
    uint64_t id = 0;
    Mapping mapping;
  };

  Status Connect(const std::string& socket_path);
  // MemFree: the daemon lets go of a shared-memory segment or a GPU registration.
  Status ReleaseSegment(uint64_t segment);

  std::string socket_path_;
  std::string rendezvous_;
  UniqueFd socket_;
  UniqueFd doorbell_;
  Mapping ring_;
  ipc::RingView ring_view_{};

  // Several threads (ranks) of one process may have requests outstanding at
  // once (a rendezvous waits for the others), so replies are matched by id:
  // one waiting thread at a time reads the socket and hands replies out.
  std::mutex send_mu_;
  std::mutex reply_mu_;
  std::condition_variable reply_cv_;
  uint32_t next_request_ = 1;  // guarded by send_mu_
  bool reader_active_ = false;
  Status broken_;  // the connection failed; every call fails with this
  struct Pending {
    ipc::Reply reply;
    std::vector<UniqueFd> fds;
  };
  std::map<uint32_t, Pending> replies_;

  mutable std::mutex seg_mu_;
  std::map<uintptr_t, Segment> segments_;                // by base address
  std::multimap<uint64_t, void*> staging_free_;          // capacity -> buffer

  struct DeviceRegistration {
    uint64_t segment = 0;
    uintptr_t base = 0;
    std::vector<uint64_t> piece_ids;  // cuMemCreate memory: the buffer id of each mapping it joins
  };
  // Drops registrations of allocations the application has freed (cudaFree
  // does not tell us), so that a program that allocates and frees device
  // memory all the time does not pile up open mappings in the daemon.
  void PruneFreedDeviceRegistrations();

  std::map<uint64_t, DeviceRegistration> device_segments_;  // driver buffer id -> registration (seg_mu_)
  size_t prune_at_ = kPruneEvery;                            // registrations that trigger the next prune (seg_mu_)
  static constexpr size_t kPruneEvery = 256;
  std::map<uintptr_t, uint64_t> device_allocs_;     // baton_mem_alloc_device pointers -> buffer id (seg_mu_)

  struct BounceBuffer {
    int device = -1;
    uint64_t capacity = 0;
    ipc::BufferRef ref{};
  };
  std::map<void*, BounceBuffer> bounces_;                  // every bounce buffer, free or in use (seg_mu_)
  std::map<int, std::multimap<uint64_t, void*>> bounce_free_;  // device -> capacity -> free buffer (seg_mu_)
  std::map<int, uint64_t> bounce_free_bytes_;               // device -> capacity kept free (seg_mu_)

  std::mutex ring_mu_;
  std::mutex slot_mu_;
  std::vector<uint32_t> free_slots_;
  struct OrphanSlot {
    uint32_t slot = 0;
    std::vector<void*> bounces;
  };
  std::vector<OrphanSlot> orphans_;  // slot_mu_
  std::mutex gpu_mu_;
  gpu::HostRegistration ring_for_gpu_;  // gpu_mu_
};

}  // namespace baton::client
