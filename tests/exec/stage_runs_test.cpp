// A pipeline run one GPU per stage (exec/stage_runs.h and the interpreter's stage filter): where each stage's GPU sits,
// how each GPU's run of its own stage becomes one run on one clock, and how a run travels between processes.

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "exec/interpreter.h"
#include "exec/stage_runs.h"
#include "schedule/schedule_graph.h"
#include "tests/support/shaped_schedule.h"

namespace fsdpsim {
namespace {

// Two stages, two ops each: stage 0 runs ops 0 and 1 on stream 0, stage 1 runs ops 2 and 3 on stream 1.
Schedule two_stages() {
  Schedule s;
  s.info.world_size = 4;
  s.info.pipeline_stages = 2;
  s.streams = {Stream{"stage0.compute", 0, 0}, Stream{"stage1.compute", 0, 1}};
  for (int32_t i = 0; i < 4; ++i) {
    Op op;
    op.id = OpId(i);
    op.name = "op" + std::to_string(i);
    op.stream = StreamId(i / 2);
    s.ops.push_back(op);
  }
  return s;
}

MemoryPeak peak(int64_t bytes, TimeNs time_ns, int32_t op) {
  MemoryPeak p;
  p.bytes = bytes;
  p.time_ns = time_ns;
  p.op = OpId(op);
  p.breakdown[static_cast<size_t>(BufferCategory::activation)] = bytes;
  return p;
}

// One step of a stage's GPU, from `start_ns`: its ops' times (others unset) and its peaks.
StepRun stage_step(TimeNs start_ns, TimeNs end_ns, const std::vector<std::pair<int32_t, OpTiming>>& ops,
                   int64_t allocated, int64_t reserved) {
  StepRun step;
  step.start_ns = start_ns;
  step.end_ns = end_ns;
  step.ops.resize(4);
  for (const auto& [op, t] : ops) step.ops[OpId(op)] = t;
  step.peak_allocated = peak(allocated, ops.front().second.start_ns, ops.front().first);
  step.peak_reserved = peak(reserved, ops.front().second.start_ns, ops.front().first);
  return step;
}

TEST(StageRuns, EachStagesGpusSitOneStageApartInTheWorld) {
  Schedule s;
  s.info.world_size = 32;
  s.info.pipeline_stages = 4;
  EXPECT_EQ(ranks_per_stage(s), 8);
  EXPECT_EQ(stage_of_rank(s, 0), 0);
  EXPECT_EQ(stage_of_rank(s, 17), 2);
  EXPECT_EQ(stage_of_rank(s, 31), 3);
  EXPECT_EQ(rank_in_stage(s, 17, 0), 1);
  EXPECT_EQ(rank_in_stage(s, 17, 3), 25);
  EXPECT_EQ(rank_in_stage(s, 0, 2), 16);
  Schedule flat;
  flat.info.world_size = 8;
  EXPECT_EQ(stage_of_rank(flat, 7), 0);
  EXPECT_EQ(rank_in_stage(flat, 7, 0), 7);
}

TEST(StageRuns, MergingPutsEveryStageOnOneClockAndTakesTheFullestStagesPeaks) {
  const Schedule s = two_stages();
  // Stage 0's GPU: step 0 from 0 to 100, step 1 from 100 to 250. Stage 1's GPU kept its own clock: step 0 from 0 to
  // 120, step 1 from 120 to 240 (its steps start together with stage 0's, by the aligning all-reduce).
  RunRecord first, second;
  first.steps = {stage_step(0, 100, {{0, {0, 40}}, {1, {40, 100}}}, 500, 600),
                 stage_step(100, 250, {{0, {100, 150}}, {1, {150, 250}}}, 500, 600)};
  second.steps = {stage_step(0, 120, {{2, {10, 60}}, {3, {60, 120}}}, 700, 800),
                  stage_step(120, 240, {{2, {130, 180}}, {3, {180, 240}}}, 700, 900)};
  first.origin = second.origin = Measurement{};
  const RunRecord merged = merge_stage_runs(s, {first, second});
  ASSERT_EQ(merged.steps.size(), 2u);
  // Each step lasts as long as its slowest stage: 120 (stage 1), then 150 (stage 0).
  EXPECT_EQ(merged.steps[0].start_ns, 0);
  EXPECT_EQ(merged.steps[0].end_ns, 120);
  EXPECT_EQ(merged.steps[1].start_ns, 120);
  EXPECT_EQ(merged.steps[1].end_ns, 270);
  // Ops keep their offsets from their own stage's step start.
  EXPECT_EQ(merged.steps[0].ops[OpId(1)].end_ns, 100);
  EXPECT_EQ(merged.steps[0].ops[OpId(2)].start_ns, 10);
  EXPECT_EQ(merged.steps[1].ops[OpId(0)].start_ns, 120);  // 100 - 100 + 120
  EXPECT_EQ(merged.steps[1].ops[OpId(1)].end_ns, 270);    // 250 - 100 + 120
  EXPECT_EQ(merged.steps[1].ops[OpId(2)].start_ns, 130);  // 130 - 120 + 120
  EXPECT_EQ(merged.steps[1].ops[OpId(3)].end_ns, 240);
  // Stage 1 reserved more in the last step: it is the memory stage, and the run's peaks are its.
  EXPECT_EQ(merged.memory_stage, 1);
  ASSERT_EQ(merged.steps[1].stage_peaks.size(), 2u);
  EXPECT_EQ(merged.steps[1].stage_peaks[0].allocated.bytes, 500);
  EXPECT_EQ(merged.steps[1].stage_peaks[0].allocated.time_ns, 120);  // op 0's start on the merged clock
  EXPECT_EQ(merged.steps[1].stage_peaks[1].reserved.bytes, 900);
  EXPECT_EQ(merged.steps[1].peak_allocated.bytes, 700);
  EXPECT_EQ(merged.steps[1].peak_reserved.bytes, 900);
  EXPECT_EQ(merged.steps[1].peak_reserved.op, OpId(2));
  EXPECT_TRUE(merged.measurement() != nullptr);
}

TEST(StageRuns, MergingRefusesRecordsThatDoNotFitTheSchedule) {
  const Schedule s = two_stages();
  RunRecord one;
  one.steps = {stage_step(0, 100, {{0, {0, 40}}, {1, {40, 100}}}, 1, 1)};
  EXPECT_THROW((void)merge_stage_runs(s, {one}), Error);  // one record for two stages
  RunRecord none;
  EXPECT_THROW((void)merge_stage_runs(s, {one, none}), Error);  // steps differ
}

TEST(StageRuns, AStagesStepsSurvivePackingForAnotherProcess) {
  RunRecord run;
  run.steps = {stage_step(0, 120, {{2, {10, 60}}, {3, {60, 120}}}, 700, 800),
               stage_step(120, 240, {{2, {130, 180}}, {3, {180, 240}}}, 700, 900)};
  run.steps[1].cuda_malloc_calls = 3;
  const std::vector<int64_t> packed = pack_steps(run);
  const RunRecord back = unpack_steps(packed, 4);
  ASSERT_EQ(back.steps.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(back.steps[k].start_ns, run.steps[k].start_ns);
    EXPECT_EQ(back.steps[k].end_ns, run.steps[k].end_ns);
    EXPECT_EQ(back.steps[k].cuda_malloc_calls, run.steps[k].cuda_malloc_calls);
    for (size_t i = 0; i < 4; ++i) {
      const OpId id(static_cast<int32_t>(i));
      EXPECT_EQ(back.steps[k].ops[id].start_ns, run.steps[k].ops[id].start_ns);
      EXPECT_EQ(back.steps[k].ops[id].end_ns, run.steps[k].ops[id].end_ns);
    }
    for (const auto member : {&StepRun::peak_allocated, &StepRun::peak_reserved}) {
      const MemoryPeak& a = back.steps[k].*member;
      const MemoryPeak& b = run.steps[k].*member;
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.time_ns, b.time_ns);
      EXPECT_EQ(a.op, b.op);
      EXPECT_EQ(a.breakdown, b.breakdown);
    }
  }
  // A run of another schedule (three ops) or a truncated message is an error, not a misread.
  EXPECT_THROW((void)unpack_steps(packed, 3), Error);
  EXPECT_THROW((void)unpack_steps(std::span<const int64_t>(packed).first(packed.size() - 1), 4), Error);
}

// A backend that records what the interpreter issued and measures each op as 10 ns after the previous one.
class RecordingBackend final : public Backend {
 public:
  void setup(const Schedule& schedule) override { ops_ = schedule.ops.size(); }
  void begin_step(int32_t) override { clock_ = 0; }
  void wait(StreamId, OpId) override {}
  void mark_start(const Op& op) override { started.push_back(op.id); }
  void allocate(BufferId, StreamId) override {}
  void run(const Op&) override {}
  void mark_end(const Op&) override {}
  void release(BufferId, StreamId) override {}
  StepMeasurement end_step() override {
    StepMeasurement m;
    m.start_ns.assign(ops_, -1);
    m.end_ns.assign(ops_, -1);
    for (const OpId id : started) {
      m.start_ns[id.index()] = clock_;
      clock_ += 10;
      m.end_ns[id.index()] = clock_;
    }
    m.step_ns = clock_;
    return m;
  }
  [[nodiscard]] std::vector<std::string> problems() const override { return {}; }
  std::vector<OpId> started;

 private:
  size_t ops_ = 0;
  TimeNs clock_ = 0;
};

TEST(StageRuns, TheInterpreterIssuesOnlyItsStagesOpsInTheWholeSchedulesOrder) {
  const Schedule s = build_shaped_schedule({"pp=2"});
  ASSERT_EQ(s.info.pipeline_stages, 2);
  std::vector<OpId> expected = issue_order(s);
  std::erase_if(expected, [&](OpId id) { return s.stage_of(s.ops[id]) != 1; });
  ASSERT_FALSE(expected.empty());
  RecordingBackend backend;
  const RunRecord run = interpret(s, backend, ExecOptions{.steps = 1, .stage = 1});
  EXPECT_EQ(backend.started, expected);
  ASSERT_EQ(run.steps.size(), 1u);
  for (const Op& op : s.ops) {
    const OpTiming t = run.steps[0].ops[op.id];
    if (s.stage_of(op) == 1) {
      EXPECT_GE(t.start_ns, 0) << op.name;
    } else {
      EXPECT_EQ(t.start_ns, -1) << op.name << " belongs to stage 0 and keeps no time";
    }
  }
}

// The device reports its reserved peak without a time, and an allocated peak may have no op: each is placed at its
// step's start, so that every step's peaks lie within that step (merging shifts them with their step's ops).
TEST(StageRuns, PeaksWithoutAnOpLieWithinTheirStep) {
  const Schedule s = build_shaped_schedule({"pp=2"});
  RecordingBackend backend;
  const RunRecord run = interpret(s, backend, ExecOptions{.steps = 2, .stage = 0});
  ASSERT_EQ(run.steps.size(), 2u);
  ASSERT_GT(run.steps[1].start_ns, 0);
  for (const StepRun& step : run.steps) {
    for (const MemoryPeak& peak : {step.peak_allocated, step.peak_reserved}) {
      EXPECT_GE(peak.time_ns, step.start_ns);
      EXPECT_LE(peak.time_ns, step.end_ns);
    }
  }
}

}  // namespace
}  // namespace fsdpsim
