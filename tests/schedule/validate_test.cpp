// One negative test per validate() rule: each breaks the tiny valid schedule in one way and checks that the
// report names the rule and the op or buffer.
#include "schedule/validate.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "schedule/schedule_graph.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

using testing::tiny_schedule;

// The single problem validate() reports, or "" when it reports none or several.
std::string only_problem(const Schedule& s) {
  const auto problems = validate(s);
  if (problems.size() != 1) {
    std::string all;
    for (const auto& p : problems) all += p + "\n";
    return problems.empty() ? "" : "several:\n" + all;
  }
  return problems.front();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Validate, TinyScheduleIsValid) {
  EXPECT_TRUE(validate(tiny_schedule()).empty());
}

TEST(Validate, OpIdsMustBeDense) {
  Schedule s = tiny_schedule();
  s.ops[2].id = OpId(7);
  const std::string p = only_problem(s);
  EXPECT_TRUE(contains(p, "dense-ids: op at position 2 has id 7")) << p;
}

TEST(Validate, BufferIdsMustBeDense) {
  Schedule s = tiny_schedule();
  s.buffers[4].id = BufferId(9);
  EXPECT_TRUE(contains(only_problem(s), "dense-ids: buffer at position 4 has id 9"));
}

TEST(Validate, UnknownBufferReference) {
  Schedule s = tiny_schedule();
  s.ops[1].reads.push_back(BufferId(42));
  EXPECT_TRUE(contains(only_problem(s), "references: op 1 'fwd.layer.0' reads names buffer 42"));
}

TEST(Validate, UnknownDependency) {
  Schedule s = tiny_schedule();
  s.ops[1].deps = {OpId(0), OpId(99)};
  EXPECT_TRUE(contains(only_problem(s), "deps names op 99, which does not exist"));
}

TEST(Validate, SelfDependency) {
  Schedule s = tiny_schedule();
  s.ops[2].deps = {OpId(2)};
  EXPECT_TRUE(contains(only_problem(s), "op 2 'bwd.layer.0' depends on itself"));
}

TEST(Validate, CollectiveNeedsGroup) {
  Schedule s = tiny_schedule();
  s.ops[0].group = {};
  EXPECT_TRUE(contains(only_problem(s), "op 0 'ag.layer.0' is a collective without a valid group"));
}

TEST(Validate, ComputeHasNoGroup) {
  Schedule s = tiny_schedule();
  s.ops[1].group = GroupId(0);
  EXPECT_TRUE(contains(only_problem(s), "op 1 'fwd.layer.0' is not a collective but names a group"));
}

TEST(Validate, UnknownStreamAndUnit) {
  Schedule s = tiny_schedule();
  s.ops[1].stream = StreamId(5);
  s.ops[2].unit = 3;
  const auto problems = validate(s);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(contains(problems[0], "op 1 'fwd.layer.0' is on no known stream"));
  EXPECT_TRUE(contains(problems[1], "op 2 'bwd.layer.0' names unit 3"));
}

TEST(Validate, NegativeSizes) {
  Schedule s = tiny_schedule();
  s.buffers[2].size_bytes = -1;
  s.ops[1].bytes_touched = -5;
  const auto problems = validate(s);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(contains(problems[0], "sizes: buffer 2 has a negative size"));
  EXPECT_TRUE(contains(problems[1], "sizes: op 1 'fwd.layer.0' has a negative byte count"));
}

TEST(Validate, KernelClassBytesArePartOfTheOpsBytes) {
  Schedule s = tiny_schedule();
  s.ops[1].bytes_touched = 100;
  s.ops[1].class_bytes = {.unvectorized = 60, .reduction = 40};  // all 100 classified: fine
  EXPECT_TRUE(validate(s).empty());
  s.ops[1].class_bytes.reduction = 41;
  const auto problems = validate(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(contains(problems[0],
                       "sizes: op 1 'fwd.layer.0' has unvectorized_bytes + reduction_bytes (60 + 41) "
                       "outside 0..100"));
}

TEST(Validate, CollectiveBytesMustMatchGroupSize) {
  // An all-gather over 4 ranks that sends 100 B must receive 4 × 100 = 400 B.
  Schedule s = tiny_schedule();
  s.ops[0].recv_bytes = 300;
  EXPECT_TRUE(contains(only_problem(s),
                       "collective-bytes: op 0 'ag.layer.0': all_gather over a group of 4 sends 100 B "
                       "and receives 300 B"));
}

TEST(Validate, CycleIsReportedWithItsPath) {
  // The forward waits on the all-gather; making the all-gather wait on the backward closes a loop through the
  // compute stream (forward → backward in stream order).
  Schedule s = tiny_schedule();
  s.ops[0].deps = {OpId(2)};
  const std::string p = only_problem(s);
  EXPECT_TRUE(contains(p, "acyclic: dependency cycle")) << p;
  EXPECT_TRUE(contains(p, "op 0 'ag.layer.0'")) << p;
  EXPECT_TRUE(contains(p, "op 2 'bwd.layer.0'")) << p;
  EXPECT_TRUE(issue_order(s).empty());
}

TEST(Validate, PersistentBufferIsNotFreed) {
  Schedule s = tiny_schedule();
  s.ops[3].frees.push_back(BufferId(4));
  EXPECT_TRUE(contains(only_problem(s), "buffer 4 'grad_shard' is persistent but an op allocates or frees it"));
}

TEST(Validate, TransientBufferAllocatedOnceFreedOnce) {
  Schedule s = tiny_schedule();
  s.ops[3].frees.clear();  // the unsharded grads are never released: memory would grow every step
  EXPECT_TRUE(contains(only_problem(s), "buffer 3 'grads.layer.0' is allocated 1 times and freed 0 times"));
}

TEST(Validate, FreeMustFollowAllocation) {
  // The gathered buffer is freed by the all-gather itself while the forward still reads it.
  Schedule s = tiny_schedule();
  s.ops[1].frees.clear();
  s.ops[0].frees = {BufferId(1)};
  const std::string p = only_problem(s);
  EXPECT_TRUE(contains(p, "use-after-free: op 1 'fwd.layer.0' uses buffer 1 'params.layer.0' outside its lifetime"))
      << p;
}

TEST(Validate, FreedBeforeAllocated) {
  // The backward frees the activations the forward allocates, but the forward now runs after it on another stream.
  Schedule s = tiny_schedule();
  s.streams.push_back(Stream{"late", 0});
  s.ops[1].stream = StreamId(3);
  s.ops[1].deps = {OpId(0)};
  const auto problems = validate(s);
  bool found = false;
  for (const auto& p : problems)
    found =
        found ||
        contains(p, "buffer 2 'act.layer.0' may be freed by op 2 'bwd.layer.0' before op 1 'fwd.layer.0' allocates it");
  EXPECT_TRUE(found);
}

TEST(Validate, ReadNeedsAPriorWrite) {
  // Without its dependency on the all-gather the forward may read the gathered weights before they arrive.
  Schedule s = tiny_schedule();
  s.ops[1].deps.clear();
  const auto problems = validate(s);
  bool found = false;
  for (const auto& p : problems) {
    found = found || contains(p, "read-before-write: op 1 'fwd.layer.0' reads buffer 1 'params.layer.0'");
  }
  EXPECT_TRUE(found);
}

TEST(Validate, ReduceScatterFollowsBackward) {
  // The reduce-scatter of unit 0 must wait for unit 0's backward; here it waits for nothing.
  Schedule s = tiny_schedule();
  s.ops[3].deps.clear();
  const auto problems = validate(s);
  bool found = false;
  for (const auto& p : problems) {
    found = found || contains(p,
                              "reduce-after-backward: op 3 'rs.layer.0' reduces unit 0's gradients but may start "
                              "before op 2 'bwd.layer.0' finishes");
  }
  EXPECT_TRUE(found);
}

TEST(Validate, ThrowsScheduleErrorListingEveryProblem) {
  Schedule s = tiny_schedule();
  s.ops[1].reads.push_back(BufferId(42));
  s.ops[2].deps = {OpId(2)};
  try {
    validate_or_throw(s, "x.yaml");
    FAIL() << "expected a ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_EQ(e.violations().size(), 2u);
    EXPECT_TRUE(contains(e.what(), "x.yaml breaks the schedule IR's invariants: 2 problems"));
  }
}

TEST(ScheduleGraph, IssueOrderRespectsDepsAndStreams) {
  Schedule s = tiny_schedule();
  // ag(0) → fwd(1) → bwd(2) → rs(3): the only order.
  EXPECT_EQ(issue_order(s), (std::vector<OpId>{OpId(0), OpId(1), OpId(2), OpId(3)}));
  const HappensBefore hb(s);
  EXPECT_TRUE(hb.before(OpId(0), OpId(3)));  // through fwd and bwd
  EXPECT_FALSE(hb.before(OpId(3), OpId(0)));
  EXPECT_FALSE(hb.before(OpId(1), OpId(1)));
}

}  // namespace
}  // namespace fsdpsim
