#include "daemon/device_execution.h"

#include <algorithm>
#include <optional>

#include "collectives/device_steps.h"
#include "collectives/spread_allreduce.h"
#include "collectives/spread_copy_out.h"
#include "collectives/spread_reduce.h"
#include "common/logging.h"
#include "gpu/step_runner.h"

namespace baton {
namespace {

// The rank's buffers as GPU memory, or false if one that is not empty is
// not (or was staged already).
bool OnDevice(const LocalOp& op, DeviceRankBuffers* out) {
  if (!op.device || op.device->staged()) return false;
  const DeviceStaging::Side& send = op.device->send_side();
  const DeviceStaging::Side& recv = op.device->recv_side();
  if ((op.bufs.send_bytes > 0 && !send.segment) || (op.bufs.recv_bytes > 0 && !recv.segment)) return false;
  if (op.bufs.send_bytes > 0) *out = {send.device_ptr, op.bufs.send_bytes, send.segment->device(), {}, 0, -1};
  if (op.bufs.recv_bytes > 0) {
    out->recv = recv.device_ptr;
    out->recv_bytes = op.bufs.recv_bytes;
    out->recv_device = recv.segment->device();
  }
  return true;
}

}  // namespace

bool WorkerDecidesStaging(const LocalOp& op) {
  return op.device && op.device->has_device_buffers() && op.sig.collective != Collective::kSend &&
         op.sig.collective != Collective::kRecv;
}

bool LocalRanksOnDevices(const std::vector<LocalOp>& ops, int world, std::vector<DeviceRankBuffers>* buffers,
                         std::vector<int>* devices) {
  devices->clear();
  if (ops.empty() || ops[0].sig.collective == Collective::kSplit) return false;
  // The host-memory collectives (nearly all) leave here, without allocating.
  for (const LocalOp& op : ops) {
    if (!op.device || !op.device->has_device_buffers()) return false;
  }
  buffers->assign(static_cast<size_t>(world), DeviceRankBuffers{});
  for (const LocalOp& op : ops) {
    if (op.rank < 0 || op.rank >= world || !OnDevice(op, &(*buffers)[op.rank])) return false;
    for (int d : {(*buffers)[op.rank].send_device, (*buffers)[op.rank].recv_device}) {
      if (d >= 0 && std::find(devices->begin(), devices->end(), d) == devices->end()) devices->push_back(d);
    }
  }
  if (devices->empty()) return false;  // nothing in GPU memory (a barrier, or empty buffers)
  if (devices->size() > 1 && !gpu::EnablePeerAccess(*devices)) {
    BATON_DEBUG(kColl, "{}: the GPUs of the local ranks cannot reach one another; staging through host memory",
                ops[0].sig.ToString());
    return false;
  }
  return true;
}

Status AllocateScratchPieces(const std::vector<ScratchShare>& shares, const std::vector<DeviceRankBuffers>& buffers,
                             int first_device, std::vector<ScratchPiece>* pieces) {
  auto device_of = [&](int rank) {
    if (rank < 0) return first_device;
    const DeviceRankBuffers& b = buffers[rank];
    return b.send_device >= 0 ? b.send_device : b.recv_device >= 0 ? b.recv_device : first_device;
  };
  pieces->clear();
  std::vector<std::pair<int, uint64_t>> used;  // (GPU, bytes of its shares)
  for (const ScratchShare& share : shares) {
    const int device = device_of(share.rank);
    auto it = std::find_if(used.begin(), used.end(), [&](const auto& u) { return u.first == device; });
    if (it == used.end()) it = used.insert(used.end(), {device, 0});
    pieces->push_back({share.offset, share.bytes, nullptr, device});
    it->second += share.bytes;
  }
  for (const auto& [device, bytes] : used) {
    uint8_t* base = nullptr;
    BATON_RETURN_IF_ERROR(gpu::ThreadScratch(device, bytes, &base));
    for (ScratchPiece& piece : *pieces) {
      if (piece.device != device) continue;
      piece.ptr = base;
      base += piece.bytes;
    }
  }
  return Status::Ok();
}

Status RunOnDevices(const Schedule& schedule, const std::vector<LocalOp>& ops, int world, GpuAllReduceShape shape,
                    const Schedule** ran) {
  *ran = nullptr;
  // Reused from call to call on this thread (a worker).
  thread_local std::vector<DeviceRankBuffers> buffers;
  thread_local std::vector<DeviceStep> steps;
  std::vector<int> devices;
  if (!LocalRanksOnDevices(ops, world, &buffers, &devices)) return Status::Ok();
  // Ranks on several GPUs: an AllReduce spreads its reduction over them
  // (spread_allreduce.h), a Reduce its folds (spread_reduce.h), a Broadcast
  // its copies (spread_copy_out.h); on one GPU the host's shape needs fewer
  // launches. Training repeats the same AllReduce: the last spread
  // reduction is kept. A copy-out is rewritten from the schedule itself
  // (which in-place ranks shape), call by call.
  const Schedule* run = &schedule;
  thread_local Schedule spread, spread_copy_out;
  thread_local std::optional<OpSignature> spread_sig;
  thread_local std::vector<int> ranks, spread_ranks;
  thread_local std::vector<ScratchShare> spread_shares;  // of `spread`
  // The scratch pieces of `run`; none: its scratch whole on the first GPU.
  const std::vector<ScratchShare>* shares = nullptr;
  const bool spread_it =
      shape == GpuAllReduceShape::kSpread || (shape == GpuAllReduceShape::kAuto && devices.size() > 1);
  if (spread_it) {
    ranks.clear();
    for (const LocalOp& op : ops) ranks.push_back(op.rank);
    std::sort(ranks.begin(), ranks.end());
    const OpSignature& sig = ops[0].sig;
    if (sig.collective == Collective::kAllReduce || sig.collective == Collective::kReduce) {
      if (!spread_sig || !(*spread_sig == sig) || spread_ranks != ranks) {
        spread_sig.reset();
        spread_shares.clear();
        BATON_RETURN_IF_ERROR(sig.collective == Collective::kAllReduce
                                  ? BuildSpreadAllReduce(sig, ranks, world, &spread, &spread_shares)
                                  : BuildSpreadReduce(sig, ranks, world, &spread, &spread_shares));
        spread_sig = sig;
        spread_ranks = ranks;
      }
      run = &spread;
      shares = &spread_shares;
    } else {
      spread_copy_out = schedule;
      if (SpreadCopyOut(ranks, &spread_copy_out)) run = &spread_copy_out;
    }
  }
  DeviceMemory memory{&buffers, {}};
  if (run->scratch_bytes > 0) {
    std::vector<ScratchShare> whole;  // allocates only when used
    if (shares == nullptr || shares->empty()) {
      whole.push_back({0, run->scratch_bytes, -1});
      shares = &whole;
    }
    BATON_RETURN_IF_ERROR(AllocateScratchPieces(*shares, buffers, devices.front(), &memory.scratch));
  }
  if (Status planned = PlanDeviceSteps(*run, memory, &steps); !planned.ok()) {
    BATON_DEBUG(kColl, "{}: not run on the GPUs ({}); staging through host memory", ops[0].sig.ToString(),
                planned.ToString());
    return Status::Ok();
  }
  *ran = run;
  return gpu::RunDeviceSteps(steps, ops[0].sig.dtype, ops[0].sig.redop);
}

}  // namespace baton
