// The V-shaped zero-bubble schedules (torch.distributed.pipelining's ScheduleZBVZeroBubble and ScheduleDualPipeV,
// torch/distributed/pipelining/schedules.py at pytorch 00722e648b): each rank's order derived by hand from their
// _calculate_single_rank_operations for pp 2 and 4 micro-batches, the V's placement of the stages, and the
// invariants every order keeps.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "builders/pipeline_order.h"
#include "common/error.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

using Kind = PipelineAction::Kind;

// "F0.1 I0.1 W0.1 B2.0 …": kind, micro-batch, chunk.
std::string describe(const PipelineOrder& order) {
  std::ostringstream out;
  for (size_t i = 0; i < order.size(); ++i) {
    const PipelineAction& a = order[i];
    const char kind = a.kind == Kind::forward          ? 'F'
                      : a.kind == Kind::backward       ? 'B'
                      : a.kind == Kind::backward_input ? 'I'
                                                       : 'W';
    out << (i > 0 ? " " : "") << kind << a.micro_batch << '.' << a.chunk;
  }
  return out.str();
}

// Each (micro-batch, chunk) runs one forward, then either one whole backward or its input half and later its weight
// half; "" when so.
std::string order_problem(const PipelineOrder& order, int32_t micro_batches) {
  std::map<std::pair<int32_t, int32_t>, std::string> seen;  // (mb, chunk) → kinds run so far, in order
  for (const PipelineAction& a : order) {
    if (a.micro_batch < 0 || a.micro_batch >= micro_batches || a.chunk < 0 || a.chunk > 1) return "out of range";
    std::string& done = seen[{a.micro_batch, a.chunk}];
    const char kind = a.kind == Kind::forward          ? 'F'
                      : a.kind == Kind::backward       ? 'B'
                      : a.kind == Kind::backward_input ? 'I'
                                                       : 'W';
    done += kind;
    const bool ok = done == "F" || done == "FB" || done == "FI" || done == "FIW";
    if (!ok) return "mb " + std::to_string(a.micro_batch) + " chunk " + std::to_string(a.chunk) + " ran " + done;
  }
  if (seen.size() != static_cast<size_t>(2 * micro_batches)) return "not every (micro-batch, chunk) ran";
  for (const auto& [key, done] : seen) {
    if (done != "FB" && done != "FIW") return "mb " + std::to_string(key.first) + " ends with " + done;
  }
  return "";
}

TEST(ZeroBubbleOrder, ZbvOrdersDerivedByHand) {
  // pp 2, M 4 (torch plans max(2pp-1, M) = 4). Rank 0: 2(pp-0)-1 = 3 chunk-0 forwards, no (F1, F0) pairs, pp = 2
  // rounds of (F, I, W) on chunk 1; steady (F0 I0 W0 F1 I1 W1) while forwards remain, the second round without F0;
  // cool-down: pp = 2 chunk-0 (I, W).
  const std::vector<PipelineOrder> orders = pipeline_orders(PipelineSchedule::zbv, 2, 2, 4);
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(describe(orders[0]),
            "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F3.0 I0.0 W0.0 F2.1 I2.1 W2.1 I1.0 W1.0 F3.1 I3.1 W3.1 "
            "I2.0 W2.0 I3.0 W3.0");
  // Rank 1: one chunk-0 forward, one (F1, F0) pair, one (F1, I1, W1) round; two steady rounds; cool-down: one pair of
  // I on both chunks, one chunk-0 (I, W), then the deferred W of chunk 1 and chunk 0.
  EXPECT_EQ(describe(orders[1]),
            "F0.0 F0.1 F1.0 F1.1 I0.1 W0.1 F2.0 I0.0 W0.0 F2.1 I1.1 W1.1 F3.0 I1.0 W1.0 F3.1 I2.1 W2.1 I2.0 I3.1 "
            "I3.0 W2.0 W3.1 W3.0");
}

TEST(ZeroBubbleOrder, DualPipeVOrdersDerivedByHand) {
  // pp 2, M 4. Rank 0: step 1 two F0; step 2 (F0 F1); step 3 (I1 W F1); step 4 one round of the overlapped pairs
  // (F0 with B1, F1 with B0); step 5 (B1, F1 with B0); step 6 B1 then, zero bubble from here on rank 0, I0; step 7
  // (W, I0); step 8 the last W.
  const std::vector<PipelineOrder> orders = pipeline_orders(PipelineSchedule::dualpipev, 2, 2, 4);
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(describe(orders[0]),
            "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 F3.0 B1.1 F2.1 B0.0 B2.1 F3.1 B1.0 B3.1 I2.0 W2.0 I3.0 W3.0");
  // Rank 1 (the last): step 2 twice; step 4 twice, its first F0 and B1 not overlapped; step 6 two rounds, the second
  // as I (odd rank); step 8 the two W.
  EXPECT_EQ(describe(orders[1]),
            "F0.0 F0.1 F1.0 F1.1 F2.0 B0.1 F2.1 B0.0 F3.0 B1.1 F3.1 B1.0 B2.1 B2.0 I3.1 I3.0 W3.1 W3.0");
}

TEST(ZeroBubbleOrder, EveryOrderRunsEachMicroBatchOnceThroughBothChunks) {
  for (const PipelineSchedule schedule : {PipelineSchedule::zbv, PipelineSchedule::dualpipev}) {
    for (int32_t pp = 2; pp <= 8; ++pp) {
      const int32_t fewest = schedule == PipelineSchedule::dualpipev ? 2 * pp : 1;
      for (int32_t mb = fewest; mb <= fewest + 2 * pp + 1; ++mb) {
        const std::vector<PipelineOrder> orders = pipeline_orders(schedule, pp, 2, mb);
        for (int32_t rank = 0; rank < pp; ++rank) {
          EXPECT_EQ(order_problem(orders[static_cast<size_t>(rank)], mb), "")
              << to_string(schedule) << " pp " << pp << " M " << mb << " rank " << rank;
        }
      }
    }
  }
}

TEST(ZeroBubbleOrder, TheVPlacesBothEndsOnRankZeroAndTheMiddleOnTheLastRank) {
  // generate_stage_to_rank_mapping(style="v"): pp 4 → stages 0-3 on ranks 0-3, stages 4-7 on ranks 3-0.
  for (const PipelineSchedule schedule : {PipelineSchedule::zbv, PipelineSchedule::dualpipev}) {
    EXPECT_EQ(virtual_stage_of(schedule, 4, 0, 0), 0);
    EXPECT_EQ(virtual_stage_of(schedule, 4, 1, 0), 7);
    EXPECT_EQ(virtual_stage_of(schedule, 4, 0, 3), 3);
    EXPECT_EQ(virtual_stage_of(schedule, 4, 1, 3), 4);
    for (int32_t k = 0; k < 8; ++k) {
      const int32_t rank = rank_of_virtual_stage(schedule, 4, k);
      EXPECT_EQ(rank, k < 4 ? k : 7 - k);
      EXPECT_TRUE(virtual_stage_of(schedule, 4, 0, rank) == k || virtual_stage_of(schedule, 4, 1, rank) == k);
    }
  }
  // The looped schedules: chunk·pp + rank.
  EXPECT_EQ(virtual_stage_of(PipelineSchedule::interleaved_1f1b, 4, 1, 0), 4);
  EXPECT_EQ(rank_of_virtual_stage(PipelineSchedule::interleaved_1f1b, 4, 7), 3);
}

TEST(ZeroBubbleOrder, WarmupIsTheForwardsBeforeTheFirstBackward) {
  // ZBV runs 2pp forwards before its first I on every rank; DualPipeV's last rank one more (its first step-4 F0).
  for (int32_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(warmup_forwards(PipelineSchedule::zbv, 4, 2, 8, rank), 8) << rank;
    EXPECT_EQ(warmup_forwards(PipelineSchedule::dualpipev, 4, 2, 8, rank), rank == 3 ? 9 : 8) << rank;
  }
}

TEST(ZeroBubbleOrder, ArgumentsTheSchedulesRefuse) {
  EXPECT_HAS(error_of([] { pipeline_orders(PipelineSchedule::zbv, 2, 3, 4); }),
             "zbv runs exactly two stages per rank, virtual_pipeline_stages is 3");
  EXPECT_HAS(error_of([] { pipeline_orders(PipelineSchedule::dualpipev, 1, 2, 4); }),
             "dualpipev folds the model over the pipeline ranks in a V, pp is 1");
  EXPECT_HAS(error_of([] { pipeline_orders(PipelineSchedule::dualpipev, 4, 2, 7); }),
             "dualpipev needs at least as many micro-batches as stages (8), the step has 7 (raise global_batch_size "
             "to give at least 8 micro-batches, or use pipeline_schedule zbv)");
  // ZBV takes fewer micro-batches than stages: torch plans 2pp-1 and drops the rest.
  EXPECT_EQ(order_problem(pipeline_orders(PipelineSchedule::zbv, 4, 2, 1)[0], 1), "");
}

}  // namespace
}  // namespace fsdpsim
