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
#include <functional>
#include <string>
#include <map>

#include "collectives/network_split.h"
#include "collectives/spread_allreduce.h"
#include "collectives/spread_copy_out.h"
#include "collectives/spread_reduce.h"
#include "collectives/spread_scratch_fold.h"
#include "collectives/reference.h"
#include "tests/gpu_orders.h"
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

// The pipeline's copies for `spans` (per node), done with memcpy where it
// would wait for them (input, before a phase) and queue them (output, after
// it), on `buffers` (the memory the schedules run on), counted in `totals`.
// `scratch` (per node, or null) is the scratch space spans may lie in.
PhaseHooks CopyingHooks(const std::vector<RankBuffers>& buffers, const std::vector<std::vector<StagedSpan>>& spans,
                        std::map<int, StagingPlan>& plans, Totals& totals,
                        const std::vector<std::vector<uint8_t>*>* scratch = nullptr) {
  PhaseHooks hooks;
  hooks.before = [&, scratch](int node, const Schedule& schedule, size_t phase) -> Status {
    if (phase == 0) {
      std::vector<uint8_t>* node_scratch = scratch != nullptr ? (*scratch)[node] : nullptr;
      const ScratchView view = node_scratch != nullptr ? ScratchView{node_scratch->data(), node_scratch->size()}
                                                       : ScratchView{};
      BATON_RETURN_IF_ERROR(
          PlanStaging(schedule, buffers, spans[node], &plans[node], node_scratch != nullptr ? &view : nullptr));
      const StagingPlan& p = plans[node];
      if (p.in_before.size() != schedule.phases.size() || p.out_after.size() != schedule.phases.size()) {
        return Status::Internal("a plan with a different number of phases than its schedule");
      }
    }
    for (const StagingCopy& c : plans[node].in_before[phase]) {
      const StagedSpan& s = spans[node][c.span];
      if (!s.input) return Status::Internal("an output span copied in");
      std::memcpy(s.host + c.offset, s.device + c.offset, c.bytes);
      totals.in += c.bytes;
    }
    totals.phases_in += plans[node].in_before[phase].empty() ? 0 : 1;
    return Status::Ok();
  };
  hooks.after = [&](int node, const Schedule&, size_t phase) -> Status {
    for (const StagingCopy& c : plans[node].out_after[phase]) {
      const StagedSpan& s = spans[node][c.span];
      if (s.input) return Status::Internal("an input span copied back");
      std::memcpy(s.device + c.offset, s.host + c.offset, c.bytes);
      totals.out += c.bytes;
    }
    totals.phases_out += plans[node].out_after[phase].empty() ? 0 : 1;
    return Status::Ok();
  };
  return hooks;
}

// Every rank's own receive buffer against the reference.
void CheckResults(const OpSignature& sig, int world, const RankMemory& mem, const std::string& what,
                  const std::function<std::string(int rank)>& rank_note) {
  for (int r = 0; r < world; ++r) {
    const Bytes want = Expected(sig, world, r, mem.inputs);
    const Bytes got(mem.sim[r].recv, mem.sim[r].recv + mem.sim[r].recv_bytes);
    if (want.empty() && got.empty()) continue;
    std::string msg;
    ASSERT_EQ(FirstMismatch(sig.dtype, got, want, &msg), -1) << sig.ToString() << " " << what << " rank " << r
                                                             << rank_note(r) << ": " << msg;
  }
}

std::string Describe(Algorithm algo, bool in_place) {
  return std::string("algo ") + AlgorithmName(algo) + (in_place ? " in place" : "");
}

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
  const Status st = Simulate(layout, sig, algo, run, mem.in_place_ranks, CopyingHooks(buffers, spans, plans, local));
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
  CheckResults(sig, world, mem, Describe(algo, in_place),
               [&](int r) { return std::string(staged(r) ? " (staged)" : " (host)"); });
}

// The device ends (daemon/device_ends.h) as batond runs them, without a
// GPU: the ranks' own buffers stand for GPU memory. On every node whose
// schedule splits for them, the head's steps are planned for the GPUs
// (PlanDeviceSteps, on two "GPUs") and run on the ranks' own buffers before
// anything else, the middle runs on staging copies with the plan's copies
// in and back (what the head wrote counted as input: AppendHeadOutputs),
// and the tail runs on the ranks' own buffers after the middle's last
// phase; buffers the middle never touches get no staging copy at all.
// Other nodes stage everything, as before. `split_nodes` counts the
// nodes that split.
// How the device ends run: spread over the local ranks' GPUs, each rank on
// a GPU of its own (an AllReduce's by SpreadAllReduceEnds, another
// collective's copy-out by SpreadCopyOut and fold into scratch by
// SpreadScratchFold, a Reduce root node's head by SpreadReduceHead), or as
// built (two GPUs), in which of the orders GPUs may choose
// (tests/gpu_orders.h).
struct EndsRun {
  bool spread = false;
  int order = 0;
};

void RunDeviceEndsAndCheck(const NodeLayout& layout, const OpSignature& sig, Algorithm algo, bool in_place,
                           Totals* totals = nullptr, int* split_nodes = nullptr, EndsRun how = {}) {
  const int world = layout.world_size();
  const int nodes = layout.num_nodes();
  RankMemory mem = MakeRankMemory(sig, world, in_place);
  std::vector<StagedRank> staging(world);
  std::vector<SimRank> run(world);
  std::vector<DeviceRankBuffers> device(world);
  std::vector<RankBuffers> buffers(world);
  std::vector<std::vector<StagedSpan>> spans(nodes);
  for (int r = 0; r < world; ++r) {
    const SimRank& d = mem.sim[r];
    StageRank(d, &staging[r]);
    run[r] = staging[r].host;
    buffers[r] = {run[r].send, run[r].send_bytes, run[r].recv, run[r].recv_bytes};
    const int gpu = how.spread ? r : r % 2;
    device[r] = {d.send, d.send_bytes, d.send_bytes > 0 ? gpu : -1, d.recv, d.recv_bytes, d.recv_bytes > 0 ? gpu : -1};
    auto& node = spans[layout.node_of_rank[r]];
    if (run[r].send_bytes > 0) node.push_back({run[r].send, d.send, run[r].send_bytes, gpu, true});
    if (run[r].recv_bytes > 0) node.push_back({run[r].recv, d.recv, run[r].recv_bytes, gpu, false});
  }
  std::vector<ScheduleSplit> splits(nodes);
  std::vector<std::vector<DeviceStep>> head(nodes), tail(nodes);
  std::vector<bool> split(nodes, false);
  // Ends that use the scratch space run on "GPU" scratch of their own
  // (poisoned; spread, one piece on each rank's GPU), staged to and from
  // the middle's host scratch.
  std::vector<std::vector<std::vector<uint8_t>>> device_scratch(nodes);  // [node][piece]
  std::vector<std::vector<ScratchPiece>> pieces(nodes);
  std::vector<std::vector<uint8_t>*> host_scratch(nodes, nullptr);
  auto run_on_gpus = [&](const std::vector<DeviceStep>& steps) { RunLikeGpus(steps, sig.dtype, sig.redop, how.order); };
  std::map<int, StagingPlan> plans;
  Totals local;
  PhaseHooks hooks = CopyingHooks(buffers, spans, plans, local, &host_scratch);
  hooks.rewrite = [&](int node, Schedule* schedule) -> Status {
    if (!SplitForDeviceEnds(*schedule, &splits[node])) return Status::Ok();
    split[node] = true;
    std::vector<ScratchShare> shares;
    if (how.spread) {
      const std::vector<int>& local_ranks = layout.ranks_of_node[node];
      // Only the hierarchical AllReduce's ends are spread (not, say, a
      // halving-doubling's whose head folds into scratch).
      const bool hierarchical = !UsesScratch(splits[node].head) && !UsesScratch(splits[node].tail);
      const bool spread = SpreadAllReduceEnds(sig, local_ranks, world, &splits[node], &shares);
      EXPECT_EQ(spread, sig.collective == Collective::kAllReduce && local_ranks.size() > 1 && hierarchical)
          << sig.ToString() << " node " << node << ": " << (spread ? "spread" : "not spread");
      // Then, as batond, any other copy-out of one vector to every rank,
      // and a fold of the node into scratch.
      const bool copy_out = !spread && SpreadCopyOut(local_ranks, &splits[node].tail);
      if (sig.collective == Collective::kAllGather || sig.collective == Collective::kBroadcast) {
        EXPECT_EQ(copy_out, local_ranks.size() > 2) << sig.ToString() << " node " << node;
      }
      const bool root_node = sig.collective == Collective::kReduce && layout.node_of_rank[sig.root] == node;
      const bool reduce_head = !spread && SpreadReduceHead(sig, local_ranks, &splits[node], &shares);
      if (sig.collective == Collective::kReduce) {
        EXPECT_EQ(reduce_head, root_node && local_ranks.size() > 1) << sig.ToString() << " node " << node;
      }
      const bool fold = !spread && !reduce_head && SpreadScratchFold(local_ranks, &splits[node], &shares);
      if (sig.collective == Collective::kReduceScatter || (sig.collective == Collective::kReduce && !root_node)) {
        EXPECT_EQ(fold, local_ranks.size() > 1) << sig.ToString() << " node " << node;
      }
    }
    const uint64_t scratch_bytes = std::max(splits[node].head.scratch_bytes, splits[node].tail.scratch_bytes);
    if (scratch_bytes > 0 && shares.empty()) shares.push_back({0, scratch_bytes, -1});
    // Each piece of its own (so that a step reaching past its piece fails
    // the simulation), on its rank's GPU.
    device_scratch[node].clear();
    pieces[node].clear();
    for (const ScratchShare& share : shares) {
      device_scratch[node].emplace_back(share.bytes, kPoison);
      pieces[node].push_back({share.offset, share.bytes, device_scratch[node].back().data(),
                              share.rank < 0 ? 0 : device[share.rank].send_device});
    }
    const DeviceMemory memory{&device, pieces[node]};
    BATON_RETURN_IF_ERROR(PlanDeviceSteps(splits[node].head, memory, &head[node]));
    BATON_RETURN_IF_ERROR(PlanDeviceSteps(splits[node].tail, memory, &tail[node]));
    for (const auto* steps : {&head[node], &tail[node]}) {
      EXPECT_TRUE(StepsOrderedWhereTheyTouch(*steps)) << sig.ToString() << " node " << node;
    }
    run_on_gpus(head[node]);
    // As DeviceStaging::StageLater: a buffer the middle never touches gets
    // no staging memory (null, so that a touch fails the simulation), and
    // no span; an in-place rank's one staging buffer serves both sides.
    spans[node].clear();
    for (int r : layout.ranks_of_node[node]) {
      const bool shared = staging[r].send_host.empty() && run[r].send_bytes > 0;
      const bool send_used = TouchesBuffer(splits[node].middle, BufKind::kSend, r);
      const bool recv_used = TouchesBuffer(splits[node].middle, BufKind::kRecv, r);
      if (!send_used && !(shared && recv_used)) run[r].send = nullptr;
      if (!recv_used && !(shared && send_used)) run[r].recv = nullptr;
      buffers[r] = {run[r].send, run[r].send_bytes, run[r].recv, run[r].recv_bytes};
      if (run[r].send != nullptr && run[r].send_bytes > 0) {
        spans[node].push_back({run[r].send, device[r].send, run[r].send_bytes, device[r].send_device, true});
      }
      if (run[r].recv != nullptr && run[r].recv_bytes > 0) {
        spans[node].push_back({run[r].recv, device[r].recv, run[r].recv_bytes, device[r].recv_device, false});
      }
    }
    BATON_RETURN_IF_ERROR(AppendHeadOutputs(splits[node].head, device, buffers, &spans[node]));
    *schedule = splits[node].middle;
    return Status::Ok();
  };
  hooks.scratch_ready = [&](int node, std::vector<uint8_t>* scratch) -> Status {
    if (pieces[node].empty()) return Status::Ok();  // as batond: the plan sees scratch only then
    // As batond: ends whose scratch is their own (a spread Reduce head's)
    // stage none of it.
    if (splits[node].middle.scratch_bytes == 0) return Status::Ok();
    host_scratch[node] = scratch;
    if (scratch->size() < ScratchCovered(pieces[node])) return Status::Internal("ends with more scratch than the middle");
    return AppendScratchSpans(splits[node].head, splits[node].tail, pieces[node], scratch->data(), &spans[node]);
  };
  hooks.after = [&, copy_back = hooks.after](int node, const Schedule& schedule, size_t phase) -> Status {
    BATON_RETURN_IF_ERROR(copy_back(node, schedule, phase));
    if (split[node] && phase + 1 == schedule.phases.size()) run_on_gpus(tail[node]);
    return Status::Ok();
  };
  const Status st = Simulate(layout, sig, algo, run, mem.in_place_ranks, hooks);
  ASSERT_TRUE(st.ok()) << sig.ToString() << ": " << st.ToString();
  if (totals != nullptr) *totals = local;
  if (split_nodes != nullptr) *split_nodes = static_cast<int>(std::count(split.begin(), split.end(), true));
  CheckResults(sig, world, mem, Describe(algo, in_place), [&](int r) {
    return std::string(split[layout.node_of_rank[r]] ? " (ends on the GPUs)" : " (staged whole)");
  });
}

struct LayoutCase {
  const char* name;
  std::vector<int> per_node;
};

const LayoutCase kLayouts[] = {{"2x1", {1, 1}}, {"3x1", {1, 1, 1}}, {"4x1", {1, 1, 1, 1}},
                               {"2x2", {2, 2}}, {"1_2", {1, 2}},   {"2x3", {3, 3}}};

const Collective kCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                                   Collective::kAllGather, Collective::kReduceScatter, Collective::kScatter,
                                   Collective::kGather, Collective::kAllToAll};

class StagingPlanMatrix : public ::testing::TestWithParam<std::tuple<size_t, Collective>> {};

// Every rank staged, every other rank staged (the mixed host/device
// collective), and every rank's buffers on the GPUs with the local ends run
// there, for every algorithm, in place and not.
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
          for (int order = 0; order < kGpuOrders; ++order) {
            for (bool spread : {false, true}) {
              // The collectives whose ends spread (the others' are left as built).
              if (spread && coll != Collective::kAllReduce && coll != Collective::kAllGather &&
                  coll != Collective::kBroadcast && coll != Collective::kReduceScatter && coll != Collective::kReduce) {
                continue;
              }
              RunDeviceEndsAndCheck(layout, sig, algo, in_place, nullptr, nullptr, {spread, order});
              if (HasFatalFailure()) return;
            }
          }
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

// The point of the device ends: on two nodes of two GPU ranks, an
// AllReduce's head reduces the node's ranks on the GPUs and its tail copies
// the result out there, so one buffer per node crosses to the host and one
// comes back, instead of every rank's; in place too (the send buffer is the
// receive buffer, copied once).
TEST(DeviceEnds, AnAllReduceStagesOneBufferPerNode) {
  const NodeLayout layout = NodeLayout::Blocked({2, 2});
  const uint64_t count = 1 << 16;
  const uint64_t bytes = 4 * count;
  for (bool in_place : {false, true}) {
    const OpSignature sig{Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, count};
    Totals whole, ends;
    RunStagedAndCheck(layout, sig, Algorithm::kRing, in_place, [](int) { return true; }, &whole);
    int split_nodes = 0;
    RunDeviceEndsAndCheck(layout, sig, Algorithm::kRing, in_place, &ends, &split_nodes);
    EXPECT_EQ(split_nodes, 2);
    EXPECT_EQ(whole.in, 4 * bytes) << "staged whole: every rank's input";
    EXPECT_EQ(whole.out, 4 * bytes);
    EXPECT_EQ(ends.in, 2 * bytes) << "the ends on the GPUs: the node's reduction only" << (in_place ? ", in place" : "");
    EXPECT_EQ(ends.out, 2 * bytes);
    // Still pipelined: on each node the reduced input comes in before the
    // ring's first phase (which touches all of it on two nodes), and the
    // result goes back as each of its two phases finishes a part.
    EXPECT_EQ(ends.phases_in, 2u);
    EXPECT_EQ(ends.phases_out, 4u);
  }
}

// A ReduceScatter's work vector is scratch: its head folds the node's ranks
// into GPU scratch, that one vector crosses to the host (instead of every
// rank's input), the middle reduces it across the nodes, and only the
// node's own blocks come back for the tail to copy out. On 2x2, half the
// input bytes of staging every rank, the same output bytes.
TEST(DeviceEnds, AReduceScatterStagesOneWorkVectorPerNode) {
  const NodeLayout layout = NodeLayout::Blocked({2, 2});
  const uint64_t count = 1 << 14;
  const uint64_t block = 4 * count;  // one rank's output
  for (bool in_place : {false, true}) {
    for (RedOp op : {RedOp::kSum, RedOp::kAvg}) {
      const OpSignature sig{Collective::kReduceScatter, DataType::kFloat32, op, -1, count};
      Totals whole, ends;
      RunStagedAndCheck(layout, sig, Algorithm::kRing, in_place, [](int) { return true; }, &whole);
      int split_nodes = 0;
      RunDeviceEndsAndCheck(layout, sig, Algorithm::kRing, in_place, &ends, &split_nodes);
      EXPECT_EQ(split_nodes, 2);
      EXPECT_EQ(whole.in, 4 * 4 * block) << "staged whole: every rank's input of four blocks";
      EXPECT_EQ(ends.in, 2 * 4 * block) << "the ends on the GPUs: one work vector per node"
                                        << (in_place ? ", in place" : "");
      EXPECT_EQ(ends.out, 4 * block) << "each node's own two blocks";
    }
  }
}

// With one rank per node an AllReduce's ring reads the input where it lies
// and writes the result in place: no local steps, nothing to split.
TEST(DeviceEnds, NothingToSplitWithOneRankPerNode) {
  const NodeLayout layout = NodeLayout::Blocked({1, 1});
  int split_nodes = -1;
  RunDeviceEndsAndCheck(layout, {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 1000},
                        Algorithm::kRing, false, nullptr, &split_nodes);
  EXPECT_EQ(split_nodes, 0);
}

// What the head writes in a receive buffer is input to the middle, one span
// per merged range; a range an input span (an in-place send buffer) holds
// already is not added twice; a write outside the buffer is an error.
TEST(DeviceEnds, HeadOutputsAreMergedRangesOfReceiveBuffers) {
  std::vector<uint8_t> dev(256), host(256);
  const std::vector<DeviceRankBuffers> device{{dev.data(), 64, 0, dev.data() + 64, 128, 1}};
  const std::vector<RankBuffers> buffers{{host.data(), 64, host.data() + 64, 128}};
  Schedule head;
  head.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 16}, {BufKind::kRecv, 0, 32, 16}},
                               {StepKind::kReduce, {BufKind::kSend, 0, 0, 16}, {BufKind::kRecv, 0, 40, 16}},
                               {StepKind::kCopy, {BufKind::kSend, 0, 0, 16}, {BufKind::kRecv, 0, 56, 8}},
                               {StepKind::kDivide, {}, {BufKind::kRecv, 0, 100, 8}, -1, 2},
                               {StepKind::kCopy, {BufKind::kRecv, 0, 0, 8}, {BufKind::kSend, 0, 0, 8}}}});
  std::vector<StagedSpan> spans;
  ASSERT_TRUE(AppendHeadOutputs(head, device, buffers, &spans).ok());
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].host, host.data() + 64 + 32);
  EXPECT_EQ(spans[0].device, dev.data() + 64 + 32);
  EXPECT_EQ(spans[0].bytes, 32u) << "32..48, 40..56 and 56..64 touch: one range";
  EXPECT_EQ(spans[0].device_id, 1);
  EXPECT_TRUE(spans[0].input);
  EXPECT_EQ(spans[1].host, host.data() + 64 + 100);
  EXPECT_EQ(spans[1].bytes, 8u);

  // The same receive buffer already copied in whole (in place).
  std::vector<StagedSpan> in_place{{host.data() + 64, dev.data() + 64, 128, 1, true}};
  ASSERT_TRUE(AppendHeadOutputs(head, device, buffers, &in_place).ok());
  EXPECT_EQ(in_place.size(), 1u);

  head.phases[0].steps.push_back({StepKind::kCopy, {BufKind::kSend, 0, 0, 16}, {BufKind::kRecv, 0, 120, 16}});
  spans.clear();
  const Status st = AppendHeadOutputs(head, device, buffers, &spans);
  EXPECT_EQ(st.code(), Code::kInternalError);
  EXPECT_NE(st.message().find("writes outside a receive buffer (rank 0, offset 120, bytes 16, buffer 128)"),
            std::string::npos)
      << st.ToString();
}

// Ends that use scratch: what the head writes there is input to the middle
// and what the tail reads is its output, one span per merged range, at the
// same offsets on the GPU and the host; a range outside the scratch is an
// error.
TEST(DeviceEnds, ScratchSpansAreWhatTheHeadWritesAndTheTailReads) {
  std::vector<uint8_t> dev(64), host(128);
  const std::vector<ScratchPiece> scratch{{0, 64, dev.data(), 2}};
  Schedule head, tail;
  head.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 16}, {BufKind::kScratch, -1, 0, 16}},
                               {StepKind::kReduce, {BufKind::kSend, 1, 0, 16}, {BufKind::kScratch, -1, 8, 16}}}});
  tail.phases.push_back(Phase{{{StepKind::kDivide, {}, {BufKind::kScratch, -1, 32, 8}, -1, 4},
                               {StepKind::kCopy, {BufKind::kScratch, -1, 40, 8}, {BufKind::kRecv, 0, 0, 8}},
                               {StepKind::kCopy, {BufKind::kScratch, -1, 56, 8}, {BufKind::kRecv, 1, 0, 8}}}});
  std::vector<StagedSpan> spans;
  ASSERT_TRUE(AppendScratchSpans(head, tail, scratch, host.data(), &spans).ok());
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_TRUE(spans[0].input);
  EXPECT_EQ(spans[0].host, host.data());
  EXPECT_EQ(spans[0].device, dev.data());
  EXPECT_EQ(spans[0].bytes, 24u) << "0..16 and 8..24 overlap: one range";
  EXPECT_EQ(spans[0].device_id, 2);
  EXPECT_FALSE(spans[1].input);
  EXPECT_EQ(spans[1].host, host.data() + 32);
  EXPECT_EQ(spans[1].device, dev.data() + 32);
  EXPECT_EQ(spans[1].bytes, 16u) << "the division's 32..40 and the copy's 40..48 touch: one range";
  EXPECT_FALSE(spans[2].input);
  EXPECT_EQ(spans[2].host, host.data() + 56);
  EXPECT_EQ(spans[2].bytes, 8u);

  tail.phases[0].steps.push_back({StepKind::kCopy, {BufKind::kScratch, -1, 60, 8}, {BufKind::kRecv, 0, 0, 8}});
  spans.clear();
  const Status st = AppendScratchSpans(head, tail, scratch, host.data(), &spans);
  EXPECT_EQ(st.code(), Code::kInternalError);
  EXPECT_NE(st.message().find("touches scratch outside its 64 bytes (offset 60, bytes 8)"), std::string::npos)
      << st.ToString();
}

// Scratch in pieces on several GPUs (a spread fold): a range is cut where
// pieces meet, each part a span on its own GPU's memory.
TEST(DeviceEnds, ScratchSpansAreCutWherePiecesOnTwoGpusMeet) {
  std::vector<uint8_t> gpu0(32), gpu1(32), host(64);
  const std::vector<ScratchPiece> pieces{{0, 32, gpu0.data(), 0}, {32, 32, gpu1.data(), 1}};
  Schedule head, tail;
  head.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 64}, {BufKind::kScratch, -1, 0, 64}}}});
  tail.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kScratch, -1, 40, 8}, {BufKind::kRecv, 0, 0, 8}}}});
  std::vector<StagedSpan> spans;
  ASSERT_TRUE(AppendScratchSpans(head, tail, pieces, host.data(), &spans).ok());
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_TRUE(spans[0].input && spans[1].input);
  EXPECT_EQ(spans[0].host, host.data());
  EXPECT_EQ(spans[0].device, gpu0.data());
  EXPECT_EQ(spans[0].bytes, 32u);
  EXPECT_EQ(spans[0].device_id, 0);
  EXPECT_EQ(spans[1].host, host.data() + 32);
  EXPECT_EQ(spans[1].device, gpu1.data());
  EXPECT_EQ(spans[1].bytes, 32u);
  EXPECT_EQ(spans[1].device_id, 1);
  EXPECT_FALSE(spans[2].input);
  EXPECT_EQ(spans[2].host, host.data() + 40);
  EXPECT_EQ(spans[2].device, gpu1.data() + 8);
  EXPECT_EQ(spans[2].bytes, 8u);
  EXPECT_EQ(spans[2].device_id, 1);
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
