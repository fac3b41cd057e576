// run_host on the hand-built one-unit schedule: a clean run with hand-derived peaks, and every failure it must
// report instead of hanging or crashing.
#include <gtest/gtest.h>

#include "common/error.h"
#include "exec/host/host_runner.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

bool contains(const std::vector<std::string>& list, const std::vector<std::string>& parts) {
  for (const auto& s : list) {
    bool all = true;
    for (const auto& p : parts) all = all && s.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

HostOptions small_options() {
  HostOptions o;
  o.bytes_scale = 1;  // the tiny schedule's buffers are a few hundred bytes: keep them whole
  return o;
}

TEST(RunHost, TinyScheduleRunsCleanOnFourRanks) {
  const Schedule s = testing::tiny_schedule();
  const ExecResult r = run_host(s, small_options());
  EXPECT_TRUE(r.problems.empty()) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.measurement().device, "host (4 threads as ranks)");
  ASSERT_EQ(r.run.steps.size(), 2u);
  // Persistent: param shard and grad shard, 100 B each → 512 B each (allocator rounding) = 1,024 B. The AG adds
  // 400 B → 512 B (1,536), the forward 50 B → 512 B (2,048) while the gathered params are still live; the forward
  // then frees them before the backward allocates its 512 B, so 2,048 B is the peak, first reached by op 1.
  const StepRun& steady = r.run.steps.back();
  EXPECT_EQ(steady.peak_allocated.bytes, 2048);
  EXPECT_EQ(steady.peak_reserved.bytes, 2048);
  EXPECT_EQ(steady.peak_allocated.op, OpId(1));
  EXPECT_EQ(steady.peak_allocated.breakdown[static_cast<size_t>(BufferCategory::gathered_param)], 512);
  EXPECT_EQ(steady.peak_allocated.breakdown[static_cast<size_t>(BufferCategory::activation)], 512);
  // The measured times honour every dependency and the stream order.
  for (const Op& op : s.ops) {
    const OpTiming& t = steady.ops[op.id];
    EXPECT_LE(t.start_ns, t.end_ns);
    for (const OpId d : op.deps) EXPECT_GE(t.start_ns, steady.ops[d].end_ns) << op.name;
  }
  EXPECT_GE(steady.ops[2].start_ns, steady.ops[1].end_ns);  // bwd after fwd on the compute stream
}

TEST(RunHost, MissingDependencyIsReportedWithTheOpAndBuffer) {
  Schedule s = testing::tiny_schedule();
  s.ops[1].deps.clear();  // the forward no longer waits for its all-gather
  HostOptions o = small_options();
  o.collective_delay_ns = 20'000'000;  // the all-gather writes 20 ms late, long after the forward read
  const ExecResult r = run_host(s, o);
  // Depending on whether the forward reads before or after the all-gather allocated the buffer, it reads poison
  // ("before it was written") or nothing ("while it was not allocated"); either names the op and the buffer.
  EXPECT_TRUE(contains(r.problems, {"op 1 'fwd.layer.0' read buffer 1 'params.layer.0'", "a missing dependency"}))
      << ::testing::PrintToString(r.problems);
}

TEST(RunHost, CollectiveThatCannotRendezvousTimesOutNamingTheMissingRanks) {
  const Schedule s = testing::tiny_schedule();  // dp_shard is 4 ranks
  HostOptions o = small_options();
  o.ranks = 2;
  o.timeout_ns = 200'000'000;
  const ExecResult r = run_host(s, o);
  // Ranks 0 and 1 run; the group needs 2 and 3 too, which do not exist: both sides are named.
  EXPECT_TRUE(contains(r.problems, {"op 0 'ag.layer.0' (all_gather over 'dp_shard' [0, 1, 2, 3], step 0) did not "
                                    "complete within 200.00 ms: ranks 0, 1 arrived; ranks 2, 3 never arrived"}))
      << ::testing::PrintToString(r.problems);
}

TEST(RunHost, MemoryOrderThatContradictsTheDependenciesTimesOut) {
  const Schedule s = testing::tiny_schedule();
  HostOptions o = small_options();
  // The RS's end (frees 3) before the bwd's start (allocs 3): the RS depends on the bwd, so neither can happen.
  o.memory_order = {{OpId(0), false}, {OpId(1), false}, {OpId(1), true},
                    {OpId(3), true},  {OpId(2), false}, {OpId(2), true}};
  o.timeout_ns = 100'000'000;
  const ExecResult r = run_host(s, o);
  // Whichever wait gives up first (the RS waiting for the bwd, or the bwd waiting for its turn) names the bwd. Waits
  // for another op or a memory turn give up after twice the timeout: 2 × 100 ms = 200 ms.
  EXPECT_TRUE(contains(r.problems, {"waited 200.00 ms for", "op 2 'bwd.layer.0'"}))
      << ::testing::PrintToString(r.problems);
}

TEST(RunHost, HostToDeviceCopyWithoutItsDeviceToHostCopyIsReported) {
  Schedule s = testing::tiny_schedule();
  s.streams.push_back(Stream{"offload", 0});
  s.buffers.push_back(Buffer{BufferId(5), "act.reload.layer.0", BufferCategory::activation, 50, false, false});
  Op h2d;
  h2d.id = OpId(4);
  h2d.name = "offload_h2d.layer.0";
  h2d.kind = OpKind::copy;
  h2d.unit = 0;
  h2d.micro_batch = 0;
  h2d.stream = StreamId(3);
  h2d.recv_bytes = 50;
  h2d.allocs = {BufferId(5)};
  h2d.writes = {BufferId(5)};
  h2d.frees = {BufferId(5)};
  s.ops.push_back(h2d);
  const ExecResult r = run_host(s, small_options());
  EXPECT_TRUE(contains(r.problems, {"op 4 'offload_h2d.layer.0' copied unit 0 micro-batch 0 back from host memory "
                                    "before its device-to-host copy had written it: a missing dependency"}))
      << ::testing::PrintToString(r.problems);
}

TEST(RunHost, EmulateRunsRankZeroAlone) {
  const Schedule s = testing::tiny_schedule();
  HostOptions o = small_options();
  o.emulate = true;
  const ExecResult r = run_host(s, o);
  EXPECT_TRUE(r.problems.empty()) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.measurement().device, "host (rank 0 of 4, emulated)");
  EXPECT_EQ(r.run.steps.back().peak_allocated.bytes, 2048);  // as on four ranks: memory does not depend on peers
}

TEST(RunHost, BadOptionsNameTheKeyAndTheFix) {
  const Schedule s = testing::tiny_schedule();
  HostOptions o = small_options();
  o.ranks = 65;
  try {
    run_host(s, o);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "ranks");
    EXPECT_NE(e.fix().find("set emulate to run rank 0 alone"), std::string::npos) << e.what();
  }
  o = small_options();
  o.bytes_scale = 0;
  try {
    run_host(s, o);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "bytes_scale");
    EXPECT_NE(e.fix().find("use a positive scale"), std::string::npos);
  }
  o = small_options();
  o.memory_order = {{OpId(0), true}};
  try {
    run_host(s, o);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("the memory order does not fit the schedule"), std::string::npos);
    EXPECT_FALSE(e.violations().empty());
  }
}

TEST(RunHost, CyclicScheduleIsRejected) {
  Schedule s = testing::tiny_schedule();
  s.ops[0].deps = {OpId(1)};  // AG after fwd after AG
  EXPECT_THROW(run_host(s, small_options()), ScheduleError);
}

}  // namespace
}  // namespace fsdpsim
