#include "process_group_baton.h"

#include <c10/util/Exception.h>

#include <stdexcept>
#include <utility>

#include "type_map.h"

namespace baton::torch_backend {
namespace {

using c10d::OpType;

void CheckHostTensor(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().is_cpu(), "baton ", op, ": tensor is on ", t.device().str(),
              "; this build of the baton backend serves CPU tensors only");
  TORCH_CHECK(t.layout() == at::kStrided, "baton ", op, ": sparse tensors are not supported");
}

// The input and output tensors of a flat-buffer call: both on the host, of
// one type.
void CheckInputOutputPair(const at::Tensor& input, const at::Tensor& output, const char* op) {
  CheckHostTensor(input, op);
  CheckHostTensor(output, op);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "baton ", op, ": output type ",
              c10::toString(output.scalar_type()), " differs from input type ", c10::toString(input.scalar_type()));
}

// The one tensor of a single-tensor call, checked.
at::Tensor& Single(std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "baton ", op, ": expects exactly one tensor per call, got ", tensors.size());
  CheckHostTensor(tensors[0], op);
  return tensors[0];
}

// Every tensor of a list: host, same dtype as `like`, `numel` elements.
void CheckList(const std::vector<at::Tensor>& list, const at::Tensor& like, int64_t numel, size_t expected,
               const char* op) {
  TORCH_CHECK(list.size() == expected, "baton ", op, ": expects a list of ", expected, " tensors (one per rank), got ",
              list.size());
  for (const at::Tensor& t : list) {
    CheckHostTensor(t, op);
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

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  at::Tensor& t = Single(tensors, "allreduce");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "allreduce");
  const baton_redop_t op = RedOpOf(opts.reduceOp, t.scalar_type(), "allreduce");
  at::Tensor buf = t.contiguous();
  const std::string what = Describe("allreduce", t.numel(), t.scalar_type());
  baton_request_t req = nullptr;
  Check(baton_allreduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::ALLREDUCE, tensors, CopyBackIfNeeded(t, buf),
                                             std::vector<at::Tensor>{buf});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                      const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "baton allreduce_coalesced: no tensors given");
  for (const at::Tensor& t : tensors) {
    CheckHostTensor(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                "baton allreduce_coalesced: all tensors must have one type, got ", c10::toString(t.scalar_type()),
                " and ", c10::toString(tensors[0].scalar_type()));
  }
  const at::ScalarType st = tensors[0].scalar_type();
  const baton_datatype_t type = DataTypeOf(st, "allreduce_coalesced");
  const baton_redop_t op = RedOpOf(opts.reduceOp, st, "allreduce_coalesced");
  at::Tensor flat = Flatten(tensors);
  const std::string what = Describe("allreduce_coalesced", flat.numel(), st);
  baton_request_t req = nullptr;
  Check(baton_allreduce(flat.data_ptr(), flat.data_ptr(), flat.numel(), type, op, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(
      rank_, OpType::ALLREDUCE_COALESCED, tensors, [flat, tensors]() mutable { Unflatten(flat, tensors); },
      std::vector<at::Tensor>{flat});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  at::Tensor& t = Single(tensors, "broadcast");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "broadcast");
  at::Tensor buf = t.contiguous();
  const std::string what = Describe("broadcast", t.numel(), t.scalar_type()) + " from root " +
                           std::to_string(opts.rootRank);
  baton_request_t req = nullptr;
  Check(baton_broadcast(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, static_cast<int>(opts.rootRank), comm_,
                        &req),
        what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::BROADCAST, tensors, CopyBackIfNeeded(t, buf),
                                             std::vector<at::Tensor>{buf});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  at::Tensor& t = Single(tensors, "reduce");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "reduce");
  const baton_redop_t op = RedOpOf(opts.reduceOp, t.scalar_type(), "reduce");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor buf = t.contiguous();
  const std::string what = Describe("reduce", t.numel(), t.scalar_type()) + " to root " + std::to_string(root);
  baton_request_t req = nullptr;
  Check(baton_reduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), type, op, root, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::REDUCE, tensors,
                                             rank_ == root ? CopyBackIfNeeded(t, buf) : nullptr,
                                             std::vector<at::Tensor>{buf});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions&) {
  at::Tensor& in = Single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "baton allgather: expects one output list, got ", outputs.size());
  CheckList(outputs[0], in, in.numel(), size_, "allgather");
  const baton_datatype_t type = DataTypeOf(in.scalar_type(), "allgather");
  at::Tensor send = in.contiguous();
  at::Tensor flat = at::empty({in.numel() * size_}, in.options());
  const std::string what = Describe("allgather", in.numel(), in.scalar_type());
  baton_request_t req = nullptr;
  Check(baton_allgather(send.data_ptr(), flat.data_ptr(), send.numel(), type, comm_, &req), what);
  std::vector<at::Tensor> out = outputs[0];
  auto work = c10::make_intrusive<BatonWork>(
      rank_, OpType::ALLGATHER, out, [flat, out]() mutable { Unflatten(flat, out); },
      std::vector<at::Tensor>{send, flat});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::AllgatherOptions&) {
  CheckInputOutputPair(input, output, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * size_, "baton _allgather_base: output must have ",
              input.numel() * size_, " elements (input x world size), got ", output.numel());
  const baton_datatype_t type = DataTypeOf(input.scalar_type(), "_allgather_base");
  at::Tensor send = input.contiguous();
  at::Tensor recv = output.contiguous();
  const std::string what = Describe("allgather", input.numel(), input.scalar_type());
  baton_request_t req = nullptr;
  Check(baton_allgather(send.data_ptr(), recv.data_ptr(), send.numel(), type, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::_ALLGATHER_BASE, std::vector<at::Tensor>{output},
                                             CopyBackIfNeeded(output, recv), std::vector<at::Tensor>{send, recv});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::GatherOptions& opts) {
  at::Tensor& in = Single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  const baton_datatype_t type = DataTypeOf(in.scalar_type(), "gather");
  at::Tensor send = in.contiguous();
  at::Tensor flat;
  std::vector<at::Tensor> out;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1, "baton gather: the root expects one output list, got ", outputs.size());
    CheckList(outputs[0], in, in.numel(), size_, "gather");
    out = outputs[0];
    flat = at::empty({in.numel() * size_}, in.options());
  } else {
    TORCH_CHECK(outputs.empty(), "baton gather: only the root (rank ", root, ") passes output tensors");
  }
  const std::string what = Describe("gather", in.numel(), in.scalar_type()) + " to root " + std::to_string(root);
  baton_request_t req = nullptr;
  Check(baton_gather(send.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, send.numel(), type, root, comm_,
                     &req),
        what);
  std::function<void()> done;
  if (flat.defined()) done = [flat, out]() mutable { Unflatten(flat, out); };
  std::vector<at::Tensor> keep{send};
  if (flat.defined()) keep.push_back(flat);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::GATHER, out, std::move(done), std::move(keep));
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ScatterOptions& opts) {
  at::Tensor& out = Single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  const baton_datatype_t type = DataTypeOf(out.scalar_type(), "scatter");
  at::Tensor flat;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1, "baton scatter: the root expects one input list, got ", inputs.size());
    CheckList(inputs[0], out, out.numel(), size_, "scatter");
    flat = Flatten(inputs[0]);
  } else {
    TORCH_CHECK(inputs.empty(), "baton scatter: only the root (rank ", root, ") passes input tensors");
  }
  at::Tensor recv = out.contiguous();
  const std::string what = Describe("scatter", out.numel(), out.scalar_type()) + " from root " + std::to_string(root);
  baton_request_t req = nullptr;
  Check(baton_scatter(flat.defined() ? flat.data_ptr() : nullptr, recv.data_ptr(), recv.numel(), type, root, comm_,
                      &req),
        what);
  std::vector<at::Tensor> keep{recv};
  if (flat.defined()) keep.push_back(flat);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::SCATTER, outputs, CopyBackIfNeeded(out, recv),
                                             std::move(keep));
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                 std::vector<std::vector<at::Tensor>>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) {
  at::Tensor& out = Single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1, "baton reduce_scatter: expects one input list, got ", inputs.size());
  CheckList(inputs[0], out, out.numel(), size_, "reduce_scatter");
  const baton_datatype_t type = DataTypeOf(out.scalar_type(), "reduce_scatter");
  const baton_redop_t op = RedOpOf(opts.reduceOp, out.scalar_type(), "reduce_scatter");
  at::Tensor flat = Flatten(inputs[0]);
  at::Tensor recv = out.contiguous();
  const std::string what = Describe("reduce_scatter", out.numel(), out.scalar_type());
  baton_request_t req = nullptr;
  Check(baton_reducescatter(flat.data_ptr(), recv.data_ptr(), recv.numel(), type, op, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::REDUCE_SCATTER, outputs, CopyBackIfNeeded(out, recv),
                                             std::vector<at::Tensor>{flat, recv});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                       const c10d::ReduceScatterOptions& opts) {
  CheckInputOutputPair(input, output, "_reduce_scatter_base");
  TORCH_CHECK(input.numel() == output.numel() * size_, "baton _reduce_scatter_base: input must have ",
              output.numel() * size_, " elements (output x world size), got ", input.numel());
  const baton_datatype_t type = DataTypeOf(output.scalar_type(), "_reduce_scatter_base");
  const baton_redop_t op = RedOpOf(opts.reduceOp, output.scalar_type(), "_reduce_scatter_base");
  at::Tensor send = input.contiguous();
  at::Tensor recv = output.contiguous();
  const std::string what = Describe("reduce_scatter", output.numel(), output.scalar_type());
  baton_request_t req = nullptr;
  Check(baton_reducescatter(send.data_ptr(), recv.data_ptr(), recv.numel(), type, op, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::_REDUCE_SCATTER_BASE, std::vector<at::Tensor>{output},
                                             CopyBackIfNeeded(output, recv), std::vector<at::Tensor>{send, recv});
  return Track({req}, work, what);
}

std::vector<baton_request_t> ProcessGroupBaton::Exchange(const std::vector<at::Tensor>& sends,
                                                         const std::vector<at::Tensor>& recvs, baton_datatype_t type,
                                                         const std::string& what) {
  // Every send and receive is posted inside one group, so the daemon sees
  // them together and no ordering between peers can deadlock.
  std::vector<baton_request_t> requests;
  Check(baton_group_start(), what);
  baton_result_t failed = baton_success;
  for (int peer = 0; peer < size_ && failed == baton_success; ++peer) {
    if (peer == rank_) continue;
    baton_request_t req = nullptr;
    if (sends[peer].numel() > 0) {
      failed = baton_send(sends[peer].data_ptr(), sends[peer].numel(), type, peer, comm_, &req);
      if (failed == baton_success) requests.push_back(req);
    }
    if (failed == baton_success && recvs[peer].numel() > 0) {
      failed = baton_recv(recvs[peer].data_ptr(), recvs[peer].numel(), type, peer, comm_, &req);
      if (failed == baton_success) requests.push_back(req);
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

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                std::vector<int64_t>& output_splits,
                                                                std::vector<int64_t>& input_splits,
                                                                const c10d::AllToAllOptions&) {
  CheckInputOutputPair(input, output, "alltoall_base");
  const baton_datatype_t type = DataTypeOf(input.scalar_type(), "alltoall_base");
  at::Tensor send = input.contiguous();
  at::Tensor recv = output.contiguous();
  if (output_splits.empty() && input_splits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size_ == 0, "baton alltoall_base: input and output ",
                "must have the same number of elements, divisible by the world size ", size_, "; got ", input.numel(),
                " and ", output.numel());
    const std::string what = Describe("alltoall", input.numel() / size_, input.scalar_type());
    baton_request_t req = nullptr;
    Check(baton_alltoall(send.data_ptr(), recv.data_ptr(), send.numel() / size_, type, comm_, &req), what);
    auto work = c10::make_intrusive<BatonWork>(rank_, OpType::ALLTOALL_BASE, std::vector<at::Tensor>{output},
                                               CopyBackIfNeeded(output, recv), std::vector<at::Tensor>{send, recv});
    return Track({req}, work, what);
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
  std::vector<baton_request_t> requests = Exchange(sends, recvs, type, what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::ALLTOALL_BASE, std::vector<at::Tensor>{output},
                                             CopyBackIfNeeded(output, recv), std::vector<at::Tensor>{send, recv});
  return Track(std::move(requests), work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "baton alltoall: expects ", size_, " input and ", size_, " output tensors, got ", inputs.size(), " and ",
              outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckHostTensor(inputs[i], "alltoall");
    CheckHostTensor(outputs[i], "alltoall");
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
  std::vector<baton_request_t> requests = Exchange(sends, recvs, type, what);
  std::vector<at::Tensor> keep = sends;
  keep.insert(keep.end(), recvs.begin(), recvs.end());
  auto work = c10::make_intrusive<BatonWork>(
      rank_, OpType::ALLTOALL, outputs,
      [outputs, recvs]() mutable {
        for (size_t i = 0; i < outputs.size(); ++i) {
          if (!recvs[i].is_same(outputs[i])) outputs[i].copy_(recvs[i]);
        }
      },
      std::move(keep));
  return Track(std::move(requests), work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::send(std::vector<at::Tensor>& tensors, int dst, int) {
  at::Tensor& t = Single(tensors, "send");
  TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_, "baton send: destination rank ", dst,
              " must be another rank of the group (0..", size_ - 1, ")");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "send");
  at::Tensor buf = t.contiguous();
  const std::string what = Describe("send", t.numel(), t.scalar_type()) + " to rank " + std::to_string(dst);
  baton_request_t req = nullptr;
  Check(baton_send(buf.data_ptr(), buf.numel(), type, dst, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::SEND, tensors, nullptr, std::vector<at::Tensor>{buf});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::recv(std::vector<at::Tensor>& tensors, int src, int) {
  at::Tensor& t = Single(tensors, "recv");
  TORCH_CHECK(src >= 0 && src < size_ && src != rank_, "baton recv: source rank ", src,
              " must be another rank of the group (0..", size_ - 1, ")");
  const baton_datatype_t type = DataTypeOf(t.scalar_type(), "recv");
  at::Tensor buf = t.contiguous();
  const std::string what = Describe("recv", t.numel(), t.scalar_type()) + " from rank " + std::to_string(src);
  baton_request_t req = nullptr;
  Check(baton_recv(buf.data_ptr(), buf.numel(), type, src, comm_, &req), what);
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::RECV, tensors, CopyBackIfNeeded(t, buf),
                                             std::vector<at::Tensor>{buf});
  return Track({req}, work, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "baton recv: receiving from any source is not supported; name the source rank");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBaton::barrier(const c10d::BarrierOptions&) {
  baton_request_t req = nullptr;
  Check(baton_barrier(comm_, &req), "barrier");
  auto work = c10::make_intrusive<BatonWork>(rank_, OpType::BARRIER, std::vector<at::Tensor>{}, nullptr,
                                             std::vector<at::Tensor>{});
  return Track({req}, work, "barrier");
}

}  // namespace baton::torch_backend
