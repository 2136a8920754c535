// SpreadCopyOut (collectives/spread_copy_out.h): which copy-outs it
// rewrites and what each GPU's links then carry. That the rewritten ends
// still give the reference, element by element and in every order GPUs may
// choose, is checked by the matrices of staging_plan_test.cc (across nodes)
// and device_steps_test.cc (within one node).
#include "collectives/spread_copy_out.h"

#include <gtest/gtest.h>

#include <map>

#include "collectives/layout.h"
#include "collectives/network_split.h"
#include "tests/schedule_parts.h"

namespace baton {
namespace {

// Bytes each rank's buffers give to and take from other ranks' in `part`'s
// copies, and the bytes of all its copies.
struct CopyTraffic {
  std::map<int, uint64_t> out, in;
  uint64_t copied = 0;
};
CopyTraffic TrafficOf(const Schedule& part) {
  CopyTraffic t;
  for (const Step& s : AllSteps(part)) {
    if (s.kind != StepKind::kCopy) continue;
    t.copied += s.src.bytes;
    if (s.src.rank == s.dst.rank) continue;
    t.out[s.src.rank] += s.src.bytes;
    t.in[s.dst.rank] += s.src.bytes;
  }
  return t;
}

struct CopyOutCase {
  const char* name;
  OpSignature sig;
  int holder;     // whose buffer holds the vector
  bool from_send;  // the holder's send buffer (a Broadcast's root)
};

// Across nodes, on node 1 of two of four ranks each (ranks 4..7, leader
// 4): the leader's GPU sends the vector out once instead of three times,
// every other rank's takes it in once, and passes on a third of it to each
// of the other two.
TEST(SpreadCopyOut, TheHolderSendsTheVectorOutOnceAndTheOthersPassItOn) {
  const NodeLayout layout = NodeLayout::Blocked({4, 4});
  const uint64_t count = 3 * 1024;  // chunks fall on 256-byte boundaries: a multiple of 3 * 256 bytes
  const CopyOutCase cases[] = {
      {"allgather", {Collective::kAllGather, DataType::kFloat32, RedOp::kSum, -1, count}, 4, false},
      {"allreduce avg", {Collective::kAllReduce, DataType::kFloat32, RedOp::kAvg, -1, count}, 4, false},
      {"broadcast from the other node", {Collective::kBroadcast, DataType::kFloat32, RedOp::kSum, 1, count}, 4, false},
      {"broadcast on the root's node", {Collective::kBroadcast, DataType::kFloat32, RedOp::kSum, 6, count}, 6, true},
  };
  for (const CopyOutCase& c : cases) {
    SCOPED_TRACE(c.name);
    ScheduleSplit split;
    ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(layout, 1, c.sig), &split));
    const std::vector<Step> before = AllSteps(split.tail);
    const Schedule middle = split.middle;
    const uint64_t vector = before.back().src.bytes;
    ASSERT_TRUE(SpreadCopyOut({4, 5, 6, 7}, &split.tail));
    EXPECT_EQ(split.middle.ToString(), middle.ToString());
    const std::vector<Step> after = AllSteps(split.tail);
    // An average's division stays first, on the vector.
    ASSERT_FALSE(after.empty());
    EXPECT_EQ(after.front().kind == StepKind::kDivide, c.sig.redop == RedOp::kAvg);
    if (c.sig.redop == RedOp::kAvg) {
      EXPECT_EQ(after.front().dst, before.front().dst);
    }

    const CopyTraffic gathered = TrafficOf(Schedule{{Phase{before}}, 0});
    EXPECT_EQ(gathered.out.at(c.holder), 3 * vector);
    const CopyTraffic spread = TrafficOf(split.tail);
    EXPECT_EQ(spread.out.at(c.holder), vector);
    for (int r = 4; r < 8; ++r) {
      if (r == c.holder) {
        EXPECT_EQ(spread.in.count(r), 0u) << "the holder takes nothing in";
        continue;
      }
      EXPECT_EQ(spread.in.at(r), vector) << "rank " << r << " takes in each chunk once";
      EXPECT_EQ(spread.out.at(r), 2 * vector / 3) << "rank " << r << " passes its chunk to the two others";
    }
    // Three chunk copies and six passes, and, from a send buffer, the
    // holder's own copy into its receive buffer (within its GPU).
    EXPECT_EQ(spread.copied, (3 + (c.from_send ? 1 : 0)) * vector);
    EXPECT_EQ(after.size(), (c.sig.redop == RedOp::kAvg ? 1u : 0u) + (c.from_send ? 1u : 0u) + 3u + 6u);
  }
}

// Within one node the whole Broadcast is its copy-out, from the root's send
// buffer; the spread one reads it once for the others.
TEST(SpreadCopyOut, ABroadcastWithinANodeSpreadsFromTheRoot) {
  const NodeLayout layout = NodeLayout::Blocked({4});
  const OpSignature sig{Collective::kBroadcast, DataType::kBfloat16, RedOp::kSum, 2, 1000};  // 2000 bytes
  Schedule schedule = NodeSchedule(layout, 0, sig);
  EXPECT_EQ(TrafficOf(schedule).out.at(2), 3 * 2000u);
  ASSERT_TRUE(SpreadCopyOut({0, 1, 2, 3}, &schedule));
  const CopyTraffic spread = TrafficOf(schedule);
  EXPECT_EQ(spread.out.at(2), 2000u);
  for (int r : {0, 1, 3}) EXPECT_EQ(spread.in.at(r), 2000u) << "rank " << r;
  // 2000 bytes in three chunks of 768, 768 and 464.
  const std::vector<Step> steps = AllSteps(schedule);
  ASSERT_EQ(steps.size(), 1u + 3u + 6u);
  EXPECT_EQ(steps[0].src, (Region{BufKind::kSend, 2, 0, 2000}));
  EXPECT_EQ(steps[0].dst, (Region{BufKind::kRecv, 2, 0, 2000}));
  EXPECT_EQ(steps[1].dst, (Region{BufKind::kRecv, 0, 0, 768}));
  EXPECT_EQ(steps[2].dst, (Region{BufKind::kRecv, 1, 768, 768}));
  EXPECT_EQ(steps[3].dst, (Region{BufKind::kRecv, 3, 1536, 464}));
}

// Anything but exactly such a copy-out is left as it was.
TEST(SpreadCopyOut, LeavesEverythingElseAlone) {
  auto unchanged = [](const std::vector<int>& local, Schedule part, const char* what) {
    const std::string before = part.ToString();
    EXPECT_FALSE(SpreadCopyOut(local, &part)) << what;
    EXPECT_EQ(part.ToString(), before) << what;
  };
  const NodeLayout two_by_four = NodeLayout::Blocked({4, 4});
  for (Collective c : {Collective::kReduceScatter, Collective::kReduce, Collective::kGather, Collective::kScatter,
                       Collective::kAllToAll}) {
    const OpSignature sig{c, DataType::kFloat32, RedOp::kSum, HasRoot(c) ? 5 : -1, 3000};
    ScheduleSplit split;
    if (!SplitForDeviceEnds(NodeSchedule(two_by_four, 1, sig), &split)) continue;
    unchanged({4, 5, 6, 7}, split.tail, CollectiveName(c));
  }
  // Two local ranks: the copy-out is a single copy already.
  const NodeLayout two_by_two = NodeLayout::Blocked({2, 2});
  ScheduleSplit split;
  ASSERT_TRUE(SplitForDeviceEnds(NodeSchedule(two_by_two, 1, {Collective::kAllGather, DataType::kInt8, RedOp::kSum, -1, 4096}),
                                 &split));
  unchanged({2, 3}, split.tail, "two local ranks");
  // The copy-out over other ranks than the ones named, or missing one.
  ASSERT_TRUE(
      SplitForDeviceEnds(NodeSchedule(two_by_four, 1, {Collective::kAllGather, DataType::kInt8, RedOp::kSum, -1, 4096}), &split));
  unchanged({4, 5, 6}, split.tail, "a rank the copy-out serves is not named");
  unchanged({0, 1, 2, 3}, split.tail, "another node's ranks");
  Schedule missing = split.tail;
  missing.phases[0].steps.pop_back();
  unchanged({4, 5, 6, 7}, missing, "a rank's copy missing");
  Schedule other_source = split.tail;
  other_source.phases[0].steps[1].src.rank = 5;
  unchanged({4, 5, 6, 7}, other_source, "a copy from another vector");
  Schedule two_phases = split.tail;
  two_phases.phases.push_back(two_phases.phases[0]);
  unchanged({4, 5, 6, 7}, two_phases, "two phases");
  unchanged({4, 5, 6, 7}, Schedule{}, "nothing");
}

}  // namespace
}  // namespace baton
