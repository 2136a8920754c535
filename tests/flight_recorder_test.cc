// FlightRecorder on its own: a ring of the last N records, shown oldest
// first, that hands the displaced record back for reuse.
#include <gtest/gtest.h>

#include <string>

#include "daemon/flight_recorder.h"

namespace baton {
namespace {

FlightRecord Make(uint64_t seq) {
  FlightRecord r;
  r.seq = seq;
  r.sig = OpSignature{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, seq};
  r.arrivals = {{0, 100 + static_cast<int64_t>(seq)}, {1, 200 + static_cast<int64_t>(seq)}};
  r.start_us = 1000;
  r.end_us = 2000;
  r.result = "ok";
  return r;
}

// The "seq" values of the JSON dump, in order.
std::string Seqs(const FlightRecorder& fr) {
  const std::string json = fr.ToJson();
  std::string out;
  for (size_t at = json.find("\"seq\": "); at != std::string::npos; at = json.find("\"seq\": ", at + 1)) {
    const size_t begin = at + 7;
    out += (out.empty() ? "" : ",") + json.substr(begin, json.find(',', begin) - begin);
  }
  return out;
}

TEST(FlightRecorder, KeepsTheLastRecordsOldestFirst) {
  FlightRecorder fr(3);
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    FlightRecord r = Make(seq);
    fr.Record(&r);
    EXPECT_EQ(r.seq, 0u) << "nothing displaced yet: an empty record comes back";
  }
  EXPECT_EQ(fr.size(), 2u);
  EXPECT_EQ(Seqs(fr), "1,2");
  for (uint64_t seq = 3; seq <= 7; ++seq) {
    FlightRecord r = Make(seq);
    fr.Record(&r);
    if (seq > 3) {
      // The oldest one is displaced and handed back, with its memory.
      EXPECT_EQ(r.seq, seq - 3);
      EXPECT_EQ(r.arrivals.size(), 2u);
    }
  }
  EXPECT_EQ(fr.size(), 3u);
  EXPECT_EQ(Seqs(fr), "5,6,7");
  const std::string json = fr.ToJson();
  EXPECT_NE(json.find("{\"rank\": 1, \"us\": 207}"), std::string::npos) << json;
  EXPECT_NE(json.find("allreduce(count=7"), std::string::npos) << json;
  // The Chrome trace lists the same records in the same order.
  const std::string trace = fr.ToChromeTrace("node-a", 0, "world");
  const size_t five = trace.find("allreduce #5");
  const size_t seven = trace.find("allreduce #7");
  ASSERT_NE(five, std::string::npos) << trace;
  ASSERT_NE(seven, std::string::npos) << trace;
  EXPECT_LT(five, seven);
  EXPECT_EQ(trace.find("allreduce #4"), std::string::npos) << trace;
}

TEST(FlightRecorder, CapacityZeroKeepsNothing) {
  FlightRecorder fr(0);
  FlightRecord r = Make(1);
  fr.Record(&r);
  EXPECT_EQ(fr.size(), 0u);
  EXPECT_EQ(Seqs(fr), "");
}

}  // namespace
}  // namespace baton
