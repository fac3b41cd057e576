// predicted_memory_order replays the simulator's processing order; memory_order_problems says what makes an order
// unusable.
#include <gtest/gtest.h>

#include "common/error.h"
#include "exec/host/host_runner.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

StepRun step_of(const std::vector<OpTiming>& timings) {
  StepRun step;
  step.ops = timings;
  for (const OpTiming& t : timings) step.end_ns = std::max(step.end_ns, t.end_ns);
  return step;
}

TEST(PredictedMemoryOrder, TinyScheduleFollowsTheChain) {
  // AG [0, 10], fwd [10, 20], bwd [20, 30], RS [30, 40]. The RS allocates nothing, so only its end (frees 3) is
  // an event; the AG frees nothing, so only its start (allocs 1) is.
  const Schedule s = testing::tiny_schedule();
  const auto order = predicted_memory_order(s, step_of({{0, 10}, {10, 20}, {20, 30}, {30, 40}}));
  const std::vector<MemoryEvent> expected{{OpId(0), false}, {OpId(1), false}, {OpId(1), true},
                                          {OpId(2), false}, {OpId(2), true},  {OpId(3), true}};
  EXPECT_EQ(order, expected);
}

// Streams A (0) and B (1). op0 on A and op1 on B each allocate and free a buffer and run [0, 10]; op2 on A is
// instant at 10 and depends on op1; op3 on B runs [10, 20]. Every op allocates one buffer and frees it.
Schedule two_stream_schedule() {
  Schedule s;
  s.info.world_size = 1;
  s.streams = {Stream{"A", 0}, Stream{"B", 0}};
  for (int32_t b = 0; b < 4; ++b) {
    s.buffers.push_back(Buffer{BufferId(b), "buf" + std::to_string(b), BufferCategory::workspace, 1024, false, false});
  }
  for (int32_t id = 0; id < 4; ++id) {
    Op op;
    op.id = OpId(id);
    op.name = "op" + std::to_string(id);
    op.stream = StreamId(id == 0 || id == 2 ? 0 : 1);
    op.allocs = {BufferId(id)};
    op.frees = {BufferId(id)};
    s.ops.push_back(op);
  }
  s.ops[2].deps = {OpId(1)};
  return s;
}

TEST(PredictedMemoryOrder, ReplaysTheEnginesStackAndQueueOrder) {
  const Schedule s = two_stream_schedule();
  const auto order = predicted_memory_order(s, step_of({{0, 10}, {0, 10}, {10, 10}, {10, 20}}));
  // t = 0: the engine looks at the streams from the top of its stack, B before A: op1 starts, then op0; both end
  //   at 10, in the order they were queued (op1 first).
  // t = 10: op1's end frees its buffer and unblocks op2 (A) and op3 (B's next op): the stack is then [B, A] with
  //   A on top, but A is still busy with op0, so B's op3 starts. Then op0's end frees, A's op2 starts and, being
  //   instant, ends at once. op3 ends at 20.
  // A sort by time with ends first and ties by id would instead give 0s 1s | 0e 1e 2s 3s 2e | 3e.
  const std::vector<MemoryEvent> expected{{OpId(1), false}, {OpId(0), false}, {OpId(1), true}, {OpId(3), false},
                                          {OpId(0), true},  {OpId(2), false}, {OpId(2), true}, {OpId(3), true}};
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(memory_order_problems(s, order).empty());
}

TEST(PredictedMemoryOrder, TimingsOfAnotherScheduleAreRejected) {
  const Schedule s = testing::tiny_schedule();
  try {
    predicted_memory_order(s, step_of({{0, 10}, {10, 20}, {20, 30}}));
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("the step has timings for 3 ops but the schedule has 4 (simulate this "
                                         "schedule and pass one of its steps)"),
              std::string::npos)
        << e.what();
  }
  // The forward cannot start at 5 when its all-gather ends at 10.
  EXPECT_THROW(predicted_memory_order(s, step_of({{0, 10}, {5, 20}, {20, 30}, {30, 40}})), ScheduleError);
}

TEST(MemoryOrderProblems, NamesEveryUnusableEvent) {
  const Schedule s = testing::tiny_schedule();
  // The AG frees nothing (its end is no event), the fwd's start is listed twice, op 9 does not exist, and the
  // events of the bwd and the RS are missing.
  const std::vector<MemoryEvent> order{{OpId(0), false}, {OpId(0), true}, {OpId(1), false},
                                       {OpId(1), false}, {OpId(1), true}, {OpId(9), false}};
  const std::vector<std::string> p = memory_order_problems(s, order);
  ASSERT_EQ(p.size(), 6u) << ::testing::PrintToString(p);
  EXPECT_EQ(p[0], "memory_order[1] is the end of op 0 'ag.layer.0', which frees nothing");
  EXPECT_EQ(p[1], "memory_order[3] lists the start of op 1 'fwd.layer.0' a second time");
  EXPECT_EQ(p[2], "memory_order[5] names op 9, which the schedule does not have (ids 0-3)");
  EXPECT_EQ(p[3], "the memory order lacks the start of op 2 'bwd.layer.0' (use predicted_memory_order)");
  EXPECT_EQ(p[4], "the memory order lacks the end of op 2 'bwd.layer.0' (use predicted_memory_order)");
  EXPECT_EQ(p[5], "the memory order lacks the end of op 3 'rs.layer.0' (use predicted_memory_order)");
}

}  // namespace
}  // namespace fsdpsim
