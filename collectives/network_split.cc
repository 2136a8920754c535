#include "collectives/network_split.h"

#include <algorithm>

namespace baton {
namespace {

bool HasNetworkStep(const Phase& p) {
  return std::any_of(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.IsNetwork(); });
}

// What a step reads (src) and writes (dst), as in the executor.
bool ReadsSrc(const Step& s) {
  return s.kind == StepKind::kCopy || s.kind == StepKind::kReduce || s.kind == StepKind::kSend ||
         (s.kind == StepKind::kRecvReduce && s.src.bytes > 0);
}
bool WritesDst(const Step& s) { return s.kind != StepKind::kSend; }

}  // namespace

bool SplitAtNetwork(const Schedule& schedule, ScheduleSplit* out) {
  *out = ScheduleSplit{};
  const auto& phases = schedule.phases;
  const auto first = std::find_if(phases.begin(), phases.end(), HasNetworkStep);
  if (first == phases.end()) return false;
  const auto last = std::find_if(phases.rbegin(), phases.rend(), HasNetworkStep).base() - 1;
  for (Schedule* part : {&out->head, &out->middle, &out->tail}) part->scratch_bytes = schedule.scratch_bytes;
  out->head.phases.assign(phases.begin(), first);
  Phase local, network;
  for (const Step& s : first->steps) (s.IsNetwork() ? network : local).steps.push_back(s);
  if (!local.steps.empty()) out->head.phases.push_back(std::move(local));
  out->middle.phases.push_back(std::move(network));
  out->middle.phases.insert(out->middle.phases.end(), first + 1, last + 1);
  out->tail.phases.assign(last + 1, phases.end());
  return true;
}

bool SplitForDeviceEnds(const Schedule& schedule, ScheduleSplit* out) {
  if (!SplitAtNetwork(schedule, out)) return false;
  if (out->head.phases.empty() && out->tail.phases.empty()) return false;  // nothing to gain
  if (UsesScratch(out->head) || UsesScratch(out->tail) || WritesSendBuffer(out->middle)) return false;
  out->head.scratch_bytes = 0;
  out->tail.scratch_bytes = 0;
  return true;
}

bool UsesScratch(const Schedule& schedule) {
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if ((ReadsSrc(s) && s.src.bytes > 0 && s.src.buf == BufKind::kScratch) ||
          (WritesDst(s) && s.dst.bytes > 0 && s.dst.buf == BufKind::kScratch)) {
        return true;
      }
    }
  }
  return false;
}

bool TouchesBuffer(const Schedule& schedule, BufKind buf, int rank) {
  auto names = [&](const Region& r) { return r.bytes > 0 && r.buf == buf && r.rank == rank; };
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if ((ReadsSrc(s) && names(s.src)) || (WritesDst(s) && names(s.dst))) return true;
    }
  }
  return false;
}

bool WritesSendBuffer(const Schedule& schedule) {
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if (WritesDst(s) && s.dst.bytes > 0 && s.dst.buf == BufKind::kSend) return true;
    }
  }
  return false;
}

}  // namespace baton
