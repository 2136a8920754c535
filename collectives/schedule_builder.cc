#include "collectives/schedule_builder.h"

#include <algorithm>

namespace baton {

void ScheduleBuilder::AddLocal(Step step) {
  // A local step after a network step of the same phase would run before it
  // (local steps go first), so it opens a new phase.
  const auto& steps = current().steps;
  if (std::any_of(steps.begin(), steps.end(), [](const Step& s) { return s.IsNetwork(); })) {
    EndPhase();
  }
  current().steps.push_back(step);
}

void ScheduleBuilder::AddNetwork(Step step) { current().steps.push_back(step); }

void ScheduleBuilder::Copy(const Region& src, const Region& dst) {
  if (src.bytes == 0 || src == dst) return;
  AddLocal({StepKind::kCopy, src, dst});
}

void ScheduleBuilder::Reduce(const Region& src, const Region& dst) {
  if (src.bytes == 0) return;
  AddLocal({StepKind::kReduce, src, dst});
}

void ScheduleBuilder::Divide(const Region& dst, uint64_t divisor) {
  if (dst.bytes == 0) return;
  Step s{StepKind::kDivide, {}, dst};
  s.divisor = divisor;
  AddLocal(s);
}

void ScheduleBuilder::Send(int peer, const Region& src) {
  if (src.bytes == 0) return;
  AddNetwork({StepKind::kSend, src, {}, peer});
}

void ScheduleBuilder::Recv(int peer, const Region& dst) {
  if (dst.bytes == 0) return;
  AddNetwork({StepKind::kRecv, {}, dst, peer});
}

void ScheduleBuilder::RecvReduce(int peer, const Region& dst) {
  if (dst.bytes == 0) return;
  AddNetwork({StepKind::kRecvReduce, {}, dst, peer});
}

void ScheduleBuilder::RecvReduceFrom(int peer, const Region& operand, const Region& dst) {
  if (dst.bytes == 0) return;
  AddNetwork({StepKind::kRecvReduce, operand, dst, peer});
}

void ScheduleBuilder::Signal(int peer) { AddNetwork({StepKind::kSend, {}, {}, peer}); }
void ScheduleBuilder::AwaitSignal(int peer) { AddNetwork({StepKind::kRecv, {}, {}, peer}); }

void ScheduleBuilder::EndPhase() {
  if (!current().steps.empty()) out_->phases.emplace_back();
}

Region ScheduleBuilder::Scratch(uint64_t bytes) {
  Region r{BufKind::kScratch, -1, out_->scratch_bytes, bytes};
  out_->scratch_bytes += bytes;
  return r;
}

void ScheduleBuilder::Finish() {
  auto& phases = out_->phases;
  phases.erase(std::remove_if(phases.begin(), phases.end(), [](const Phase& p) { return p.steps.empty(); }),
               phases.end());
}

}  // namespace baton
