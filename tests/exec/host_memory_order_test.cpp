// predicted_memory_order gives the order the engine recorded (Prediction::memory_order) as it ran the step;
// memory_order_problems says what makes an order unusable.
#include <gtest/gtest.h>

#include "common/error.h"
#include "exec/host/host_runner.h"
#include "sim/engine.h"
#include "tests/schedule/tiny_schedule.h"
#include "tests/sim/hand_costs.h"

namespace fsdpsim {
namespace {

using testing::compute_cost;

// No host pacing, no cudaMalloc delay, no side-stream slowdown: each op takes exactly the cost it is given.
Topology plain_topology() {
  Topology t = topology_preset("dgx-h100-ndr");
  t.gpu.cuda_malloc_ns = 0;
  t.gpu.host = {};
  t.gpu.side_stream_memory_speed = 1.0;
  return t;
}

// Runs `s` for two steps with each op's cost given (an instant op: a default OpCost), recording the memory order.
RunRecord run_recorded(const Schedule& s, std::vector<OpCost> costs, bool record = true) {
  SimOptions o;
  o.record_memory_order = record;
  const Topology t = plain_topology();
  return run_schedule_with_costs(s, t, o, std::move(costs), link_capacities(t));
}

TEST(PredictedMemoryOrder, TinyScheduleFollowsTheChain) {
  // AG [0, 10], fwd [10, 20], bwd [20, 30], RS [30, 40]. The RS allocates nothing, so only its end (frees 3) is
  // an event; the AG frees nothing, so only its start (allocs 1) is.
  const Schedule s = testing::tiny_schedule();
  const RunRecord r = run_recorded(s, {compute_cost(10), compute_cost(10), compute_cost(10), compute_cost(10)});
  const auto order = predicted_memory_order(s, r);
  const std::vector<MemoryEvent> expected{{OpId(0), false}, {OpId(1), false}, {OpId(1), true},
                                          {OpId(2), false}, {OpId(2), true},  {OpId(3), true}};
  EXPECT_EQ(order, expected);
  // The last step's events only: the first step's are not repeated before them.
  EXPECT_EQ(r.prediction()->memory_order, expected);
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

TEST(PredictedMemoryOrder, IsTheEnginesStackAndQueueOrder) {
  const Schedule s = two_stream_schedule();
  // op0 runs [0, 11] here, so that op1 ends first.
  const RunRecord r = run_recorded(s, {compute_cost(11), compute_cost(10), OpCost{}, compute_cost(10)});
  const StepRun& step = r.steps.back();
  ASSERT_EQ(step.ops[OpId(2)].start_ns, step.ops[OpId(2)].end_ns);  // op2 is instant
  ASSERT_EQ(step.ops[OpId(3)].end_ns - step.start_ns, 20);
  const auto order = predicted_memory_order(s, r);
  // t = 0: the engine looks at the streams from the top of its stack, B before A: op1 starts, then op0.
  // t = 10: op1's end frees its buffer and unblocks op2 (A) and op3 (B's next op): the stack is then [B, A] with
  //   A on top, but A is still busy with op0, so B's op3 starts.
  // t = 11: op0's end frees, A's op2 starts and, being instant, ends at once. op3 ends at 20.
  // A sort by time with ends first and ties by id would instead give 0s 1s | 1e 3s | 0e 2s 2e | 3e.
  const std::vector<MemoryEvent> expected{{OpId(1), false}, {OpId(0), false}, {OpId(1), true}, {OpId(3), false},
                                          {OpId(0), true},  {OpId(2), false}, {OpId(2), true}, {OpId(3), true}};
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(memory_order_problems(s, order).empty());
}

TEST(PredictedMemoryOrder, EndsAtTheSameInstantComeInTheOrderTheirRatesWereSet) {
  const Schedule s = two_stream_schedule();
  // op0 and op1 both run [0, 10].
  const RunRecord r = run_recorded(s, {compute_cost(10), compute_cost(10), OpCost{}, compute_cost(10)});
  const auto order = predicted_memory_order(s, r);
  // t = 0: op1 starts, then op0 (stack order, as above); then the step's first re-rating gives the running streams
  //   their rates in stream order, A before B, which queues op0's end before op1's (a copy of the engine's loop
  //   that queued ends in start order had op1's first here).
  // t = 10: op0's end frees; op2 still waits on op1. op1's end frees and unblocks op2 (A) and op3 (B): A is on top
  //   of the stack, so op2 starts and, being instant, ends at once; then op3 starts. op3 ends at 20.
  const std::vector<MemoryEvent> expected{{OpId(1), false}, {OpId(0), false}, {OpId(0), true},  {OpId(1), true},
                                          {OpId(2), false}, {OpId(2), true},  {OpId(3), false}, {OpId(3), true}};
  EXPECT_EQ(order, expected);
}

TEST(PredictedMemoryOrder, ARunThatDidNotRecordItIsRefused) {
  const Schedule s = testing::tiny_schedule();
  const RunRecord r = run_recorded(s, {compute_cost(10), compute_cost(10), compute_cost(10), compute_cost(10)}, false);
  EXPECT_TRUE(r.prediction()->memory_order.empty());
  try {
    predicted_memory_order(s, r);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("SimOptions::record_memory_order"), std::string::npos) << e.what();
  }
  RunRecord measured;
  measured.origin = Measurement{};
  EXPECT_THROW(predicted_memory_order(s, measured), ScheduleError);
}

TEST(PredictedMemoryOrder, TheOrderOfAnotherScheduleIsRefused) {
  // The two-stream schedule's order names ops 0-3 with events the tiny schedule's ops do not have (the AG frees
  // nothing), and lacks the tiny schedule's own.
  const Schedule other = two_stream_schedule();
  const RunRecord r = run_recorded(other, {compute_cost(10), compute_cost(10), OpCost{}, compute_cost(10)});
  try {
    predicted_memory_order(testing::tiny_schedule(), r);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("the prediction's memory order is not this schedule's"), std::string::npos)
        << e.what();
  }
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
