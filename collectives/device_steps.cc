#include "collectives/device_steps.h"

#include <algorithm>
#include <string>

namespace baton {
namespace {

struct Span {
  const uint8_t* p = nullptr;
  uint64_t bytes = 0;
};

bool Overlap(Span a, Span b) {
  if (a.bytes == 0 || b.bytes == 0) return false;
  const auto x = reinterpret_cast<uintptr_t>(a.p), y = reinterpret_cast<uintptr_t>(b.p);
  return x < y + b.bytes && y < x + a.bytes;
}

// What a step reads and writes. A reduction and a division read their
// destination too, which the write covers already.
Span Written(const DeviceStep& s) { return {s.dst, s.bytes}; }
Span Read(const DeviceStep& s) { return s.src != nullptr ? Span{s.src, s.bytes} : Span{}; }

// Whether any source `s` reads (a fused step's `more` too) overlaps `w`.
bool ReadsFrom(const DeviceStep& s, Span w) {
  if (Overlap(Read(s), w)) return true;
  return std::any_of(s.more.begin(), s.more.end(), [&](const uint8_t* p) { return Overlap({p, s.bytes}, w); });
}

// `later` must wait for `earlier` if either writes what the other touches.
bool Conflict(const DeviceStep& earlier, const DeviceStep& later) {
  return Overlap(Written(earlier), Written(later)) || ReadsFrom(later, Written(earlier)) ||
         ReadsFrom(earlier, Written(later));
}

size_t Operands(const DeviceStep& s) { return (s.from_src || s.kind == StepKind::kCopy ? 1 : 2) + s.more.size(); }

// Fuses each chain of steps into one destination (a copy or a fold, then
// folds of exactly that region, consecutive in `steps`) into one step, as
// PlanDeviceSteps (device_steps.h) says. Consecutive steps share a GPU (the
// one holding their destination) and so a stream: fusing keeps their
// order. Before any wait is computed.
void FuseChains(std::vector<DeviceStep>* steps) {
  std::vector<DeviceStep>& s = *steps;
  size_t kept = 0;
  for (size_t i = 0; i < s.size();) {
    DeviceStep lead = std::move(s[i]);
    size_t j = i + 1;
    if ((lead.kind == StepKind::kCopy || lead.kind == StepKind::kReduce) && !Overlap(Read(lead), Written(lead))) {
      while (j < s.size() && s[j].kind == StepKind::kReduce && s[j].dst == lead.dst && s[j].bytes == lead.bytes &&
             !Overlap(Read(s[j]), Written(lead)) && Operands(lead) < kMaxFusedOperands) {
        if (lead.kind == StepKind::kCopy) {
          lead.kind = StepKind::kReduce;
          lead.from_src = true;
        }
        lead.more.push_back(s[j].src);
        ++j;
      }
    }
    s[kept++] = std::move(lead);
    i = j;
  }
  s.resize(kept);
}

// A scratch region: in the piece that holds its first byte (the last one
// starting at or before it), whose bounds it must keep to.
Status ResolveScratch(const Region& r, const std::vector<ScratchPiece>& pieces, uint8_t** ptr, int* device) {
  const auto after = std::upper_bound(pieces.begin(), pieces.end(), r.offset,
                                      [](uint64_t off, const ScratchPiece& p) { return off < p.offset; });
  if (after == pieces.begin()) {
    if (r.bytes == 0) return Status::Ok();  // touches nothing
    return Status::InvalidArgument("schedule region in scratch (offset " + std::to_string(r.offset) +
                                   ") outside the GPU scratch");
  }
  const ScratchPiece& piece = *(after - 1);
  *device = piece.device;
  if (r.bytes == 0) {
    *ptr = piece.ptr;
    return Status::Ok();
  }
  if (piece.ptr == nullptr || piece.device < 0 || r.offset - piece.offset > piece.bytes ||
      r.bytes > piece.bytes - (r.offset - piece.offset)) {
    return Status::InvalidArgument("schedule region in scratch (offset " + std::to_string(r.offset) + ", bytes " +
                                   std::to_string(r.bytes) + ") outside its GPU's piece (offset " +
                                   std::to_string(piece.offset) + ", bytes " + std::to_string(piece.bytes) + ")");
  }
  *ptr = piece.ptr + (r.offset - piece.offset);
  return Status::Ok();
}

Status Resolve(const Region& r, const DeviceMemory& m, uint8_t** ptr, int* device) {
  if (r.buf == BufKind::kScratch) return ResolveScratch(r, m.scratch, ptr, device);
  if (r.rank < 0 || static_cast<size_t>(r.rank) >= m.buffers->size()) {
    return Status::InvalidArgument("schedule names rank " + std::to_string(r.rank) + " outside the communicator");
  }
  const DeviceRankBuffers& b = (*m.buffers)[r.rank];
  uint8_t* base = r.buf == BufKind::kSend ? b.send : b.recv;
  const uint64_t size = r.buf == BufKind::kSend ? b.send_bytes : b.recv_bytes;
  *device = r.buf == BufKind::kSend ? b.send_device : b.recv_device;
  if (r.bytes == 0) {
    *ptr = base;
    return Status::Ok();
  }
  if (base == nullptr || *device < 0 || r.offset > size || r.bytes > size - r.offset) {
    return Status::InvalidArgument("schedule region outside its GPU buffer (rank " + std::to_string(r.rank) +
                                   ", offset " + std::to_string(r.offset) + ", bytes " + std::to_string(r.bytes) +
                                   ", buffer " + std::to_string(size) + ")");
  }
  *ptr = base + r.offset;
  return Status::Ok();
}

}  // namespace

Status PlanDeviceSteps(const Schedule& schedule, const DeviceMemory& memory, std::vector<DeviceStep>* out) {
  out->clear();
  if (const uint64_t covered = ScratchCovered(memory.scratch); covered < schedule.scratch_bytes) {
    return Status::InvalidArgument("GPU scratch of " + std::to_string(covered) + " bytes, the schedule needs " +
                                   std::to_string(schedule.scratch_bytes));
  }
  for (const Phase& phase : schedule.phases) {
    for (const Step& s : phase.steps) {
      if (s.IsNetwork()) return Status::InvalidArgument("a schedule with network steps cannot run on GPUs alone");
      DeviceStep d;
      d.kind = s.kind;
      d.divisor = s.divisor;
      d.bytes = s.dst.bytes;
      BATON_RETURN_IF_ERROR(Resolve(s.dst, memory, &d.dst, &d.device));
      if (s.kind != StepKind::kDivide) {
        if (s.src.bytes != s.dst.bytes) return Status::InvalidArgument("schedule step with regions of different sizes");
        uint8_t* src = nullptr;
        int src_device = -1;
        BATON_RETURN_IF_ERROR(Resolve(s.src, memory, &src, &src_device));
        d.src = src;
        if (d.src != d.dst && Overlap(Read(d), Written(d))) {
          return Status::InvalidArgument("schedule step whose source and destination partly overlap");
        }
      }
      if (d.bytes == 0 || (d.kind == StepKind::kCopy && d.src == d.dst)) continue;  // nothing to do
      out->push_back(std::move(d));
    }
  }
  FuseChains(out);
  // Waits: for each earlier GPU, the latest earlier step there in conflict
  // (its stream ran everything before it on that GPU first).
  std::vector<DeviceStep>& steps = *out;
  const std::vector<int> devices = DevicesOf(steps);
  for (size_t j = 0; j < steps.size(); ++j) {
    for (int dev : devices) {
      if (dev == steps[j].device) continue;
      for (size_t i = j; i-- > 0;) {
        if (steps[i].device == dev && Conflict(steps[i], steps[j])) {
          steps[j].waits.push_back(static_cast<uint32_t>(i));
          steps[i].signals = true;
          break;
        }
      }
    }
  }
  return Status::Ok();
}

std::vector<const uint8_t*> FoldOperands(const DeviceStep& step) {
  std::vector<const uint8_t*> operands;
  if (!step.from_src) operands.push_back(step.dst);
  operands.push_back(step.src);
  operands.insert(operands.end(), step.more.begin(), step.more.end());
  return operands;
}

uint64_t ScratchCovered(const std::vector<ScratchPiece>& pieces) {
  uint64_t end = 0;
  for (const ScratchPiece& p : pieces) {
    if (p.offset != end) break;
    end += p.bytes;
  }
  return end;
}

std::vector<int> DevicesOf(const std::vector<DeviceStep>& steps) {
  std::vector<int> devices;
  for (const DeviceStep& s : steps) {
    if (std::find(devices.begin(), devices.end(), s.device) == devices.end()) devices.push_back(s.device);
  }
  return devices;
}

}  // namespace baton
