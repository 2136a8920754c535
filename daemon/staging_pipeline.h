// StagingPipeline: runs a StagingPlan (staging_plan.h) around one
// collective on the communicator's worker thread. Start queues every copy
// of device input into host memory, in the order the phases need them, on
// this thread's copy stream of each device (gpu/device_copy.h), marking
// where each phase's share ends; before a phase the executor waits for its
// marks only, and after a phase the pipeline queues the output that phase
// finished, to copy back while the next phases run. Finish waits for all
// of it. The destructor waits too, so that host memory is never handed back
// to the pool while a copy may still touch it, also on error paths.
#pragma once

#include <vector>

#include "collectives/schedule.h"
#include "common/status.h"
#include "daemon/executor.h"
#include "daemon/staging_plan.h"
#include "gpu/device_copy.h"

namespace baton {

class StagingPipeline : public PhaseObserver {
 public:
  StagingPipeline() = default;
  StagingPipeline(const StagingPipeline&) = delete;
  StagingPipeline& operator=(const StagingPipeline&) = delete;
  ~StagingPipeline() override;

  // Plans `schedule` on `buffers` and `scratch` (host memory; PlanStaging)
  // for `spans` and queues the copies in. At most once per pipeline.
  Status Start(const Schedule& schedule, const std::vector<RankBuffers>& buffers, std::vector<StagedSpan> spans,
               const ScratchView* scratch = nullptr);
  Status BeforePhase(size_t phase) override;
  Status AfterPhase(size_t phase) override;
  // Waits for every copy queued; the first error of any of them.
  Status Finish();
  // Whether Start was given anything to copy.
  bool active() const { return !spans_.empty(); }

 private:
  void UseDevice(int device);

  std::vector<StagedSpan> spans_;
  StagingPlan plan_;
  std::vector<std::vector<gpu::CopyMark>> marks_;  // [phase]: what BeforePhase waits for
  std::vector<int> devices_;                       // every device copies were queued for
};

}  // namespace baton
