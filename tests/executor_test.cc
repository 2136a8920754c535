// ExecuteSchedule's phase observer (daemon/executor.h), which the staging
// pipeline hangs its copies on: told before and after every phase, in
// order, and able to stop the collective with its error; and its fixed
// scratch space (the device ends' pinned one).
#include "daemon/executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton::test {
namespace {

class Recorder : public PhaseObserver {
 public:
  explicit Recorder(int fail_before = -1) : fail_before_(fail_before) {}
  Status BeforePhase(size_t phase) override {
    calls.push_back("before " + std::to_string(phase));
    if (static_cast<int>(phase) == fail_before_) return Status::Unavailable("copy " + std::to_string(phase) + " failed");
    return Status::Ok();
  }
  Status AfterPhase(size_t phase) override {
    calls.push_back("after " + std::to_string(phase));
    return Status::Ok();
  }
  std::vector<std::string> calls;

 private:
  int fail_before_;
};

// Phase 0 copies the rank's input into its output; phase 1 doubles it.
Schedule TwoPhases() {
  Schedule s;
  s.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 16}, {BufKind::kRecv, 0, 0, 16}}}});
  s.phases.push_back(Phase{{{StepKind::kReduce, {BufKind::kSend, 0, 0, 16}, {BufKind::kRecv, 0, 0, 16}}}});
  return s;
}

TEST(Executor, TellsItsObserverAroundEveryPhaseInOrder) {
  std::vector<float> in{1, 2, 3, 4}, out(4, 0);
  const std::vector<RankBuffers> buffers{{reinterpret_cast<uint8_t*>(in.data()), 16,
                                          reinterpret_cast<uint8_t*>(out.data()), 16}};
  std::vector<uint8_t> scratch;
  Recorder rec;
  ExecutionContext ctx{&buffers, &scratch, nullptr, {}, std::chrono::steady_clock::now() + std::chrono::seconds(5),
                       nullptr, &rec, ScratchView{}};
  ctx.stamp.sig = {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 4};
  ASSERT_TRUE(ExecuteSchedule(TwoPhases(), ctx).ok());
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"before 0", "after 0", "before 1", "after 1"}));
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8}));
}

TEST(Executor, AnObserversErrorStopsTheCollective) {
  std::vector<float> in{1, 2, 3, 4}, out(4, 0);
  const std::vector<RankBuffers> buffers{{reinterpret_cast<uint8_t*>(in.data()), 16,
                                          reinterpret_cast<uint8_t*>(out.data()), 16}};
  std::vector<uint8_t> scratch;
  Recorder rec(/*fail_before=*/1);
  ExecutionContext ctx{&buffers, &scratch, nullptr, {}, std::chrono::steady_clock::now() + std::chrono::seconds(5),
                       nullptr, &rec, ScratchView{}};
  ctx.stamp.sig = {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 4};
  const Status st = ExecuteSchedule(TwoPhases(), ctx);
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), "copy 1 failed");
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"before 0", "after 0", "before 1"}));
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4})) << "phase 1 ran after its observer failed";
}

// A fixed scratch space is used instead of the grown one, which stays
// untouched; one smaller than the schedule asks for is an error, not an
// overrun.
TEST(Executor, AFixedScratchSpaceStandsInForTheGrownOne) {
  std::vector<float> in{1, 2, 3, 4}, out(4, 0);
  const std::vector<RankBuffers> buffers{{reinterpret_cast<uint8_t*>(in.data()), 16,
                                          reinterpret_cast<uint8_t*>(out.data()), 16}};
  Schedule s;
  s.scratch_bytes = 32;
  s.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kSend, 0, 0, 16}, {BufKind::kScratch, -1, 16, 16}}}});
  s.phases.push_back(Phase{{{StepKind::kCopy, {BufKind::kScratch, -1, 16, 16}, {BufKind::kRecv, 0, 0, 16}},
                            {StepKind::kReduce, {BufKind::kScratch, -1, 16, 16}, {BufKind::kRecv, 0, 0, 16}}}});
  std::vector<uint8_t> grown;
  std::vector<float> fixed(8, -1);
  ExecutionContext ctx{&buffers, &grown, nullptr, {}, std::chrono::steady_clock::now() + std::chrono::seconds(5),
                       nullptr, nullptr, ScratchView{reinterpret_cast<uint8_t*>(fixed.data()), 32}};
  ctx.stamp.sig = {Collective::kAllReduce, DataType::kFloat32, RedOp::kSum, -1, 4};
  ASSERT_TRUE(ExecuteSchedule(s, ctx).ok());
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(fixed, (std::vector<float>{-1, -1, -1, -1, 1, 2, 3, 4}));
  EXPECT_TRUE(grown.empty());

  ctx.fixed_scratch.size = 16;
  const Status st = ExecuteSchedule(s, ctx);
  EXPECT_EQ(st.code(), Code::kInternalError);
  EXPECT_EQ(st.message(), "a schedule needing 32 bytes of scratch given 16");
}

}  // namespace
}  // namespace baton::test
