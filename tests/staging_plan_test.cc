// The staging plan (daemon/staging_plan.h), checked without a GPU: every
// collective on several simulated nodes runs on poisoned "staging" copies
// of its ranks' buffers, and the plan's copies are carried out with memcpy
// exactly where the pipeline would wait for them (input, before a phase)
// and queue them (output, after a phase). An input copied too late, an
// output copied back before its last write, or a byte left out shows in
// the ranks' own buffers, compared with the reference element by element.
#include "daemon/staging_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "collectives/reference.h"
#include "tests/schedule_simulator.h"

namespace baton::test {
namespace {
using namespace baton::reference;

constexpr uint8_t kPoison = 0xA5;

// Rank r's buffers as the daemon stages them (DeviceStaging): one host
// buffer when send and receive overlap (in place), else one each.
struct StagedRank {
  std::vector<uint8_t> send_host, recv_host;
  SimRank host;
};

void StageRank(const SimRank& dev, StagedRank* out) {
  const bool overlap = dev.send_bytes > 0 && dev.recv_bytes > 0 && dev.send < dev.recv + dev.recv_bytes &&
                       dev.recv < dev.send + dev.send_bytes;
  out->host = {nullptr, dev.send_bytes, nullptr, dev.recv_bytes};
  if (overlap) {
    const uint8_t* lo = std::min(dev.send, dev.recv);
    const uint8_t* hi = std::max(dev.send + dev.send_bytes, dev.recv + dev.recv_bytes);
    out->recv_host.assign(static_cast<size_t>(hi - lo), kPoison);
    out->host.send = out->recv_host.data() + (dev.send - lo);
    out->host.recv = out->recv_host.data() + (dev.recv - lo);
    return;
  }
  out->send_host.assign(dev.send_bytes, kPoison);
  out->recv_host.assign(dev.recv_bytes, kPoison);
  out->host.send = out->send_host.data();
  out->host.recv = out->recv_host.data();
}

struct Totals {
  uint64_t in = 0, out = 0;         // bytes the plans copied
  size_t phases_in = 0, phases_out = 0;  // phases with copies before / after them, over all nodes
};

// Runs `sig` with the ranks `staged(r)` says staged, the copies where the
// plans put them, and checks every rank's own receive buffer.
template <typename Staged>
void RunStagedAndCheck(const NodeLayout& layout, const OpSignature& sig, Algorithm algo, bool in_place, Staged staged,
                       Totals* totals = nullptr) {
  const int world = layout.world_size();
  RankMemory mem = MakeRankMemory(sig, world, in_place);
  std::vector<StagedRank> staging(world);
  std::vector<SimRank> run = mem.sim;  // what the schedule runs on
  std::vector<std::vector<StagedSpan>> spans(layout.num_nodes());
  for (int r = 0; r < world; ++r) {
    if (!staged(r)) continue;
    StageRank(mem.sim[r], &staging[r]);
    run[r] = staging[r].host;
    auto& node = spans[layout.node_of_rank[r]];
    if (run[r].send_bytes > 0) node.push_back({run[r].send, mem.sim[r].send, run[r].send_bytes, 0, true});
    if (run[r].recv_bytes > 0) node.push_back({run[r].recv, mem.sim[r].recv, run[r].recv_bytes, 0, false});
  }
  std::vector<RankBuffers> buffers(world);
  for (int r = 0; r < world; ++r) buffers[r] = {run[r].send, run[r].send_bytes, run[r].recv, run[r].recv_bytes};
  std::map<int, StagingPlan> plans;
  Totals local;
  PhaseHooks hooks;
  hooks.before = [&](int node, const Schedule& schedule, size_t phase) -> Status {
    if (phase == 0) {
      BATON_RETURN_IF_ERROR(PlanStaging(schedule, buffers, spans[node], &plans[node]));
      const StagingPlan& p = plans[node];
      if (p.in_before.size() != schedule.phases.size() || p.out_after.size() != schedule.phases.size()) {
        return Status::Internal("a plan with a different number of phases than its schedule");
      }
    }
    for (const StagingCopy& c : plans[node].in_before[phase]) {
      const StagedSpan& s = spans[node][c.span];
      if (!s.input) return Status::Internal("an output span copied in");
      std::memcpy(s.host + c.offset, s.device + c.offset, c.bytes);
      local.in += c.bytes;
    }
    local.phases_in += plans[node].in_before[phase].empty() ? 0 : 1;
    return Status::Ok();
  };
  hooks.after = [&](int node, const Schedule&, size_t phase) -> Status {
    for (const StagingCopy& c : plans[node].out_after[phase]) {
      const StagedSpan& s = spans[node][c.span];
      if (s.input) return Status::Internal("an input span copied back");
      std::memcpy(s.device + c.offset, s.host + c.offset, c.bytes);
      local.out += c.bytes;
    }
    local.phases_out += plans[node].out_after[phase].empty() ? 0 : 1;
    return Status::Ok();
  };
  const Status st = Simulate(layout, sig, algo, run, mem.in_place_ranks, hooks);
  ASSERT_TRUE(st.ok()) << sig.ToString() << ": " << st.ToString();
  uint64_t in_bytes = 0, out_bytes = 0;
  for (int r = 0; r < world; ++r) {
    if (staged(r)) {
      in_bytes += run[r].send_bytes;
      out_bytes += run[r].recv_bytes;
    }
  }
  // Every byte at most once.
  EXPECT_LE(local.in, in_bytes) << sig.ToString();
  EXPECT_LE(local.out, out_bytes) << sig.ToString();
  if (totals != nullptr) *totals = local;
  for (int r = 0; r < world; ++r) {
    const Bytes want = Expected(sig, world, r, mem.inputs);
    const Bytes got(mem.sim[r].recv, mem.sim[r].recv + mem.sim[r].recv_bytes);
    if (want.empty() && got.empty()) continue;
    std::string msg;
    ASSERT_EQ(FirstMismatch(sig.dtype, got, want, &msg), -1)
        << sig.ToString() << " algo " << AlgorithmName(algo) << (in_place ? " in place" : "") << " rank " << r
        << (staged(r) ? " (staged)" : " (host)") << ": " << msg;
  }
}

struct LayoutCase {
  const char* name;
  std::vector<int> per_node;
};

const LayoutCase kLayouts[] = {{"2x1", {1, 1}}, {"3x1", {1, 1, 1}}, {"4x1", {1, 1, 1, 1}},
                               {"2x2", {2, 2}}, {"1_2", {1, 2}}};

const Collective kCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                                   Collective::kAllGather, Collective::kReduceScatter, Collective::kScatter,
                                   Collective::kGather, Collective::kAllToAll};

class StagingPlanMatrix : public ::testing::TestWithParam<std::tuple<size_t, Collective>> {};

// Every rank staged, and every other rank staged (the mixed host/device
// collective), for every algorithm, in place and not.
TEST_P(StagingPlanMatrix, CopiesAroundThePhasesGiveTheReference) {
  const NodeLayout layout = NodeLayout::Blocked(kLayouts[std::get<0>(GetParam())].per_node);
  const Collective coll = std::get<1>(GetParam());
  for (auto [dtype, op] : {std::pair{DataType::kFloat32, RedOp::kSum}, std::pair{DataType::kInt32, RedOp::kMax}}) {
    if (!IsReduction(coll) && op != RedOp::kSum) continue;
    for (uint64_t count : {1ull, 7ull, 1027ull}) {
      for (Algorithm algo : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kDirect,
                             Algorithm::kHalvingDoubling, Algorithm::kDoubleTree}) {
        if (algo != Algorithm::kAuto && !AlgorithmMatters(coll)) continue;
        for (bool in_place : {false, true}) {
          const OpSignature sig{coll, dtype, op, HasRoot(coll) ? layout.world_size() - 1 : -1, count};
          RunStagedAndCheck(layout, sig, algo, in_place, [](int) { return true; });
          if (HasFatalFailure()) return;
          RunStagedAndCheck(layout, sig, algo, in_place, [](int r) { return r % 2 == 0; });
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Nodes, StagingPlanMatrix,
    ::testing::Combine(::testing::Range<size_t>(0, std::size(kLayouts)), ::testing::ValuesIn(kCollectives)),
    [](const auto& info) {
      return std::string(kLayouts[std::get<0>(info.param)].name) + "_" + CollectiveName(std::get<1>(info.param));
    });

// The point of the plan: on a ring of four nodes, the input is needed
// phase by phase and the result is final phase by phase, so the copies
// spread over the phases instead of all coming before and after; and every
// byte is copied exactly once each way.
TEST(StagingPlan, ARingCopiesAsItsPhasesGo) {
  const NodeLayout layout = NodeLayout::Blocked({1, 1, 1, 1});
  const uint64_t count = 1 << 18;
  const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, count};
  Totals totals;
  RunStagedAndCheck(layout, sig, Algorithm::kRing, false, [](int) { return true; }, &totals);
  EXPECT_EQ(totals.in, 4 * 4 * count);
  EXPECT_EQ(totals.out, 4 * 4 * count);
  // Ring AllReduce on 4 nodes: 3 reduce-scatter and 3 all-gather phases;
  // input arrives before each of the first three on every node, output
  // leaves after each of the last four (the reduce-scatter's last phase
  // finishes the node's own partition).
  EXPECT_EQ(totals.phases_in, 4u * 3u);
  EXPECT_EQ(totals.phases_out, 4u * 4u);
}

// Schedules of many phases: the double tree and the chained Broadcast
// pipeline vectors over 1 MiB in chunks, in place and not.
TEST(StagingPlan, PipelinedSchedulesOfManyPhases) {
  const NodeLayout layout = NodeLayout::Blocked({1, 1, 1, 1});
  const uint64_t count = (1 << 20) + 3;
  for (bool in_place : {false, true}) {
    Totals totals;
    RunStagedAndCheck(layout, {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, count},
                      Algorithm::kDoubleTree, in_place, [](int) { return true; }, &totals);
    // Results go back chunk by chunk as each node finishes them.
    EXPECT_GT(totals.phases_out, 4u * 2u) << "over all four nodes";
    RunStagedAndCheck(layout, {Collective::kBroadcast, DataType::kFloat32, RedOp::kSum, 2, count}, Algorithm::kAuto,
                      in_place, [](int r) { return r != 1; });
  }
}

// What no phase touches is not copied: a Broadcast's non-root ranks read no
// input, and a Reduce's non-root ranks have no output.
TEST(StagingPlan, UntouchedBytesAreNotCopied) {
  const NodeLayout layout = NodeLayout::Blocked({1, 1});
  const OpSignature reduce{Collective::kReduce, DataType::kFloat32, RedOp::kSum, 1, 1000};
  Totals totals;
  RunStagedAndCheck(layout, reduce, Algorithm::kAuto, false, [](int) { return true; }, &totals);
  EXPECT_EQ(totals.out, 4000u) << "only the root's result goes back";
  const OpSignature bcast{Collective::kBroadcast, DataType::kFloat32, RedOp::kSum, 0, 1000};
  RunStagedAndCheck(layout, bcast, Algorithm::kAuto, false, [](int) { return true; }, &totals);
  EXPECT_EQ(totals.in, 4000u) << "only the root's input comes in";
}

TEST(StagingPlan, ARegionOutsideItsBufferIsAnError) {
  std::vector<uint8_t> mem(64);
  const std::vector<RankBuffers> buffers{{mem.data(), 32, mem.data() + 32, 32}};
  Schedule s;
  s.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 16, 32}, {BufKind::kRecv, 0, 0, 32}}}});
  StagingPlan plan;
  const Status st = PlanStaging(s, buffers, {{mem.data(), nullptr, 32, 0, true}}, &plan);
  EXPECT_EQ(st.code(), Code::kInternalError);
  EXPECT_NE(st.message().find("outside its buffer (rank 0, offset 16, bytes 32, buffer 32)"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace baton::test
