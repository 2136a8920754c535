#include "collectives/network_split.h"

#include <algorithm>
#include <vector>

namespace baton {
namespace {

bool HasNetworkStep(const Phase& p) {
  return std::any_of(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.IsNetwork(); });
}

// How many ranks' send buffers `schedule` reads.
size_t SendBuffersRead(const Schedule& schedule) {
  std::vector<int> ranks;
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if (s.ReadsSrc() && s.src.bytes > 0 && s.src.buf == BufKind::kSend &&
          std::find(ranks.begin(), ranks.end(), s.src.rank) == ranks.end()) {
        ranks.push_back(s.src.rank);
      }
    }
  }
  return ranks.size();
}

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
  if (WritesSendBuffer(out->middle)) return false;
  // Scratch in the ends pays when the head folds or gathers several ranks
  // into it (a ReduceScatter's work vector: one vector staged instead of
  // one per rank). Otherwise (a tail folding what arrived, a head copying
  // one rank's input into its slot) it would only trade the host's work on
  // small vectors for kernel launches and copies: staged whole, as before.
  if ((UsesScratch(out->head) || UsesScratch(out->tail)) &&
      (!UsesScratch(out->head) || SendBuffersRead(out->head) < 2)) {
    return false;
  }
  out->head.scratch_bytes = ScratchExtent(out->head);
  out->tail.scratch_bytes = ScratchExtent(out->tail);
  return true;
}

uint64_t ScratchExtent(const Schedule& schedule) {
  uint64_t end = 0;
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if (s.ReadsSrc() && s.src.bytes > 0 && s.src.buf == BufKind::kScratch) end = std::max(end, s.src.offset + s.src.bytes);
      if (s.WritesDst() && s.dst.bytes > 0 && s.dst.buf == BufKind::kScratch) end = std::max(end, s.dst.offset + s.dst.bytes);
    }
  }
  return end;
}

bool UsesScratch(const Schedule& schedule) { return ScratchExtent(schedule) > 0; }

bool TouchesBuffer(const Schedule& schedule, BufKind buf, int rank) {
  auto names = [&](const Region& r) { return r.bytes > 0 && r.buf == buf && r.rank == rank; };
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if ((s.ReadsSrc() && names(s.src)) || (s.WritesDst() && names(s.dst))) return true;
    }
  }
  return false;
}

bool WritesSendBuffer(const Schedule& schedule) {
  for (const Phase& p : schedule.phases) {
    for (const Step& s : p.steps) {
      if (s.WritesDst() && s.dst.bytes > 0 && s.dst.buf == BufKind::kSend) return true;
    }
  }
  return false;
}

}  // namespace baton
