#include "daemon/device_ends.h"

#include <algorithm>

#include "common/logging.h"
#include "daemon/device_execution.h"
#include "gpu/step_runner.h"

namespace baton {

Status DeviceEnds::RunHead(const Schedule& schedule, const std::vector<LocalOp>& ops, int world,
                           GpuAllReduceShape shape, const Schedule** host_part) {
  active_ = false;
  *host_part = &schedule;
  if (!LocalRanksOnDevices(ops, world, &buffers_, &devices_)) return Status::Ok();
  const OpSignature& sig = ops[0].sig;
  if (!SplitForDeviceEnds(schedule, &split_)) {
    BATON_DEBUG(kColl, "{}: its local steps need host memory or are none; staging every buffer", sig.ToString());
    return Status::Ok();
  }
  // Ranks on several GPUs: an AllReduce's ends spread over them, as within
  // a node (device_execution.cc); on one GPU the gathered ends need fewer
  // launches.
  if (shape == GpuAllReduceShape::kSpread || (shape == GpuAllReduceShape::kAuto && devices_.size() > 1)) {
    local_ranks_.clear();
    for (const LocalOp& op : ops) local_ranks_.push_back(op.rank);
    std::sort(local_ranks_.begin(), local_ranks_.end());
    SpreadAllReduceEnds(sig, local_ranks_, world, &split_);  // false: not an AllReduce; its ends stay gathered
  }
  const DeviceMemory memory{&buffers_, nullptr, 0, devices_.front()};
  for (auto [part, steps] : {std::pair{&split_.head, &head_steps_}, std::pair{&split_.tail, &tail_steps_}}) {
    if (Status planned = PlanDeviceSteps(*part, memory, steps); !planned.ok()) {
      BATON_DEBUG(kColl, "{}: its local steps cannot run on the GPUs ({}); staging every buffer", sig.ToString(),
                  planned.ToString());
      return Status::Ok();
    }
  }
  dtype_ = sig.dtype;
  redop_ = sig.redop;
  active_ = true;
  *host_part = &split_.middle;
  if (head_steps_.empty()) return Status::Ok();
  return gpu::RunDeviceSteps(head_steps_, dtype_, redop_);
}

Status DeviceEnds::AddHeadOutputs(const std::vector<RankBuffers>& host, std::vector<StagedSpan>* spans) const {
  if (!active_) return Status::Ok();
  return AppendHeadOutputs(split_.head, buffers_, host, spans);
}

Status DeviceEnds::RunTail() const {
  if (!active_ || tail_steps_.empty()) return Status::Ok();
  return gpu::RunDeviceSteps(tail_steps_, dtype_, redop_);
}

}  // namespace baton
