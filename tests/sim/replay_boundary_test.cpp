// The replay of repeated micro-batches on its own (sim/replay_boundary.h): when one boundary's state is another's
// moved by one micro-batch, and how many dependencies an op still waits for once the stream heads have moved.
#include "sim/replay_boundary.h"

#include <gtest/gtest.h>

#include "sim/flat_ops.h"
#include "sim/micro_batch_translation.h"
#include "tests/sim/hand_costs.h"

namespace fsdpsim {
namespace {

// One compute stream and four micro-batches of one 10 ns kernel each (ops 0-3, op m in micro-batch m): each
// micro-batch repeats the one before one op id later.
Schedule four_micro_batches() {
  Schedule s;
  s.info.world_size = 1;
  s.info.micro_batches = 4;
  s.streams = {Stream{"compute", 0}};
  for (int32_t id = 0; id < 4; ++id) {
    Op op;
    op.id = OpId(id);
    op.name = "fwd.mb" + std::to_string(id);
    op.micro_batch = id;
    op.stream = StreamId(0);
    s.ops.push_back(op);
  }
  return s;
}

// At 100 ns the stream runs micro-batch 1's kernel (op 1), started at 90 with 5 ns of work left at full speed; its
// end is the pending event at 105.
Boundary at_micro_batch_1() {
  Boundary b;
  b.micro_batch = 1;
  b.time_ns = 100;
  StreamState st;
  st.act = Activity{.op = OpId(1), .active = true, .remaining = 5, .rate = 1, .since = 90, .version = 7};
  st.head = OpId(1);
  st.slot = EventQueue::SlotView{.live = true, .time_ns = 105, .version = 7, .sequence = 3};
  b.streams = {st};
  b.rates.compute_speed = {1.0};
  b.memories.resize(1);
  return b;
}

// The same state one micro-batch (op id + 1) and 100 ns later.
Boundary moved(const Boundary& b) {
  Boundary m = b;
  m.micro_batch = b.micro_batch + 1;
  m.time_ns = b.time_ns + 100;
  StreamState& st = m.streams[0];
  st.act.op = OpId(st.act.op.value() + 1);
  st.act.since += 100;
  st.act.version += 4;  // versions differ from window to window; only whether the event is current counts
  st.head = OpId(st.head.value() + 1);
  st.slot.time_ns += 100;
  st.slot.version += 4;
  st.slot.sequence += 9;
  return m;
}

class BoundaryStates : public ::testing::Test {
 protected:
  Schedule schedule = four_micro_batches();
  OpCostTable costs{std::vector<OpCost>(4, testing::compute_cost(10))};
  FlatOps flat = flatten_ops(schedule, costs);
  MicroBatchTranslation translation{schedule, flat, costs};
};

TEST_F(BoundaryStates, RepeatWhenEverythingMovedByOneMicroBatch) {
  ASSERT_EQ(translation.op_offset(), 1);
  const Boundary prev = at_micro_batch_1();
  EXPECT_TRUE(boundary_states_repeat(prev, moved(prev), translation));
}

TEST_F(BoundaryStates, DoNotRepeatWhenAnythingThatDecidesTheFutureDiffers) {
  const Boundary prev = at_micro_batch_1();
  Boundary cur = moved(prev);
  cur.streams[0].act.remaining = 4;  // ends 1 ns sooner than op 1 did
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
  cur = moved(prev);
  cur.streams[0].act.since += 1;  // started 1 ns later relative to its boundary
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
  cur = moved(prev);
  cur.streams[0].slot.time_ns += 1;  // its end is pending 1 ns later
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
  cur = moved(prev);
  cur.streams[0].act.op = OpId(3);  // two micro-batches on, not one
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
  cur = moved(prev);
  cur.rates.compute_speed = {0.8};  // communication now holds SMs
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
  cur = moved(prev);
  cur.memories[0].stats.allocated_bytes = 512;  // the allocator holds more
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
}

TEST_F(BoundaryStates, AStreamHeadedByTheSameOpStaysPutOnlyWhileItWaits) {
  // Idle at both ends, headed by op 3, which waits on an unfinished dependency: it stays put, and the state repeats.
  Boundary prev = at_micro_batch_1();
  prev.streams[0] = StreamState{};
  prev.streams[0].head = OpId(3);
  prev.streams[0].pending = 1;
  Boundary cur = prev;
  cur.micro_batch = 2;
  cur.time_ns = 200;
  EXPECT_TRUE(boundary_states_repeat(prev, cur, translation));
  // Ready at both ends yet not started: the window did not run as the next would.
  prev.streams[0].pending = cur.streams[0].pending = 0;
  EXPECT_FALSE(boundary_states_repeat(prev, cur, translation));
}

TEST(UnfinishedDeps, AnOpIsFinishedOnceItsStreamsHeadHasPassedIt) {
  // Stream A runs ops 0 and 1; stream B runs op 2, which depends on both.
  Schedule s;
  s.info.world_size = 1;
  s.streams = {Stream{"A", 0}, Stream{"B", 0}};
  for (int32_t id = 0; id < 3; ++id) {
    Op op;
    op.id = OpId(id);
    op.name = "op" + std::to_string(id);
    op.stream = StreamId(id < 2 ? 0 : 1);
    s.ops.push_back(op);
  }
  s.ops[2].deps = {OpId(0), OpId(1)};
  const OpCostTable costs{std::vector<OpCost>(3, testing::compute_cost(10))};
  const FlatOps flat = flatten_ops(s, costs);
  // A's head at position 0: neither has finished (2); at 1: op 0 has (1 left); at 2: both have (0).
  EXPECT_EQ(unfinished_deps(flat, OpId(2), {0, 0}), 2);
  EXPECT_EQ(unfinished_deps(flat, OpId(2), {1, 0}), 1);
  EXPECT_EQ(unfinished_deps(flat, OpId(2), {2, 0}), 0);
  EXPECT_EQ(unfinished_deps(flat, OpId(0), {0, 0}), 0);  // op 0 waits on nothing
}

}  // namespace
}  // namespace fsdpsim
