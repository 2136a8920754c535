#include "daemon/staging_pipeline.h"

#include <algorithm>
#include <utility>

namespace baton {

StagingPipeline::~StagingPipeline() { (void)Finish(); }

void StagingPipeline::UseDevice(int device) {
  if (std::find(devices_.begin(), devices_.end(), device) == devices_.end()) devices_.push_back(device);
}

Status StagingPipeline::Start(const Schedule& schedule, const std::vector<RankBuffers>& buffers,
                              std::vector<StagedSpan> spans, const ScratchView* scratch) {
  if (!spans_.empty()) return Status::Internal("a staging pipeline started twice");
  spans_ = std::move(spans);
  BATON_RETURN_IF_ERROR(PlanStaging(schedule, buffers, spans_, &plan_, scratch));
  // The previous collective on this thread waited for all its copies.
  gpu::ForgetMarks();
  marks_.assign(plan_.in_before.size(), {});
  std::vector<int> queued;  // devices with copies since the last marks
  for (size_t p = 0; p < plan_.in_before.size(); ++p) {
    queued.clear();
    for (const StagingCopy& c : plan_.in_before[p]) {
      const StagedSpan& s = spans_[c.span];
      UseDevice(s.device_id);
      BATON_RETURN_IF_ERROR(gpu::QueueCopyToHost(s.host + c.offset, s.device + c.offset, c.bytes, s.device_id));
      if (std::find(queued.begin(), queued.end(), s.device_id) == queued.end()) queued.push_back(s.device_id);
    }
    for (int device : queued) {
      gpu::CopyMark mark;
      BATON_RETURN_IF_ERROR(gpu::MarkCopies(device, &mark));
      marks_[p].push_back(mark);
    }
  }
  return Status::Ok();
}

Status StagingPipeline::BeforePhase(size_t phase) {
  if (phase >= marks_.size()) return Status::Ok();
  for (const gpu::CopyMark& mark : marks_[phase]) BATON_RETURN_IF_ERROR(gpu::WaitForMark(mark));
  return Status::Ok();
}

Status StagingPipeline::AfterPhase(size_t phase) {
  if (phase >= plan_.out_after.size()) return Status::Ok();
  for (const StagingCopy& c : plan_.out_after[phase]) {
    const StagedSpan& s = spans_[c.span];
    UseDevice(s.device_id);
    BATON_RETURN_IF_ERROR(gpu::QueueCopyToDevice(s.device + c.offset, s.host + c.offset, c.bytes, s.device_id));
  }
  return Status::Ok();
}

Status StagingPipeline::Finish() {
  Status first = Status::Ok();
  for (int device : devices_) {
    Status st = gpu::WaitForCopies(device);
    if (first.ok() && !st.ok()) first = st;
  }
  devices_.clear();
  return first;
}

}  // namespace baton
