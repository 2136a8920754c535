#include "daemon/flight_recorder.h"

#include <cstdio>

namespace baton {

int64_t FlightRecorder::NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string FlightRecord::Op() const { return sig.collective == Collective::kSplit ? "split()" : sig.ToString(); }

void FlightRecorder::Record(FlightRecord* r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capacity_ == 0) return;
  if (records_.size() < capacity_) {
    records_.push_back(std::move(*r));
    *r = FlightRecord{};
    return;
  }
  std::swap(records_[oldest_], *r);
  oldest_ = (oldest_ + 1) % capacity_;
}

size_t FlightRecorder::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string FlightRecorder::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "{\"records\": [";
  bool first = true;
  ForEachLocked([&](const FlightRecord& r) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "  {\"seq\": " + std::to_string(r.seq) + ", \"op\": \"" + JsonEscape(r.Op()) +
           "\", \"bytes\": " + std::to_string(r.bytes) + ", \"arrivals\": [";
    for (size_t i = 0; i < r.arrivals.size(); ++i) {
      out += (i ? ", " : "") + std::string("{\"rank\": ") + std::to_string(r.arrivals[i].first) +
             ", \"us\": " + std::to_string(r.arrivals[i].second) + "}";
    }
    out += "], \"start_us\": " + std::to_string(r.start_us) + ", \"end_us\": " + std::to_string(r.end_us) +
           ", \"result\": \"" + JsonEscape(r.result) + "\"}";
  });
  out += "\n]}\n";
  return out;
}

std::string FlightRecorder::ToChromeTrace(const std::string& node_name, int node_index, const std::string& comm) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  const std::string pid = std::to_string(node_index);
  out += "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"args\": {\"name\": \"" +
         JsonEscape(node_name + " " + comm) + "\"}}";
  ForEachLocked([&](const FlightRecord& r) {
    const std::string op = r.Op();
    const std::string name = JsonEscape(op.substr(0, op.find('(')) + " #" + std::to_string(r.seq));
    const std::string args = "{\"op\": \"" + JsonEscape(op) + "\", \"seq\": " + std::to_string(r.seq) +
                             ", \"bytes\": " + std::to_string(r.bytes) + ", \"result\": \"" + JsonEscape(r.result) +
                             "\"}";
    for (const auto& [rank, us] : r.arrivals) {
      out += ",\n  {\"name\": \"" + name + "\", \"cat\": \"rank\", \"ph\": \"X\", \"pid\": " + pid +
             ", \"tid\": " + std::to_string(rank) + ", \"ts\": " + std::to_string(us) +
             ", \"dur\": " + std::to_string(std::max<int64_t>(0, r.end_us - us)) + ", \"args\": " + args + "}";
    }
    out += ",\n  {\"name\": \"" + name + " exchange\", \"cat\": \"daemon\", \"ph\": \"X\", \"pid\": " + pid +
           ", \"tid\": -1, \"ts\": " + std::to_string(r.start_us) +
           ", \"dur\": " + std::to_string(std::max<int64_t>(0, r.end_us - r.start_us)) + ", \"args\": " + args + "}";
  });
  out += "\n]}\n";
  return out;
}

}  // namespace baton
