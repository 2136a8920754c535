// ProcessGroupBaton: torch.distributed's "baton" backend.
//
// Each process group owns one Baton communicator. A collective validates its
// tensors, submits the operation to the local batond through libbaton
// (never blocking on the network), and returns a BatonWork. One progress
// thread per group waits for the operations in submission order and
// completes their Works and futures, so DDP's overlap of backward compute and
// gradient allreduce works as with Gloo.
//
// CUDA tensors (in a build against a torch with CUDA) go through Baton's
// stream-ordered calls instead: queued on the tensors' current stream, never
// waited for on the host, completed as NCCL's are (stream_work.h). One
// group serves both, so host and CUDA collectives mix freely on it.
//
// Non-contiguous tensors and list forms (allgather into a list,
// reduce_scatter from a list, ...) go through contiguous temporaries that are
// copied back when the operation succeeds (on the stream, for CUDA tensors).
#ifndef BATON_PYTHON_CSRC_PROCESS_GROUP_BATON_H_
#define BATON_PYTHON_CSRC_PROCESS_GROUP_BATON_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.h"
#include "baton_work.h"
#include "torch_compat.h"

namespace baton::torch_backend {

// Where the tensors of one call live: the host, or one CUDA device.
struct Place {
  bool cuda = false;
  c10::Device device{c10::kCPU};
};

// How one Baton call is issued: the request form (host tensors; *request
// receives the handle) or the stream form (CUDA tensors, on `stream`).
struct Target {
  bool on_stream = false;
  baton_stream_t stream = nullptr;
  baton_request_t* request = nullptr;
};

// How a group reaches Baton: normally filled in by baton_torch's creator
// from torch's store (or baton-run's environment).
struct GroupConfig {
  std::string job_id;
  std::string comm_name;
  std::string rendezvous;     // "" = the local daemon's
  std::string secret;
  std::string daemon_socket;  // "" = BATON_SOCKET or the default
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

class ProcessGroupBaton : public ProcessGroupBase {
 public:
  // Joins the communicator (blocks until every rank of the group joined or
  // the timeout passed; throws with Baton's message on failure).
  ProcessGroupBaton(int rank, int size, const GroupConfig& config);
  ~ProcessGroupBaton() override;

  const std::string getBackendName() const override { return "baton"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  // Messages between two ranks are matched in the order they were posted;
  // the tag is not used for matching (as with NCCL).
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  struct Pending {
    std::vector<baton_request_t> requests;
    c10::intrusive_ptr<BatonWork> work;
    std::string what;  // "allreduce of 1024 float32", for error messages
  };

  using Call = std::function<baton_result_t(const Target&)>;

  // Issues `call` and returns its Work. Host tensors: the progress thread
  // waits for the request, then runs `after` (copies out of temporaries) and
  // drops `keep_alive`. CUDA tensors: on the current stream of
  // `where.device`, with `after` queued behind it.
  c10::intrusive_ptr<c10d::Work> Run(const Place& where, c10d::OpType type, std::vector<at::Tensor> outputs,
                                     std::function<void()> after, std::vector<at::Tensor> keep_alive,
                                     const std::string& what, const Call& call);
  // The Work of an Exchange, as Run makes it.
  c10::intrusive_ptr<c10d::Work> TrackExchange(const Place& where, c10d::OpType type, std::vector<at::Tensor> outputs,
                                               std::function<void()> after, std::vector<at::Tensor> keep_alive,
                                               std::vector<baton_request_t> requests, const std::string& what);
  // Hands a submitted operation to the progress thread and returns its Work.
  c10::intrusive_ptr<c10d::Work> Track(std::vector<baton_request_t> requests, c10::intrusive_ptr<BatonWork> work,
                                       std::string what);
  // Throws c10::Error with Baton's message when `result` is not success.
  void Check(baton_result_t result, const std::string& what) const;
  // Point-to-point exchange of byte ranges with every peer (alltoall with
  // uneven splits); own range copied locally. The requests to wait for
  // (none for CUDA tensors: they are on the stream).
  std::vector<baton_request_t> Exchange(const Place& where, const std::vector<at::Tensor>& sends,
                                        const std::vector<at::Tensor>& recvs, baton_datatype_t type,
                                        const std::string& what);
  void ProgressLoop();

  baton_comm_t comm_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  std::thread progress_;
};

}  // namespace baton::torch_backend

#endif  // BATON_PYTHON_CSRC_PROCESS_GROUP_BATON_H_
