// ScheduleBuilder: appends steps to a Schedule while keeping the execution
// rule of schedule.h (local steps of a phase run before its network steps).
#pragma once

#include "collectives/schedule.h"

namespace baton {

class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(Schedule* out) : out_(out) { out_->phases.emplace_back(); }

  // Local steps. Zero-byte steps are dropped.
  void Copy(const Region& src, const Region& dst);
  void Reduce(const Region& src, const Region& dst);
  void Divide(const Region& dst, uint64_t divisor);

  // Network steps. Zero-byte data steps are dropped (both ends compute the
  // same sizes, so they drop the same steps); Signal sends an empty message.
  void Send(int peer, const Region& src);
  void Recv(int peer, const Region& dst);
  void RecvReduce(int peer, const Region& dst);
  // dst = operand (op) the incoming message: a fold that reads its local
  // operand where it lies instead of needing it copied into dst first.
  void RecvReduceFrom(int peer, const Region& operand, const Region& dst);
  void Signal(int peer);
  void AwaitSignal(int peer);

  // Starts a new phase: what follows depends on everything before.
  void EndPhase();

  // Reserves `bytes` of scratch; returns a region at the reserved offset.
  Region Scratch(uint64_t bytes);

  // Removes empty phases; call once at the end.
  void Finish();

 private:
  void AddLocal(Step step);
  void AddNetwork(Step step);
  Phase& current() { return out_->phases.back(); }

  Schedule* out_;
};

}  // namespace baton
