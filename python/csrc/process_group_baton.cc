#include "process_group_baton.h"

#include <c10/util/Exception.h>

#include <stdexcept>
#include <utility>

#include "cuda_stream.h"
#include "stream_work.h"
#include "type_map.h"

namespace baton::torch_backend {
namespace {

using c10d::OpType;

// A dense tensor on the host, or on a GPU when this build takes CUDA tensors.
void CheckTensor(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.layout() == at::kStrided, "baton ", op, ": sparse tensors are not supported");
  TORCH_CHECK(t.device().is_cpu() || (t.device().is_cuda() && BuiltWithCuda()), "baton ", op, ": tensor is on ",
              t.device().str(),
              BuiltWithCuda() ? "; the baton backend serves CPU and CUDA tensors"
                              : "; this build of the baton backend serves CPU tensors only (it was built against a "
                                "torch without CUDA)");
}

// The place of `t`, which decides the place of its whole call.
Place PlaceOf(const at::Tensor& t, const char* op) {
  CheckTensor(t, op);
  return {t.device().is_cuda(), t.device()};
}

// Every tensor of one call is where the first one is.
void CheckSamePlace(const Place& where, const at::Tensor& t, const char* op) {
  CheckTensor(t, op);
  TORCH_CHECK(t.device() == where.device, "baton ", op, ": all tensors of one call must be on one device; got ",
              where.device.str(), " and ", t.device().str());
}

// The input and output tensors of a flat-buffer call: on one device, of one
// type.
Place CheckInputOutputPair(const at::Tensor& input, const at::Tensor& output, const char* op) {
  const Place where = PlaceOf(input, op);
  CheckSamePlace(where, output, op);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "baton ", op, ": output type ",
              c10::toString(output.scalar_type()), " differs from input type ", c10::toString(input.scalar_type()));
  return where;
}

// The one tensor of a single-tensor call, checked.
at::Tensor& Single(std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "baton ", op, ": expects exactly one tensor per call, got ", tensors.size());
  CheckTensor(tensors[0], op);
  return tensors[0];
}

// Every tensor of a list: where `where` says, same dtype as `like`, `numel`
// elements.
void CheckList(const std::vector<at::Tensor>& list, const Place& where, const at::Tensor& like, int64_t numel,
               size_t expected, const char* op) {
  TORCH_CHECK(list.size() == expected, "baton ", op, ": expects a list of ", expected, " tensors (one per rank), got ",
              list.size());
  for (const at::Tensor& t : list) {
    CheckSamePlace(where, t, op);
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "baton ", op, ": all tensors must have type ",
                c10::toString(like.scalar_type()), ", got ", c10::toString(t.scalar_type()));
    TORCH_CHECK(t.numel() == numel, "baton ", op, ": every tensor of the list must have ", numel,
                " elements, got ", t.numel());
  }
}

// One contiguous tensor holding the list's elements back to back.
at::Tensor Flatten(const std::vector<at::Tensor>& list) {
  std::vector<at::Tensor> flat;
  flat.reserve(list.size());
  for (const at::Tensor& t : list) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// Copies consecutive slices of `flat` into the tensors of `list`.
void Unflatten(const at::Tensor& flat, std::vector<at::Tensor>& list) {
  int64_t offset = 0;
  for (at::Tensor& t : list) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

// What to run after success when `buffer` stands in for `user` (a
// non-contiguous tensor): copy the result back. Null when they are one.
std::function<void()> CopyBackIfNeeded(const at::Tensor& user, const at::Tensor& buffer) {
  if (buffer.is_same(user)) return nullptr;
  return [user, buffer]() mutable { user.copy_(buffer); };
}

std::string Describe(const char* op, int64_t numel, at::ScalarType type) {
  return std::string(op) + " of " + std::to_string(numel) + " " + c10::toString(type);
}

}  // namespace

ProcessGroupBaton::ProcessGroupBaton(int rank, int size, const GroupConfig& config) : ProcessGroupBase(rank, size) {
  baton_config_t c = BATON_CONFIG_INITIALIZER;
  auto or_null = [](const std::string& s) { return s.empty() ? nullptr : s.c_str(); };
  c.job_id = or_null(config.job_id);
  c.name = or_null(config.comm_name);
  c.daemon_socket = or_null(config.daemon_socket);
  c.rendezvous = or_null(config.rendezvous);
  c.secret = or_null(config.secret);
  c.timeout_seconds = std::chrono::duration<double>(config.timeout).count();
  const baton_result_t r = baton_comm_init_config(&comm_, size, rank, &c);
  TORCH_CHECK(r == baton_success, "baton: rank ", rank, " of ", size, " could not create its communicator (job ",
              config.job_id, "): ", baton_get_error_string(r), ": ", baton_get_last_error(nullptr));
  progress_ = std::thread([this] { ProgressLoop(); });
}

ProcessGroupBaton::~ProcessGroupBaton() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  progress_.join();  // after every submitted operation completed
  baton_comm_destroy(comm_);
}

void ProcessGroupBaton::Check(baton_result_t result, const std::string& what) const {
  TORCH_CHECK(result == baton_success, "baton ", what, " on rank ", rank_, ": ", baton_get_error_string(result), ": ",
              baton_get_last_error(comm_));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::Track(std::vector<baton_request_t> requests,
                                                        c10::intrusive_ptr<BatonWork> work, std::string what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(requests), work, std::move(what)});
  }
  cv_.notify_one();
  return work;
}

void ProcessGroupBaton::ProgressLoop() {
  for (;;) {
    Pending p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    // Operations of one communicator complete in order, so waiting for them
    // in submission order delays no completion by more than the one before.
    std::exception_ptr error;
    for (baton_request_t req : p.requests) {
      const baton_result_t r = baton_wait(req, -1);
      if (r != baton_success && !error) {
        error = std::make_exception_ptr(std::runtime_error("baton " + p.what + " failed on rank " +
                                                           std::to_string(rank_) + ": " + baton_get_error_string(r) +
                                                           ": " + baton_get_last_error(comm_)));
      }
    }
    p.work->Complete(error);
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::Run(const Place& where, OpType type, std::vector<at::Tensor> outputs,
                                                      std::function<void()> after, std::vector<at::Tensor> keep_alive,
                                                      const std::string& what, const Call& call) {
  if (where.cuda) {
    // Queued on the current stream: `after` (copies out of temporaries) is
    // queued behind it, and the temporaries may go back to torch's caching
    // allocator now, which reuses their memory only for work queued on the
    // same stream, so after the operation.
    Check(call({true, CurrentCudaStream(where.device), nullptr}), what);
    if (after) after();
    return c10::make_intrusive<BatonStreamWork>(rank_, type, std::move(outputs), where.device);
  }
  baton_request_t req = nullptr;
  Check(call({false, nullptr, &req}), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, type, std::move(outputs), std::move(after), std::move(keep_alive));
  return Track({req}, work, what);
}

// The request form of a Baton call for host tensors, the stream form for CUDA
// tensors: the two take the same arguments but the last.
#define BATON_ISSUE(target, fn, ...) \
  ((target).on_stream ? fn##_stream(__VA_ARGS__, (target).stream) : fn(__VA_ARGS__, (target).request))

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  at::Tensor& t = Single(tensors, "allreduce");
  const Place where = PlaceOf(t, "allreduce");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "allreduce");
  const baton_redop_t op = RedOpOf(opts.reduceOp, t.scalar_type(), "allreduce");
  at::Tensor buf = t.contiguous();
  return Run(where, OpType::ALLREDUCE, tensors, CopyBackIfNeeded(t, buf), {buf},
             Describe("allreduce", t.numel(), t.scalar_type()), [&](const Target& to) {
               return BATON_ISSUE(to, baton_allreduce, buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                      const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "baton allreduce_coalesced: no tensors given");
  const Place where = PlaceOf(tensors[0], "allreduce_coalesced");
  for (const at::Tensor& t : tensors) {
    CheckSamePlace(where, t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                "baton allreduce_coalesced: all tensors must have one type, got ", c10::toString(t.scalar_type()),
                " and ", c10::toString(tensors[0].scalar_type()));
  }
  const at::ScalarType st = tensors[0].scalar_type();
  const baton_datatype_t type = DataTypeOf(st, "allreduce_coalesced");
  const baton_redop_t op = RedOpOf(opts.reduceOp, st, "allreduce_coalesced");
  at::Tensor flat = Flatten(tensors);
  return Run(where, OpType::ALLREDUCE_COALESCED, tensors, [flat, tensors]() mutable { Unflatten(flat, tensors); },
             {flat}, Describe("allreduce_coalesced", flat.numel(), st), [&](const Target& to) {
               return BATON_ISSUE(to, baton_allreduce, flat.data_ptr(), flat.data_ptr(), flat.numel(), type, op,
                                  comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  at::Tensor& t = Single(tensors, "broadcast");
  const Place where = PlaceOf(t, "broadcast");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor buf = t.contiguous();
  return Run(where, OpType::BROADCAST, tensors, CopyBackIfNeeded(t, buf), {buf},
             Describe("broadcast", t.numel(), t.scalar_type()) + " from root " + std::to_string(root),
             [&](const Target& to) {
               return BATON_ISSUE(to, baton_broadcast, buf.data_ptr(), buf.data_ptr(), buf.numel(), type, root, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  at::Tensor& t = Single(tensors, "reduce");
  const Place where = PlaceOf(t, "reduce");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "reduce");
  const baton_redop_t op = RedOpOf(opts.reduceOp, t.scalar_type(), "reduce");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor buf = t.contiguous();
  return Run(where, OpType::REDUCE, tensors, rank_ == root ? CopyBackIfNeeded(t, buf) : nullptr, {buf},
             Describe("reduce", t.numel(), t.scalar_type()) + " to root " + std::to_string(root),
             [&](const Target& to) {
               return BATON_ISSUE(to, baton_reduce, buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, root,
                                  comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions&) {
  at::Tensor& in = Single(inputs, "allgather");
  const Place where = PlaceOf(in, "allgather");
  TORCH_CHECK(outputs.size() == 1, "baton allgather: expects one output list, got ", outputs.size());
  CheckList(outputs[0], where, in, in.numel(), size_, "allgather");
  const baton_datatype_t type = DataTypeOf(in.scalar_type(), "allgather");
  at::Tensor send = in.contiguous();
  at::Tensor flat = at::empty({in.numel() * size_}, in.options());
  std::vector<at::Tensor> out = outputs[0];
  return Run(where, OpType::ALLGATHER, out, [flat, out]() mutable { Unflatten(flat, out); }, {send, flat},
             Describe("allgather", in.numel(), in.scalar_type()), [&](const Target& to) {
               return BATON_ISSUE(to, baton_allgather, send.data_ptr(), flat.data_ptr(), send.numel(), type, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::AllgatherOptions&) {
  const Place where = CheckInputOutputPair(input, output, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * size_, "baton _allgather_base: output must have ",
              input.numel() * size_, " elements (input x world size), got ", output.numel());
  const baton_datatype_t type = DataTypeOf(input.scalar_type(), "_allgather_base");
  at::Tensor send = input.contiguous();
  at::Tensor recv = output.contiguous();
  return Run(where, OpType::_ALLGATHER_BASE, {output}, CopyBackIfNeeded(output, recv), {send, recv},
             Describe("allgather", input.numel(), input.scalar_type()), [&](const Target& to) {
               return BATON_ISSUE(to, baton_allgather, send.data_ptr(), recv.data_ptr(), send.numel(), type, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::GatherOptions& opts) {
  at::Tensor& in = Single(inputs, "gather");
  const Place where = PlaceOf(in, "gather");
  const int root = static_cast<int>(opts.rootRank);
  const baton_datatype_t type = DataTypeOf(in.scalar_type(), "gather");
  at::Tensor send = in.contiguous();
  at::Tensor flat;
  std::vector<at::Tensor> out;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1, "baton gather: the root expects one output list, got ", outputs.size());
    CheckList(outputs[0], where, in, in.numel(), size_, "gather");
    out = outputs[0];
    flat = at::empty({in.numel() * size_}, in.options());
  } else {
    TORCH_CHECK(outputs.empty(), "baton gather: only the root (rank ", root, ") passes output tensors");
  }
  std::function<void()> done;
  if (flat.defined()) done = [flat, out]() mutable { Unflatten(flat, out); };
  std::vector<at::Tensor> keep{send};
  if (flat.defined()) keep.push_back(flat);
  void* recv = flat.defined() ? flat.data_ptr() : nullptr;
  return Run(where, OpType::GATHER, out, std::move(done), std::move(keep),
             Describe("gather", in.numel(), in.scalar_type()) + " to root " + std::to_string(root),
             [&](const Target& to) {
               return BATON_ISSUE(to, baton_gather, send.data_ptr(), recv, send.numel(), type, root, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ScatterOptions& opts) {
  at::Tensor& out = Single(outputs, "scatter");
  const Place where = PlaceOf(out, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  const baton_datatype_t type = DataTypeOf(out.scalar_type(), "scatter");
  at::Tensor flat;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1, "baton scatter: the root expects one input list, got ", inputs.size());
    CheckList(inputs[0], where, out, out.numel(), size_, "scatter");
    flat = Flatten(inputs[0]);
  } else {
    TORCH_CHECK(inputs.empty(), "baton scatter: only the root (rank ", root, ") passes input tensors");
  }
  at::Tensor recv = out.contiguous();
  std::vector<at::Tensor> keep{recv};
  if (flat.defined()) keep.push_back(flat);
  const void* send = flat.defined() ? flat.data_ptr() : nullptr;
  return Run(where, OpType::SCATTER, outputs, CopyBackIfNeeded(out, recv), std::move(keep),
             Describe("scatter", out.numel(), out.scalar_type()) + " from root " + std::to_string(root),
             [&](const Target& to) {
               return BATON_ISSUE(to, baton_scatter, send, recv.data_ptr(), recv.numel(), type, root, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                 std::vector<std::vector<at::Tensor>>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) {
  at::Tensor& out = Single(outputs, "reduce_scatter");
  const Place where = PlaceOf(out, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1, "baton reduce_scatter: expects one input list, got ", inputs.size());
  CheckList(inputs[0], where, out, out.numel(), size_, "reduce_scatter");
  const baton_datatype_t type = DataTypeOf(out.scalar_type(), "reduce_scatter");
  const baton_redop_t op = RedOpOf(opts.reduceOp, out.scalar_type(), "reduce_scatter");
  at::Tensor flat = Flatten(inputs[0]);
  at::Tensor recv = out.contiguous();
  return Run(where, OpType::REDUCE_SCATTER, outputs, CopyBackIfNeeded(out, recv), {flat, recv},
             Describe("reduce_scatter", out.numel(), out.scalar_type()), [&](const Target& to) {
               return BATON_ISSUE(to, baton_reducescatter, flat.data_ptr(), recv.data_ptr(), recv.numel(), type, op,
                                  comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                       const c10d::ReduceScatterOptions& opts) {
  const Place where = CheckInputOutputPair(input, output, "_reduce_scatter_base");
  TORCH_CHECK(input.numel() == output.numel() * size_, "baton _reduce_scatter_base: input must have ",
              output.numel() * size_, " elements (output x world size), got ", input.numel());
  const baton_datatype_t type = DataTypeOf(output.scalar_type(), "_reduce_scatter_base");
  const baton_redop_t op = RedOpOf(opts.reduceOp, output.scalar_type(), "_reduce_scatter_base");
  at::Tensor send = input.contiguous();
  at::Tensor recv = output.contiguous();
  return Run(where, OpType::_REDUCE_SCATTER_BASE, {output}, CopyBackIfNeeded(output, recv), {send, recv},
             Describe("reduce_scatter", output.numel(), output.scalar_type()), [&](const Target& to) {
               return BATON_ISSUE(to, baton_reducescatter, send.data_ptr(), recv.data_ptr(), recv.numel(), type, op,
                                  comm_);
             });
}

std::vector<baton_request_t> ProcessGroupBaton::Exchange(const Place& where, const std::vector<at::Tensor>& sends,
                                                         const std::vector<at::Tensor>& recvs, baton_datatype_t type,
                                                         const std::string& what) {
  // Every send and receive is posted inside one group, so the daemon sees
  // them together and no ordering between peers can deadlock. (On a CUDA
  // stream they run one after another; sends complete without waiting for
  // their receiver, so that order cannot deadlock either.)
  std::vector<baton_request_t> requests;
  const baton_stream_t stream = where.cuda ? CurrentCudaStream(where.device) : nullptr;
  Check(baton_group_start(), what);
  baton_result_t failed = baton_success;
  for (int peer = 0; peer < size_ && failed == baton_success; ++peer) {
    if (peer == rank_) continue;
    baton_request_t req = nullptr;
    const Target to{where.cuda, stream, &req};
    if (sends[peer].numel() > 0) {
      failed = BATON_ISSUE(to, baton_send, sends[peer].data_ptr(), sends[peer].numel(), type, peer, comm_);
      if (failed == baton_success && !where.cuda) requests.push_back(req);
    }
    if (failed == baton_success && recvs[peer].numel() > 0) {
      failed = BATON_ISSUE(to, baton_recv, recvs[peer].data_ptr(), recvs[peer].numel(), type, peer, comm_);
      if (failed == baton_success && !where.cuda) requests.push_back(req);
    }
  }
  const std::string message = failed == baton_success ? "" : baton_get_last_error(comm_);
  const baton_result_t ended = baton_group_end();
  TORCH_CHECK(failed == baton_success, "baton ", what, " on rank ", rank_, ": ", baton_get_error_string(failed), ": ",
              message);
  Check(ended, what);
  recvs[rank_].copy_(sends[rank_]);
  return requests;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::TrackExchange(const Place& where, OpType type,
                                                                std::vector<at::Tensor> outputs,
                                                                std::function<void()> after,
                                                                std::vector<at::Tensor> keep_alive,
                                                                std::vector<baton_request_t> requests,
                                                                const std::string& what) {
  if (where.cuda) {
    if (after) after();
    return c10::make_intrusive<BatonStreamWork>(rank_, type, std::move(outputs), where.device);
  }
  auto work = c10::make_intrusive<BatonWork>(rank_, type, std::move(outputs), std::move(after), std::move(keep_alive));
  return Track(std::move(requests), work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                std::vector<int64_t>& output_splits,
                                                                std::vector<int64_t>& input_splits,
                                                                const c10d::AllToAllOptions&) {
  const Place where = CheckInputOutputPair(input, output, "alltoall_base");
  const baton_datatype_t type = DataTypeOf(input.scalar_type(), "alltoall_base");
  at::Tensor send = input.contiguous();
  at::Tensor recv = output.contiguous();
  if (output_splits.empty() && input_splits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size_ == 0, "baton alltoall_base: input and output ",
                "must have the same number of elements, divisible by the world size ", size_, "; got ", input.numel(),
                " and ", output.numel());
    return Run(where, OpType::ALLTOALL_BASE, {output}, CopyBackIfNeeded(output, recv), {send, recv},
               Describe("alltoall", input.numel() / size_, input.scalar_type()), [&](const Target& to) {
                 return BATON_ISSUE(to, baton_alltoall, send.data_ptr(), recv.data_ptr(), send.numel() / size_, type,
                                    comm_);
               });
  }
  // Uneven splits along dimension 0: slices of rows, exchanged pairwise.
  auto slices = [&](const at::Tensor& t, std::vector<int64_t> splits, const char* which) {
    TORCH_CHECK(t.dim() > 0, "baton alltoall_base: ", which, " must have at least one dimension to split");
    if (splits.empty()) splits.assign(size_, t.size(0) / size_);
    TORCH_CHECK(static_cast<int>(splits.size()) == size_, "baton alltoall_base: ", which, " splits must have ", size_,
                " entries, got ", splits.size());
    std::vector<at::Tensor> out;
    int64_t row = 0;
    for (int64_t s : splits) {
      TORCH_CHECK(s >= 0 && row + s <= t.size(0), "baton alltoall_base: ", which, " splits exceed its ", t.size(0),
                  " rows");
      out.push_back(t.narrow(0, row, s));
      row += s;
    }
    return out;
  };
  std::vector<at::Tensor> sends = slices(send, input_splits, "input");
  std::vector<at::Tensor> recvs = slices(recv, output_splits, "output");
  const std::string what = Describe("alltoall (uneven splits)", input.numel(), input.scalar_type());
  std::vector<baton_request_t> requests = Exchange(where, sends, recvs, type, what);
  return TrackExchange(where, OpType::ALLTOALL_BASE, {output}, CopyBackIfNeeded(output, recv), {send, recv},
                       std::move(requests), what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "baton alltoall: expects ", size_, " input and ", size_, " output tensors, got ", inputs.size(), " and ",
              outputs.size());
  const Place where = PlaceOf(inputs[0], "alltoall");
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckSamePlace(where, inputs[i], "alltoall");
    CheckSamePlace(where, outputs[i], "alltoall");
    TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type() &&
                    outputs[i].scalar_type() == inputs[0].scalar_type(),
                "baton alltoall: all tensors must have type ", c10::toString(inputs[0].scalar_type()));
  }
  const baton_datatype_t type = DataTypeOf(inputs[0].scalar_type(), "alltoall");
  std::vector<at::Tensor> sends;
  std::vector<at::Tensor> recvs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    sends.push_back(inputs[i].contiguous());
    recvs.push_back(outputs[i].contiguous());
  }
  const std::string what = Describe("alltoall", inputs[0].numel(), inputs[0].scalar_type());
  std::vector<baton_request_t> requests = Exchange(where, sends, recvs, type, what);
  std::vector<at::Tensor> keep = sends;
  keep.insert(keep.end(), recvs.begin(), recvs.end());
  return TrackExchange(
      where, OpType::ALLTOALL, outputs,
      [outputs, recvs]() mutable {
        for (size_t i = 0; i < outputs.size(); ++i) {
          if (!recvs[i].is_same(outputs[i])) outputs[i].copy_(recvs[i]);
        }
      },
      std::move(keep), std::move(requests), what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::send(std::vector<at::Tensor>& tensors, int dst, int) {
  at::Tensor& t = Single(tensors, "send");
  const Place where = PlaceOf(t, "send");
  TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_, "baton send: destination rank ", dst,
              " must be another rank of the group (0..", size_ - 1, ")");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "send");
  at::Tensor buf = t.contiguous();
  return Run(where, OpType::SEND, tensors, nullptr, {buf},
             Describe("send", t.numel(), t.scalar_type()) + " to rank " + std::to_string(dst), [&](const Target& to) {
               return BATON_ISSUE(to, baton_send, buf.data_ptr(), buf.numel(), type, dst, comm_);
             });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::recv(std::vector<at::Tensor>& tensors, int src, int) {
  at::Tensor& t = Single(tensors, "recv");
  const Place where = PlaceOf(t, "recv");
  TORCH_CHECK(src >= 0 && src < size_ && src != rank_, "baton recv: source rank ", src,
              " must be another rank of the group (0..", size_ - 1, ")");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "recv");
  at::Tensor buf = t.contiguous();
  return Run(where, OpType::RECV, tensors, CopyBackIfNeeded(t, buf), {buf},
             Describe("recv", t.numel(), t.scalar_type()) + " from rank " + std::to_string(src),
             [&](const Target& to) { return BATON_ISSUE(to, baton_recv, buf.data_ptr(), buf.numel(), type, src, comm_); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "baton recv: receiving from any source is not supported; name the source rank");
}

// A barrier has no tensors: the host waits for it, as with Gloo. (torch
// 2.x's NCCL barrier reduces a one-element CUDA tensor instead; code that
// wants a barrier ordered on a stream can all_reduce one itself.)
c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::barrier(const c10d::BarrierOptions&) {
  return Run(Place{}, OpType::BARRIER, {}, nullptr, {}, "barrier",
             [&](const Target& to) { return baton_barrier(comm_, to.request); });
}

#undef BATON_ISSUE

}  // namespace baton::torch_backend
