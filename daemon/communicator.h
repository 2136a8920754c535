// Communicator: this daemon's part of one communicator — the ranks of it
// that live on this node, the connections to the other nodes, and a worker
// thread that runs its collectives one at a time in sequence order.
//
// Collectives start when every local rank has submitted the same sequence
// number; their signatures must agree (or every rank gets a kMismatch
// naming who called what). Point-to-point sends and receives are matched
// by (source, destination) in submission order and do not wait for the
// other ranks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/cost_model.h"
#include "collectives/layout.h"
#include "collectives/schedule.h"
#include "collectives/spread_allreduce.h"
#include "daemon/device_ends.h"
#include "daemon/fast_path_region.h"
#include "daemon/flight_recorder.h"
#include "daemon/local_op.h"
#include "daemon/staging_pipeline.h"
#include "common/worker_pool.h"
#include "gpu/pinned_pool.h"
#include "transports/mesh.h"

namespace baton {

namespace tcp {
class ConnectionBroker;
}
class CommRegistry;
class Metrics;
class P2pLink;

struct CommSpec {
  std::string job;
  std::string name;
  uint64_t uid = 0;
  NodeLayout layout;
  int my_node = 0;
  std::vector<std::string> node_names;      // per node, for messages
  std::vector<std::string> node_addresses;  // per node, data address
  std::vector<std::string> node_grpc;       // per node, gRPC address (Peer service)
  std::chrono::milliseconds timeout{300000};
  Algorithm algorithm = Algorithm::kAuto;
  std::string secret;  // the job secret: data connections must prove they know it
  // TCP connections per peer node for collective data (large messages are
  // striped across them): the smallest --sockets-per-peer of the nodes.
  int sockets_per_peer = 1;
};

struct DaemonServices {
  tcp::ConnectionBroker* broker = nullptr;
  CommRegistry* registry = nullptr;
  Metrics* metrics = nullptr;
  // Log a straggler report when an operation waits this long for a rank.
  std::chrono::milliseconds straggler_warning{5000};
  size_t flight_records = 1000;  // operations kept by each communicator's flight recorder
  std::vector<int> worker_cpus;  // CPUs of the data NIC's NUMA node (empty: no placement)
  std::string trace_dir;         // where failed communicators dump their trace ("" = nowhere)
  uint64_t max_p2p_buffer = 1ull << 30;  // unexpected point-to-point bytes buffered per communicator
  // How long the worker polls for the next submission before it sleeps on
  // its condition variable (see Communicator::SpinUntilChangedLocked).
  std::chrono::microseconds progress_spin{100};
  // Blocking collectives whose input is at most this many bytes run among
  // the ranks in shared memory when all of them are on this node (0: never).
  uint64_t fast_path_max_bytes = 0;
  WorkerPool* pool = nullptr;  // shares large local copies and reductions (common/worker_pool.h)
  std::shared_ptr<gpu::PinnedPool> pinned;  // staging for GPU buffers (daemon/device_staging.h)
  // Collectives within one node whose buffers are all GPU memory run on the
  // GPUs (daemon/device_execution.h), and across nodes their local steps do
  // (daemon/device_ends.h); false: they are staged whole.
  bool gpu_collectives = true;
  GpuAllReduceShape gpu_allreduce = GpuAllReduceShape::kAuto;  // the shape of their AllReduce
};

// A snapshot for the Admin service.
struct CommSnapshot {
  std::string state;  // connecting, ready, failed
  std::string error;
  uint64_t last_completed_seq = 0;
  uint64_t ops_completed = 0;
  uint64_t bytes_completed = 0;
  uint64_t fast_path_ops = 0;  // run among the ranks, not through this daemon
  std::vector<int> local_ranks;
};

// What this node knows about one in-flight operation.
struct InflightSnapshot {
  uint64_t seq = 0;
  std::string op;
  double waiting_seconds = 0;
  bool running = false;            // all local ranks arrived; exchanging with other nodes
  std::vector<int> arrived;        // local ranks that submitted it
  std::vector<int64_t> arrival_us; // when, per entry of `arrived` (us since the epoch)
  std::vector<int> missing;        // local ranks that did not
};

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  using ReadyFn = std::function<void(const Status&)>;

  Communicator(CommSpec spec, DaemonServices services);
  ~Communicator();

  // Registers local rank `rank`. `ready` runs (on the worker thread) once
  // all local ranks are attached and the connections to the other nodes
  // are up, or with the error that prevented it.
  void Attach(int rank, ReadyFn ready);

  // Queues a validated operation of a local rank.
  void Submit(LocalOp op);

  // The rank leaves. With an error reason (its client died), the
  // communicator is aborted for everyone with that reason.
  void Detach(int rank, const Status& reason);

  // Fails every pending and future operation with `reason`, tells the
  // other nodes' daemons (Peer.AbortCommunicator) so their ranks get the same
  // diagnosis, and closes the connections.
  void Abort(const Status& reason);
  // The same, on word from another node (not propagated further).
  void AbortFromPeer(const Status& reason);

  CommSnapshot Snapshot() const;
  // The flight recorder, as Chrome trace-event JSON or plain JSON.
  std::string Trace(bool chrome) const;
  // Operations waiting for local ranks or exchanging with other nodes.
  std::vector<InflightSnapshot> Inflight() const;

  // The fd of the small-message fast path region to pass to a rank, or -1
  // when this communicator has none (ranks on several nodes, or disabled).
  int FastPathFd() const { return fast_path_ ? fast_path_->fd() : -1; }

  const CommSpec& spec() const { return spec_; }
  // "communicator 'world' of job 'j1'"
  std::string Describe() const;

 private:
  struct PendingOp {
    std::vector<std::optional<LocalOp>> ops;  // per local index
    std::vector<int64_t> arrival_us;          // per local index, for the flight recorder
    std::chrono::steady_clock::time_point first_arrival;
  };

  void StartLocked();
  void Worker();
  Status Connect();
  // Measures the links of a multi-node communicator (latency, bandwidth) and
  // the local copy bandwidth for the cost model; every node adopts node 0's
  // figures so that all choose the same algorithms. Worker thread only.
  Status CalibrateLinks();
  // The algorithm for one operation: the communicator's setting, or under
  // kAuto the cheapest by the cost model (cached per collective and size).
  Algorithm ResolveAlgorithm(const PlanInput& plan);
  Status RunCollective(std::vector<LocalOp>& ops, uint64_t seq);
  void CountTraffic(const Schedule& schedule, bool on_gpus) const;
  void FinishSplit(std::vector<LocalOp>& ops, const std::vector<uint8_t>& gathered);
  // Stages the GPU buffers whose staging waited for the worker (every
  // collective's that did not run on the GPUs: device_execution.h), updates
  // `buffers` and starts `pipeline`, which copies them around the phases of
  // `schedule` (staging_pipeline.h).
  // With `ends` active, `schedule` is the middle and what the head wrote on
  // the GPUs is copied in too.
  Status StageDeferred(std::vector<LocalOp>& ops, const Schedule& schedule, DeviceEnds& ends,
                       std::vector<RankBuffers>* buffers, StagingPipeline* pipeline);
  Status CheckSignatures(const std::vector<LocalOp>& ops, uint64_t seq) const;
  // The error for local ranks that did not submit op `seq` within the timeout.
  Status LateRanksLocked(uint64_t seq, const PendingOp& p) const;
  // A precise timeout message for a stalled exchange: asks the peers.
  Status DiagnoseNetworkTimeout(uint64_t seq, const OpSignature& sig, const Status& st) const;
  void FailAllLocked(const Status& st);
  bool AllDetachedLocked() const;
  // Wakes the worker: counts a change of what it waits for, then notifies.
  void NotifyLocked();
  // Releases `lock` and polls for up to services_.progress_spin until a
  // change is notified, taking submissions from the local ranks' rings
  // meanwhile; relocks. True if something changed.
  bool SpinUntilChangedLocked(std::unique_lock<std::mutex>& lock);
  // The worker's claim to poll its ranks' submission rings (see
  // submission_source.h): taken as it completes an operation, so that the
  // ranks' next submissions skip the doorbell, and kept while it spins;
  // given back before it sleeps or runs the next operation. Worker only.
  void StartPollingSources();
  void StopPollingSources();
  bool AbortLocked(const Status& reason);
  // Fills *r (reusing its memory) with what op `seq` is and when the local
  // ranks submitted it; the exchange starts now.
  void StartRecordLocked(uint64_t seq, const PendingOp& p, FlightRecord* r) const;
  // A new pending slot for op `seq`: a spare one if there is one.
  std::map<uint64_t, PendingOp>::iterator NewPendingLocked(uint64_t seq);
  // Writes the flight recorder to services_.trace_dir (after a failure).
  void DumpTrace() const;
  void WarnStragglersLocked(std::chrono::steady_clock::time_point now);
  int LocalIndex(int rank) const;

  // Point-to-point.
  void SubmitP2p(LocalOp op, std::unique_lock<std::mutex>& lock);
  void MatchLocalP2pLocked(int src, int dst);

  const CommSpec spec_;
  const DaemonServices services_;
  const std::vector<int> local_ranks_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> changes_{0};  // bumped by NotifyLocked; what the spinning worker watches
  std::map<int, ReadyFn> attached_;
  std::vector<bool> detached_;                 // per local index
  std::vector<uint64_t> next_seq_;             // per local index: expected collective seq
  std::map<uint64_t, PendingOp> pending_;  // by sequence number
  // Slots of finished operations (every op reset), reused by the next ones:
  // a small collective should not cost a map node and two vectors.
  static constexpr size_t kMaxSparePending = 8;
  std::vector<std::map<uint64_t, PendingOp>::node_type> spare_pending_;
  Status failed_;
  bool ready_ = false;
  bool started_ = false;

  // Intra-node point-to-point queues: (src, dst) -> waiting sends / recvs.
  std::map<std::pair<int, int>, std::deque<LocalOp>> p2p_sends_;
  std::map<std::pair<int, int>, std::deque<LocalOp>> p2p_recvs_;
  std::unique_ptr<P2pLink> p2p_;
  std::unique_ptr<FastPathRegion> fast_path_;  // set in the constructor; Fail under mu_

  std::unique_ptr<Mesh> mesh_;  // set under mu_ once; then used by the worker thread (and Interrupt)
  LinkParams link_;             // worker thread only, like the cache below
  std::map<std::pair<Collective, uint64_t>, Algorithm> algorithm_cache_;
  // The last operation's plan and schedule (worker thread only).
  PlanInput cached_plan_;
  Schedule cached_schedule_;
  bool schedule_cached_ = false;

  // Statistics and the operation being exchanged (guarded by mu_).
  uint64_t last_completed_seq_ = 0;
  uint64_t ops_completed_ = 0;
  uint64_t bytes_completed_ = 0;
  uint64_t running_seq_ = 0;  // 0: none
  OpSignature running_sig_;
  std::vector<int64_t> running_arrivals_;  // per local rank
  std::chrono::steady_clock::time_point running_since_;
  std::chrono::steady_clock::time_point next_straggler_warning_;
  FlightRecorder recorder_;
  std::vector<uint8_t> scratch_;
  std::vector<RankBuffers> buffers_;  // RunCollective's, per rank (worker thread only)
  DeviceEnds device_ends_;            // RunCollective's, across nodes on GPU buffers (worker thread only)

  // Worker thread only: each local rank's client as of its last operation,
  // and the ones being polled now (non-empty between Start/StopPollingSources).
  std::vector<std::weak_ptr<SubmissionSource>> sources_;
  std::vector<std::shared_ptr<SubmissionSource>> polling_;
  bool polling_on_ = false;
};

}  // namespace baton
