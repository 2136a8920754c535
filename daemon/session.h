// Session: one connected client process. Owns the client's shared-memory
// segments and submission ring, validates everything the client sends, and
// routes operations to communicators.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/ipc_protocol.h"
#include "common/mapping.h"
#include "common/unique_fd.h"
#include "control/rendezvous_client.h"
#include "daemon/access_policy.h"
#include "daemon/communicator.h"
#include "daemon/local_op.h"
#include "daemon/options.h"
#include "daemon/stream_gate.h"
#include "daemon/submission_source.h"
#include "gpu/device_segment.h"

namespace baton {

// What sessions need from the daemon.
struct SessionEnv {
  const DaemonOptions* options = nullptr;
  DaemonServices services;
  std::string node_id;         // unique id of this daemon instance (for rendezvous)
  std::string node_name;       // human-readable
  std::string data_address;    // where peers dial us
  std::string grpc_address;    // where peers and operators reach our gRPC services
  std::string rendezvous;      // default rendezvous address
  int pool_numa_node = -1;     // NUMA node for client shared memory (-1: no preference)
  AccessPolicy* access = nullptr;  // job ownership and per-user limits
};

class Session : public std::enable_shared_from_this<Session>, public SubmissionSource {
 public:
  using Socket = UnixSeqPacket::socket;

  Session(const SessionEnv& env, boost::asio::io_context& io, Socket socket, const ucred& peer, uint64_t id,
          std::atomic<uint32_t>* client_count);
  ~Session();

  void Start();
  // Publishes the result of the operation that named `completion`. Thread-safe.
  void Complete(uint32_t completion, const Status& st);

  // SubmissionSource: communicators' workers poll the submission ring.
  void StartPolling() override;
  void PollSubmissions() override;
  void StopPolling() override;

 private:
  static constexpr size_t kMaxDeviceSegments = 4096;  // registered GPU allocations per client

  struct Membership {
    std::shared_ptr<Communicator> comm;
    int rank = -1;
  };
  // This client's membership of communicator `handle` (comm null if none).
  Membership FindComm(uint64_t handle);

  void ReadNext();
  // `fds`: what came with the message (SCM_RIGHTS); only RegisterDevice takes one.
  void Dispatch(size_t len, std::vector<UniqueFd> fds);
  void OnHello(const ipc::HelloRequest& req);
  void OnMemAlloc(const ipc::MemAllocRequest& req);
  void OnMemFree(const ipc::MemFreeRequest& req);
  void OnRegisterDevice(const ipc::RegisterDeviceRequest& req, std::vector<UniqueFd> fds);
  void OnCommInit(const ipc::CommInitRequest& req);
  void OnCommSplit(const ipc::CommSplitRequest& req);
  void OnCommDestroy(const ipc::CommDestroyRequest& req);
  void OnCommFailed(const ipc::CommFailedRequest& req);

  void WaitDoorbell();
  // Takes every descriptor the client added to the ring. Any thread.
  void DrainRing();
  void DrainRingLocked();  // ring_mu_ held
  // After a doorbell, keeps checking the ring on the I/O thread for
  // options->progress_spin before going back to waiting for the next one;
  // stops early when a communicator's worker polls it (StartPolling).
  void PollRing(std::chrono::steady_clock::time_point until);
  void StopPollingRing();  // I/O thread
  // The client added descriptors batond has not taken yet.
  bool RingHasNews() const;
  // Counts one more batond thread polling the ring in the client-visible
  // daemon_polling (the client then skips the doorbell); ReleasePolling
  // counts it down and takes what came meanwhile. Any thread.
  void ClaimPolling();
  void ReleasePolling();
  Status Validate(const ipc::Descriptor& d, LocalOp* op, Membership* membership);
  // A buffer in one of the client's shared-memory segments (*ptr, *hold)
  // or in one of its registered GPU allocations (*device).
  Status ResolveBuffer(const ipc::BufferRef& ref, uint64_t bytes, const char* which, uint8_t** ptr,
                       std::shared_ptr<Mapping>* hold, DeviceStaging::Side* device);
  // Hands `op` to its communicator (`handle`), through that communicator's
  // StreamGate when it (or an earlier operation still in the gate) must wait
  // for the client's stream.
  void Route(LocalOp op, const Membership& m, uint64_t handle);
  // Ends the gates of destroyed communicators that have nothing queued.
  void RetireIdleGates();

  // `text` is the reply's message when `st` is OK (Hello: the rendezvous address).
  void Reply(uint32_t request_id, const Status& st, uint64_t value = 0, int rank = 0, int nranks = 0,
             const std::vector<int>& fds = {}, const std::string& text = {});
  // Registers a communicator handle and answers the init/split request.
  void FinishJoin(uint32_t request_id, const Status& st, std::shared_ptr<Communicator> comm, int rank, int nranks);
  void Close(const std::string& why);
  // Close, from any thread (queued to the I/O thread).
  void CloseSoon(std::string why);
  // Counts one more pending init/split against --max-client-comms (the
  // answer, FinishJoin, gives it back); Exhausted at the limit.
  Status ReserveJoin();
  // Gives back one communicator's charge against the user's limit.
  void ReleaseCommCharge();
  std::string Who() const;  // "pid 123 (uid 1000)"

  const SessionEnv& env_;
  boost::asio::io_context& io_;
  Socket socket_;
  const ucred peer_;
  const ClientIdentity identity_;
  const uint64_t id_;
  std::atomic<uint32_t>* client_count_;
  std::array<uint8_t, ipc::kMaxMessage> inbox_{};
  bool hello_done_ = false;
  std::atomic<bool> closed_{false};  // set under ring_mu_ and mu_

  // Submission ring (set up by Hello).
  // Shared so that operations waiting for a client's CUDA stream (which
  // read their Completion slot) keep it mapped.
  std::shared_ptr<Mapping> ring_ = std::make_shared<Mapping>();
  ipc::RingView ring_view_{};
  // One drainer at a time: the I/O thread or a communicator's worker. Taken
  // before mu_ where both are held.
  std::mutex ring_mu_;
  // Our own copy of the consumer position; the shared one is for the client
  // only. Written under ring_mu_, read without it to see if there is news.
  std::atomic<uint32_t> ring_head_{0};
  bool ring_broken_ = false;  // the client corrupted the ring; closing (ring_mu_)
  std::unique_ptr<boost::asio::posix::stream_descriptor> doorbell_;
  uint64_t doorbell_value_ = 0;
  bool polling_ = false;  // a PollRing handler is queued (I/O thread only)
  std::atomic<int> worker_pollers_{0};  // communicators' workers polling now

  std::mutex mu_;  // guards what worker threads touch: segments_, comms_, socket sends
  std::map<uint64_t, std::shared_ptr<Mapping>> segments_;
  uint64_t segment_bytes_ = 0;
  // Registered GPU allocations (ids share next_segment_ with segments_),
  // and the same by IPC handle so that each is opened only once.
  std::map<uint64_t, std::shared_ptr<gpu::DeviceSegment>> device_segments_;
  std::map<gpu::IpcHandle, uint64_t> device_by_handle_;
  uint64_t next_segment_ = 1;
  std::map<uint64_t, Membership> comms_;
  uint64_t next_comm_ = 1;
  int pending_joins_ = 0;           // inits and splits not answered yet
  int comms_charged_ = 0;           // against AccessPolicy's per-user count (held + pending)
  bool client_counted_ = false;     // against AccessPolicy's per-user client count
  std::set<std::string> jobs_held_;  // references on AccessPolicy's jobs, dropped at the end
  std::vector<std::shared_ptr<JoinCancel>> joins_;  // rendezvous calls to abandon if the client leaves

  // A gate per communicator handle, created with the communicator's first
  // GPU or stream-ordered operation (under ring_mu_, by whoever drains the
  // ring; retired when the communicator is destroyed, or with the next
  // destroy or new gate if operations were still queued, stopped by Close,
  // joined when the session goes). Per communicator, so that an operation
  // waiting for its stream holds up only its own communicator's later
  // operations: each communicator orders its own, and a CUDA stream orders
  // what is queued on it, whichever communicators that goes to.
  std::map<uint64_t, std::unique_ptr<StreamGate>> gates_;
};

}  // namespace baton
