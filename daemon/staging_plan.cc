#include "daemon/staging_plan.h"

#include <algorithm>
#include <string>
#include <utility>

namespace baton {
namespace {

// One step's use of host memory in one phase.
struct Touch {
  const uint8_t* p = nullptr;
  uint64_t bytes = 0;
  uint32_t phase = 0;
  bool write = false;
};

Status CollectTouches(const Schedule& schedule, const std::vector<RankBuffers>& buffers, const ScratchView* scratch,
                      std::vector<Touch>* out) {
  for (size_t p = 0; p < schedule.phases.size(); ++p) {
    for (const Step& s : schedule.phases[p].steps) {
      // A fold's read of its destination is covered by the write.
      const bool reads_src = s.ReadsSrc();
      const bool writes_dst = s.WritesDst();
      // Without `scratch`, scratch regions resolve to null: never staged.
      uint8_t* p_src = nullptr;
      uint8_t* p_dst = nullptr;
      if (reads_src) BATON_RETURN_IF_ERROR(ResolveRegion(s.src, buffers, scratch, &p_src));
      if (writes_dst) BATON_RETURN_IF_ERROR(ResolveRegion(s.dst, buffers, scratch, &p_dst));
      if (p_src != nullptr && s.src.bytes > 0) out->push_back({p_src, s.src.bytes, static_cast<uint32_t>(p), false});
      if (p_dst != nullptr && s.dst.bytes > 0) out->push_back({p_dst, s.dst.bytes, static_cast<uint32_t>(p), true});
    }
  }
  return Status::Ok();
}

// Sorts `ranges` ((offset, end) pairs) and merges those that overlap or touch.
void Merge(std::vector<std::pair<uint64_t, uint64_t>>* ranges) {
  std::sort(ranges->begin(), ranges->end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : *ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  *ranges = std::move(merged);
}

void Append(std::vector<StagingCopy>& list, uint32_t span, uint64_t off, uint64_t len) {
  if (!list.empty() && list.back().span == span && list.back().offset + list.back().bytes == off) {
    list.back().bytes += len;
  } else {
    list.push_back({span, off, len});
  }
}

}  // namespace

Status PlanStaging(const Schedule& schedule, const std::vector<RankBuffers>& buffers,
                   const std::vector<StagedSpan>& spans, StagingPlan* out, const ScratchView* scratch) {
  const size_t phases = schedule.phases.size();
  out->in_before.assign(phases, {});
  out->out_after.assign(phases, {});
  thread_local std::vector<Touch> touches;
  touches.clear();
  BATON_RETURN_IF_ERROR(CollectTouches(schedule, buffers, scratch, &touches));
  constexpr uint32_t kNone = UINT32_MAX;
  for (uint32_t si = 0; si < spans.size(); ++si) {
    const StagedSpan& span = spans[si];
    if (span.bytes == 0) continue;
    const auto lo = reinterpret_cast<uintptr_t>(span.host), hi = lo + span.bytes;
    // The span cut where any touch begins or ends; each piece is touched
    // whole or not at all by every step.
    std::vector<uint64_t> cuts{0, span.bytes};
    for (const Touch& t : touches) {
      const auto a = reinterpret_cast<uintptr_t>(t.p), b = a + t.bytes;
      if (b <= lo || a >= hi) continue;
      cuts.push_back(std::max(a, lo) - lo);
      cuts.push_back(std::min(b, hi) - lo);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    const size_t pieces = cuts.size() - 1;
    std::vector<uint32_t> when(pieces, kNone);  // input: first phase touching it; output: last phase writing it
    for (const Touch& t : touches) {
      if (!span.input && !t.write) continue;
      const auto a = reinterpret_cast<uintptr_t>(t.p), b = a + t.bytes;
      if (b <= lo || a >= hi) continue;
      const uint64_t from = std::max(a, lo) - lo, to = std::min(b, hi) - lo;
      for (size_t k = std::lower_bound(cuts.begin(), cuts.end(), from) - cuts.begin(); k < pieces && cuts[k] < to;
           ++k) {
        if (when[k] == kNone) {
          when[k] = t.phase;
        } else {
          when[k] = span.input ? std::min(when[k], t.phase) : std::max(when[k], t.phase);
        }
      }
    }
    for (size_t k = 0; k < pieces; ++k) {
      if (when[k] == kNone) continue;
      Append(span.input ? out->in_before[when[k]] : out->out_after[when[k]], si, cuts[k], cuts[k + 1] - cuts[k]);
    }
  }
  return Status::Ok();
}

Status AppendHeadOutputs(const Schedule& head, const std::vector<DeviceRankBuffers>& device,
                         const std::vector<RankBuffers>& host, std::vector<StagedSpan>* spans) {
  // [rank] -> the (offset, end) ranges the head writes in its receive buffer.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> written(host.size());
  for (const Phase& p : head.phases) {
    for (const Step& s : p.steps) {
      if (s.IsNetwork() || s.dst.buf != BufKind::kRecv || s.dst.bytes == 0) continue;
      const auto r = static_cast<size_t>(s.dst.rank);
      if (s.dst.rank < 0 || r >= host.size() || r >= device.size()) {
        return Status::Internal("the head of a schedule writes the receive buffer of rank " +
                                std::to_string(s.dst.rank) + ", which has none here");
      }
      if (host[r].recv == nullptr) continue;  // not staged: the middle never touches it
      const uint64_t size = std::min(host[r].recv_bytes, device[r].recv_bytes);
      if (s.dst.offset > size || s.dst.bytes > size - s.dst.offset) {
        return Status::Internal("the head of a schedule writes outside a receive buffer (rank " +
                                std::to_string(r) + ", offset " + std::to_string(s.dst.offset) + ", bytes " +
                                std::to_string(s.dst.bytes) + ", buffer " + std::to_string(size) + ")");
      }
      written[r].emplace_back(s.dst.offset, s.dst.offset + s.dst.bytes);
    }
  }
  for (size_t r = 0; r < written.size(); ++r) {
    Merge(&written[r]);
    for (const auto& [from, to] : written[r]) {
      const uint64_t bytes = to - from;
      uint8_t* h = host[r].recv + from;
      uint8_t* d = device[r].recv + from;
      // In place, the rank's send buffer is this memory already, copied in
      // whole: the same bytes need not come twice.
      // (Addresses compared as integers: the host and device pointers are
      // of different allocations.)
      const auto addr = [](const uint8_t* p) { return reinterpret_cast<uintptr_t>(p); };
      const bool covered = std::any_of(spans->begin(), spans->end(), [&](const StagedSpan& s) {
        return s.input && addr(s.host) <= addr(h) && addr(h) + bytes <= addr(s.host) + s.bytes &&
               addr(s.device) - addr(s.host) == addr(d) - addr(h);
      });
      if (!covered) spans->push_back({h, d, bytes, device[r].recv_device, true});
    }
  }
  return Status::Ok();
}

Status AppendScratchSpans(const Schedule& head, const Schedule& tail, const std::vector<ScratchPiece>& device,
                          uint8_t* host, std::vector<StagedSpan>* spans) {
  const uint64_t covered = ScratchCovered(device);
  // (offset, end) ranges: what the head writes (input to the middle) and
  // what the tail reads (the middle's output).
  std::vector<std::pair<uint64_t, uint64_t>> written, read;
  for (const auto& [part, writes] : {std::pair{&head, true}, std::pair{&tail, false}}) {
    for (const Phase& p : part->phases) {
      for (const Step& s : p.steps) {
        if (s.IsNetwork()) {
          return Status::Internal("an end of a split schedule has a network step");
        }
        // The head: what it writes. The tail: what it reads (a fold or a
        // division reads its destination too; a byte the tail writes
        // before reading it comes back needlessly, never wrongly).
        for (const Region* r : {&s.src, &s.dst}) {
          if (r == &s.src && (writes || !s.ReadsSrc())) continue;
          if (r->buf != BufKind::kScratch || r->bytes == 0) continue;
          if (r->offset > covered || r->bytes > covered - r->offset) {
            return Status::Internal("an end of a split schedule touches scratch outside its " +
                                    std::to_string(covered) + " bytes (offset " + std::to_string(r->offset) +
                                    ", bytes " + std::to_string(r->bytes) + ")");
          }
          (writes ? written : read).emplace_back(r->offset, r->offset + r->bytes);
        }
      }
    }
  }
  Merge(&written);
  Merge(&read);
  // Each range cut where pieces meet: a span is one GPU's memory.
  auto append = [&](uint64_t from, uint64_t to, bool input) {
    for (const ScratchPiece& piece : device) {
      const uint64_t lo = std::max(from, piece.offset), hi = std::min(to, piece.offset + piece.bytes);
      if (lo >= hi) continue;
      spans->push_back({host + lo, piece.ptr + (lo - piece.offset), hi - lo, piece.device, input});
    }
  };
  for (const auto& [from, to] : written) append(from, to, true);
  for (const auto& [from, to] : read) append(from, to, false);
  return Status::Ok();
}

}  // namespace baton
