// FlightRecorder: the last N operations of a communicator on this node, with
// when each local rank submitted it, when the exchange started and ended,
// and how it ended. Dumped on request (Admin.GetTrace, `batonctl trace`) and
// automatically when the communicator fails, as plain JSON or as Chrome
// trace-event JSON (chrome://tracing, Perfetto).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/types.h"

namespace baton {

struct FlightRecord {
  uint64_t seq = 0;
  // What ran. Kept as the signature and formatted only when the record is
  // shown: recording happens for every operation, showing rarely.
  OpSignature sig;
  uint64_t bytes = 0;    // bytes this node's ranks contributed
  std::vector<std::pair<int, int64_t>> arrivals;  // (rank, submit time in us since the epoch)
  int64_t start_us = 0;  // all local ranks arrived; exchange began
  int64_t end_us = 0;
  std::string result;    // "ok" or the error

  // e.g. "allreduce(count=4, dtype=float32, op=sum)", or "split()".
  std::string Op() const;
};

class FlightRecorder {
 public:
  explicit FlightRecorder(size_t capacity) : capacity_(capacity) {}

  // Keeps *r as the newest record, displacing the oldest once `capacity`
  // are kept. *r is left holding the displaced record (or an empty one):
  // the caller fills it again for its next operation, so that recording
  // reuses the records' memory instead of allocating per operation.
  void Record(FlightRecord* r);
  size_t size() const;

  // {"records": [...]} with every field above.
  std::string ToJson() const;
  // Chrome trace events: per rank a slice from its arrival to the end of
  // the operation (pid = node, tid = rank), plus the exchange itself.
  std::string ToChromeTrace(const std::string& node_name, int node_index, const std::string& comm) const;

  static int64_t NowMicros();

 private:
  // Calls fn on each record, oldest first. Needs mu_.
  template <typename Fn>
  void ForEachLocked(Fn fn) const {
    const size_t n = records_.size();
    for (size_t i = 0; i < n; ++i) fn(records_[(oldest_ + i) % n]);
  }

  const size_t capacity_;
  mutable std::mutex mu_;
  // A ring once full: records_[oldest_] is the oldest.
  std::vector<FlightRecord> records_;
  size_t oldest_ = 0;
};

// Escapes a string for a JSON string literal.
std::string JsonEscape(const std::string& s);

}  // namespace baton
