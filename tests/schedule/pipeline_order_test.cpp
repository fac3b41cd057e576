// Pipeline orders and layer splits against orders and splits derived by hand from Megatron-core's schedules
// (forward_backward_pipelining_{without,with}_interleaving, get_pp_rank_microbatches, get_schedule_table) and its
// layer split (get_num_layers_to_build, get_transformer_layer_offset).
#include "builders/pipeline_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "common/error.h"
#include "config/pipeline_layout.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

using Kind = PipelineAction::Kind;

// "F0 F1 B0 …"; with `chunks`, "F0.1" is micro-batch 0 through chunk 1.
std::string describe(const PipelineOrder& order, bool chunks = false) {
  std::ostringstream out;
  for (size_t i = 0; i < order.size(); ++i) {
    const PipelineAction& a = order[i];
    out << (i > 0 ? " " : "") << (a.kind == Kind::forward ? 'F' : 'B') << a.micro_batch;
    if (chunks) out << '.' << a.chunk;
  }
  return out.str();
}

// The first `count` actions of an order.
PipelineOrder prefix(const PipelineOrder& order, size_t count) {
  return {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(count, order.size()))};
}

// Forwards run before the first backward: the warm-up, plus the first steady-state forward when there is one.
int32_t forwards_before_first_backward(const PipelineOrder& order) {
  const auto first_backward =
      std::find_if(order.begin(), order.end(), [](const PipelineAction& a) { return a.kind == Kind::backward; });
  return static_cast<int32_t>(first_backward - order.begin());
}

// The most (micro-batch, chunk) pairs whose forward has run and whose backward has not, over the whole order: the
// activations a rank holds at its peak.
int32_t max_in_flight(const PipelineOrder& order) {
  int32_t in_flight = 0;
  int32_t peak = 0;
  for (const PipelineAction& a : order) {
    in_flight += a.kind == Kind::forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

// Every (micro-batch, chunk) forward and backward exactly once, each backward after its forward; "" when so.
std::string order_problem(const PipelineOrder& order, int32_t micro_batches, int32_t virtual_stages) {
  std::set<std::pair<int32_t, int32_t>> forwarded;
  std::set<std::pair<int32_t, int32_t>> backwarded;
  for (const PipelineAction& a : order) {
    const auto key = std::make_pair(a.micro_batch, a.chunk);
    if (a.micro_batch < 0 || a.micro_batch >= micro_batches || a.chunk < 0 || a.chunk >= virtual_stages) {
      return "action out of range: " + describe({a}, true);
    }
    if (a.kind == Kind::forward) {
      if (!forwarded.insert(key).second) return "forward twice: " + describe({a}, true);
    } else {
      if (forwarded.count(key) == 0) return "backward before its forward: " + describe({a}, true);
      if (!backwarded.insert(key).second) return "backward twice: " + describe({a}, true);
    }
  }
  const size_t expected = static_cast<size_t>(micro_batches) * static_cast<size_t>(virtual_stages);
  if (forwarded.size() != expected || backwarded.size() != expected) return "missing actions";
  return "";
}

// The message of the ConfigError `run` throws, or "" when it throws none.
template <typename Run>
std::string config_error(Run run) {
  try {
    run();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

FsdpConfig pipeline_config(int32_t pp, int32_t virtual_stages = 1) {
  FsdpConfig config;
  config.pp = pp;
  config.virtual_pipeline_stages = virtual_stages;
  if (virtual_stages > 1) config.pipeline_schedule = PipelineSchedule::interleaved_1f1b;
  return config;
}

// ---------------------------------------------------------------------------------------------------------------
// 1F1B (forward_backward_pipelining_without_interleaving)

TEST(PipelineOrder, OneFOneBFirstRankWarmsUpThenAlternatesThenCoolsDown) {
  const auto orders = pipeline_orders(PipelineSchedule::one_f_one_b, 4, 1, 8);
  ASSERT_EQ(orders.size(), 4u);
  // Warm-up pp-0-1 = 3 forwards; 8-3 = 5 steady (forward, backward) pairs; the 3 backwards left cool down.
  EXPECT_EQ(describe(orders[0]), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  // Rank 1: warm-up 2, 6 pairs, 2 cool-down backwards.
  EXPECT_EQ(describe(orders[1]), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
}

TEST(PipelineOrder, OneFOneBLastRankAlternatesFromTheStart) {
  const auto orders = pipeline_orders(PipelineSchedule::one_f_one_b, 4, 1, 8);
  EXPECT_EQ(describe(orders[3]), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

TEST(PipelineOrder, OneFOneBWarmupIsTheRanksStillAhead) {
  const auto orders = pipeline_orders(PipelineSchedule::one_f_one_b, 4, 1, 8);
  for (int32_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(warmup_forwards(PipelineSchedule::one_f_one_b, 4, 1, 8, rank), 3 - rank) << "rank " << rank;
    EXPECT_EQ(forwards_before_first_backward(orders[static_cast<size_t>(rank)]), 3 - rank + 1) << "rank " << rank;
  }
}

TEST(PipelineOrder, OneFOneBWarmupIsCappedAtTheMicroBatches) {
  // pp=4 with 2 micro-batches: rank 0 would warm up with 3 but only has 2, so it runs F0 F1 B0 B1 (no steady state).
  EXPECT_EQ(warmup_forwards(PipelineSchedule::one_f_one_b, 4, 1, 2, 0), 2);
  EXPECT_EQ(describe(pipeline_orders(PipelineSchedule::one_f_one_b, 4, 1, 2)[0]), "F0 F1 B0 B1");
}

// ---------------------------------------------------------------------------------------------------------------
// GPipe and no pipeline

TEST(PipelineOrder, GPipeRunsEveryForwardThenEveryBackward) {
  const auto orders = pipeline_orders(PipelineSchedule::gpipe, 2, 1, 3);
  ASSERT_EQ(orders.size(), 2u);
  for (const auto& order : orders) EXPECT_EQ(describe(order), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(warmup_forwards(PipelineSchedule::gpipe, 2, 1, 3, 1), 3);
}

TEST(PipelineOrder, WithoutAPipelineEachBackwardFollowsItsForward) {
  for (const PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    const auto orders = pipeline_orders(schedule, 1, 1, 3);
    ASSERT_EQ(orders.size(), 1u);
    EXPECT_EQ(describe(orders[0]), "F0 B0 F1 B1 F2 B2") << to_string(schedule);
    EXPECT_EQ(warmup_forwards(schedule, 1, 1, 3, 0), 0) << to_string(schedule);
  }
}

TEST(PipelineOrder, InterleavedNeedsAPipeline) {
  const std::string message = config_error([] { pipeline_orders(PipelineSchedule::interleaved_1f1b, 1, 2, 4); });
  EXPECT_TRUE(contains(message, "'pp'")) << message;
}

TEST(PipelineOrder, OneChunkSchedulesRefuseVirtualStages) {
  const std::string message = config_error([] { pipeline_orders(PipelineSchedule::gpipe, 4, 2, 8); });
  EXPECT_TRUE(contains(message, "'pipeline_schedule'")) << message;
  EXPECT_TRUE(contains(message, "interleaved_1f1b")) << message;
}

// ---------------------------------------------------------------------------------------------------------------
// Interleaved 1F1B (forward_backward_pipelining_with_interleaving, groups of pp micro-batches)

TEST(PipelineOrder, InterleavedForwardsTakeChunksInTurnPerGroupOfPp) {
  const auto orders = pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 8);
  ASSERT_EQ(orders.size(), 4u);
  // get_schedule_table: micro-batches 0-3 through chunk 0, then 0-3 through chunk 1; rank 0's warm-up then goes on
  // with the next group's first two (4 and 5 through chunk 0) before the first backward.
  EXPECT_EQ(describe(prefix(orders[0], 10), true), "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0");
  // The first backward is the last chunk's micro-batch 0 (backwards walk the chunks in reverse).
  // Steady state: forward 10 (the next group's micro-batch 6, chunk 0), then backward 0.
  EXPECT_EQ(describe(prefix(orders[0], 12), true), "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1");
}

TEST(PipelineOrder, InterleavedLastRankOrder) {
  // Rank 3: warm-up (4-3-1)·2 + (2-1)·4 = 4 forwards, 16-4 = 12 steady pairs, 4 cool-down backwards. Forward k and
  // backward k follow the same table (micro-batches 0-3 chunk 0, 0-3 chunk 1, 4-7 chunk 0, 4-7 chunk 1), the
  // backward with the chunk mirrored.
  const auto orders = pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 8);
  EXPECT_EQ(describe(orders[3], true),
            "F0.0 F1.0 F2.0 F3.0 "
            "F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 "
            "F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
            "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 "
            "B4.0 B5.0 B6.0 B7.0");
}

TEST(PipelineOrder, InterleavedWarmupAddsAGroupPerExtraChunkAndTwoPerRankAhead) {
  const auto orders = pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 8);
  for (int32_t rank = 0; rank < 4; ++rank) {
    const int32_t expected = (4 - rank - 1) * 2 + (2 - 1) * 4;  // 10, 8, 6, 4
    EXPECT_EQ(warmup_forwards(PipelineSchedule::interleaved_1f1b, 4, 2, 8, rank), expected) << "rank " << rank;
    EXPECT_EQ(forwards_before_first_backward(orders[static_cast<size_t>(rank)]), expected + 1) << "rank " << rank;
  }
}

TEST(PipelineOrder, InterleavedWarmupIsCappedPerRankWhenMicroBatchesEqualPp) {
  // M = pp = 4, v = 2: 8 chunk-forwards per rank. Megatron at this snapshot caps each rank's warm-up at that total
  // (are_all_microbatches_in_warmup) rather than putting every rank in warm-up: rank 0 wants 6+4 = 10 → 8 (all),
  // rank 3 wants 0+4 = 4 and keeps 4.
  EXPECT_EQ(warmup_forwards(PipelineSchedule::interleaved_1f1b, 4, 2, 4, 0), 8);
  EXPECT_EQ(warmup_forwards(PipelineSchedule::interleaved_1f1b, 4, 2, 4, 3), 4);
  const auto orders = pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 4);
  EXPECT_EQ(describe(orders[0], true),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0");
}

TEST(PipelineOrder, InterleavedRefusesMicroBatchesThatAreNotAMultipleOfPp) {
  const std::string message = config_error([] { pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 6); });
  EXPECT_TRUE(contains(message, "'global_batch_size'")) << message;
  EXPECT_TRUE(contains(message, "6 micro-batches")) << message;
  EXPECT_TRUE(contains(message, "4 or 8")) << message;  // the nearest multiples of pp
}

TEST(PipelineOrder, InterleavedNeedsMoreThanOneChunk) {
  const std::string message = config_error([] { pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 1, 8); });
  EXPECT_TRUE(contains(message, "'virtual_pipeline_stages'")) << message;
}

TEST(PipelineOrder, ConfigErrorsPointAtTheKeysSource) {
  FsdpConfig config = pipeline_config(4, 2);
  config.origin["pipeline_schedule"] = SourceLocation{"job.yaml", 3, 1};
  config.pipeline_schedule = PipelineSchedule::gpipe;
  const std::string message = config_error([&] { pipeline_orders(config, 8); });
  EXPECT_EQ(message.rfind("job.yaml:3:1: 'pipeline_schedule'", 0), 0u) << message;
  config.pipeline_schedule = PipelineSchedule::interleaved_1f1b;
  EXPECT_EQ(pipeline_orders(config, 8), pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 8));
}

// ---------------------------------------------------------------------------------------------------------------
// Properties over every schedule

TEST(PipelineOrder, EveryActionRunsOnceAndEachBackwardFollowsItsForward) {
  struct Case {
    PipelineSchedule schedule;
    int32_t pp, virtual_stages, micro_batches;
  };
  const Case cases[] = {
      {PipelineSchedule::gpipe, 4, 1, 8},
      {PipelineSchedule::gpipe, 1, 1, 5},
      {PipelineSchedule::one_f_one_b, 4, 1, 8},
      {PipelineSchedule::one_f_one_b, 4, 1, 2},
      {PipelineSchedule::one_f_one_b, 8, 1, 13},
      {PipelineSchedule::one_f_one_b, 1, 1, 4},
      {PipelineSchedule::interleaved_1f1b, 4, 2, 8},
      {PipelineSchedule::interleaved_1f1b, 4, 2, 4},
      {PipelineSchedule::interleaved_1f1b, 2, 3, 6},
      {PipelineSchedule::interleaved_1f1b, 8, 4, 16},
  };
  for (const Case& c : cases) {
    const auto orders = pipeline_orders(c.schedule, c.pp, c.virtual_stages, c.micro_batches);
    ASSERT_EQ(orders.size(), static_cast<size_t>(c.pp));
    for (int32_t rank = 0; rank < c.pp; ++rank) {
      EXPECT_EQ(order_problem(orders[static_cast<size_t>(rank)], c.micro_batches, c.virtual_stages), "")
          << to_string(c.schedule) << " pp=" << c.pp << " v=" << c.virtual_stages << " M=" << c.micro_batches
          << " rank " << rank;
    }
  }
}

TEST(PipelineOrder, OneFOneBHoldsAtMostTheRanksAheadPlusOneInFlight) {
  for (const int32_t micro_batches : {8, 2}) {
    const auto orders = pipeline_orders(PipelineSchedule::one_f_one_b, 4, 1, micro_batches);
    for (int32_t rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(max_in_flight(orders[static_cast<size_t>(rank)]), std::min(4 - rank, micro_batches))
          << "M=" << micro_batches << " rank " << rank;
    }
  }
  // GPipe holds every micro-batch.
  EXPECT_EQ(max_in_flight(pipeline_orders(PipelineSchedule::gpipe, 4, 1, 8)[0]), 8);
}

TEST(PipelineOrder, InterleavedFirstRankHoldsMoreChunkForwardsInFlightThanOneFOneB) {
  // pp=4 v=2 M=8, 16 chunk-forwards per rank. Rank r warms up with (4-r-1)·2 + 4 forwards and then runs steady pairs
  // (a forward, then the oldest backward), so its peak is the warm-up plus the first steady forward: rank 0
  // 10 + 1 = 11, then 9, 7, 5. Each chunk-forward holds a chunk's activations (half a 1F1B stage), yet 11 chunks are
  // 5.5 stages' worth against 1F1B's pp = 4 micro-batches on rank 0.
  const auto orders = pipeline_orders(PipelineSchedule::interleaved_1f1b, 4, 2, 8);
  const int32_t expected[] = {11, 9, 7, 5};
  for (int32_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(max_in_flight(orders[static_cast<size_t>(rank)]), expected[rank]) << "rank " << rank;
  }
  EXPECT_GT(max_in_flight(orders[0]), 4);
}

// ---------------------------------------------------------------------------------------------------------------
// Layer splits (get_num_layers_to_build, get_transformer_layer_offset)

TEST(SplitLayers, EvenSplitOverVirtualStages) {
  const LayerSplit split = split_layers(32, pipeline_config(4, 2));
  EXPECT_EQ(split.layers_per_virtual_stage, std::vector<int32_t>(8, 4));
  EXPECT_EQ(split.first_layer, (std::vector<int32_t>{0, 4, 8, 12, 16, 20, 24, 28}));
}

TEST(SplitLayers, EmbeddingAndLossCountAsLayersOfTheEndStages) {
  // 126 decoder layers + the embedding + the loss = 128 = 8 × 16: the first stage holds the embedding and 15 layers,
  // the last 15 layers and the loss.
  FsdpConfig config = pipeline_config(8);
  config.account_for_embedding_in_pipeline_split = true;
  config.account_for_loss_in_pipeline_split = true;
  const LayerSplit split = split_layers(126, config);
  EXPECT_EQ(split.layers_per_virtual_stage, (std::vector<int32_t>{15, 16, 16, 16, 16, 16, 16, 15}));
  EXPECT_EQ(split.first_layer, (std::vector<int32_t>{0, 15, 31, 47, 63, 79, 95, 111}));
}

TEST(SplitLayers, EmbeddingAndLossWithVirtualStagesTakeTheModelsFirstAndLastChunk) {
  // 128 counted layers over 4 × 2 chunks of 16: virtual stage 0 (rank 0, chunk 0) and virtual stage 7 (rank 3,
  // chunk 1) give one up.
  FsdpConfig config = pipeline_config(4, 2);
  config.account_for_embedding_in_pipeline_split = true;
  config.account_for_loss_in_pipeline_split = true;
  EXPECT_EQ(split_layers(126, config).layers_per_virtual_stage, (std::vector<int32_t>{15, 16, 16, 16, 16, 16, 16, 15}));
  config.account_for_loss_in_pipeline_split = false;  // 127 + 1 = 128: only the first chunk gives one up
  EXPECT_EQ(split_layers(127, config).layers_per_virtual_stage, (std::vector<int32_t>{15, 16, 16, 16, 16, 16, 16, 16}));
}

TEST(SplitLayers, UnevenFirstAndLastStages) {
  // 30 layers, pp 4: first 6, last 4, the 20 left over the 2 middle ranks.
  FsdpConfig config = pipeline_config(4);
  config.first_stage_layers = 6;
  config.last_stage_layers = 4;
  LayerSplit split = split_layers(30, config);
  EXPECT_EQ(split.layers_per_virtual_stage, (std::vector<int32_t>{6, 10, 10, 4}));
  EXPECT_EQ(split.first_layer, (std::vector<int32_t>{0, 6, 16, 26}));

  // The same with 2 chunks per rank: each rank's layers halve, and in model order chunk 1 follows all of chunk 0.
  // Megatron's offset for rank 2, chunk 1: 1·(3+10+2) + 3 + 1·5 = 23.
  config.virtual_pipeline_stages = 2;
  split = split_layers(30, config);
  EXPECT_EQ(split.layers_per_virtual_stage, (std::vector<int32_t>{3, 5, 5, 2, 3, 5, 5, 2}));
  EXPECT_EQ(split.first_layer, (std::vector<int32_t>{0, 3, 8, 13, 15, 18, 23, 28}));
}

TEST(SplitLayers, OnlyTheFirstStageFixedLeavesTheRestToTheOtherRanks) {
  // 31 layers, pp 4, first 4: the other three ranks (the last one too) share 27.
  FsdpConfig config = pipeline_config(4);
  config.first_stage_layers = 4;
  EXPECT_EQ(split_layers(31, config).layers_per_virtual_stage, (std::vector<int32_t>{4, 9, 9, 9}));
}

TEST(SplitLayers, EvenSplitThatDoesNotDivideNamesPpAndTheNearestDivisors) {
  // 126 layers do not split over 8 ranks; 7 and 9 would divide them.
  const std::string message = config_error([] { split_layers(126, pipeline_config(8)); });
  EXPECT_TRUE(contains(message, "'pp'")) << message;
  EXPECT_TRUE(contains(message, "7 or 9")) << message;
}

TEST(SplitLayers, VirtualStagesThatDoNotDivideTheRanksLayersAreNamed) {
  // 32 layers over pp 4: 8 per rank, which 3 chunks cannot share; 2 or 4 could.
  const std::string message = config_error([] { split_layers(32, pipeline_config(4, 3)); });
  EXPECT_TRUE(contains(message, "'virtual_pipeline_stages'")) << message;
  EXPECT_TRUE(contains(message, "2 or 4")) << message;
}

TEST(SplitLayers, UnevenStageThatLeavesAnUnevenMiddleIsNamed) {
  // 32 layers, pp 4, first 6: 26 left over 3 ranks. First 5 (27 left) or 8 (24 left) would divide.
  FsdpConfig config = pipeline_config(4);
  config.first_stage_layers = 6;
  const std::string message = config_error([&] { split_layers(32, config); });
  EXPECT_TRUE(contains(message, "'first_stage_layers'")) << message;
  EXPECT_TRUE(contains(message, "5 or 8")) << message;
}

TEST(SplitLayers, TwoStagesWithBothEndsFixedMustHoldEveryLayer) {
  // pp 2 has no middle rank: first + last must be the 32 layers.
  FsdpConfig config = pipeline_config(2);
  config.first_stage_layers = 10;
  config.last_stage_layers = 20;
  const std::string message = config_error([&] { split_layers(32, config); });
  EXPECT_TRUE(contains(message, "'first_stage_layers'")) << message;
  EXPECT_TRUE(contains(message, "to 12")) << message;
}

TEST(SplitLayers, UnevenStageLayersMustSpreadOverTheChunks) {
  FsdpConfig config = pipeline_config(4, 2);
  config.last_stage_layers = 3;
  config.origin["last_stage_layers"] = SourceLocation{"job.yaml", 7, 1};
  const std::string message = config_error([&] { split_layers(32, config); });
  EXPECT_EQ(message.rfind("job.yaml:7:1: 'last_stage_layers'", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "2 or 4")) << message;
}

TEST(SplitLayers, UnevenStagesRefuseTheEmbeddingCountedAsALayer) {
  FsdpConfig config = pipeline_config(4);
  config.first_stage_layers = 4;
  config.account_for_embedding_in_pipeline_split = true;
  const std::string message = config_error([&] { split_layers(32, config); });
  EXPECT_TRUE(contains(message, "'account_for_embedding_in_pipeline_split'")) << message;
}

TEST(SplitLayers, UnevenStagesNeedAPipeline) {
  FsdpConfig config = pipeline_config(1);
  config.first_stage_layers = 4;
  const std::string message = config_error([&] { split_layers(32, config); });
  EXPECT_TRUE(contains(message, "'first_stage_layers'")) << message;
}

}  // namespace
}  // namespace fsdpsim

namespace fsdpsim {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// Megatron-core's custom layouts (--pipeline-model-parallel-layout)

std::vector<LayoutChunk> layout(const std::string& text) {
  return parse_pipeline_layout(text, SourceLocation{});
}

TEST(PipelineLayout, RepeatsExpandIntoChunksInModelOrder) {
  // Megatron-Bridge's DeepSeek-V3 PP 4 × VP 4 layout without MTP (recipes/deepseek/deepseek_v3.py @ 5776a6d9).
  const std::vector<LayoutChunk> chunks = layout("Etttt|(tttt|)*14tL");
  ASSERT_EQ(chunks.size(), 16U);
  EXPECT_TRUE(chunks.front().embedding);
  EXPECT_EQ(chunks.front().decoder_layers, 4);
  for (size_t i = 1; i < 15; ++i) EXPECT_EQ(chunks[i].decoder_layers, 4) << i;
  EXPECT_TRUE(chunks.back().loss);
  EXPECT_EQ(chunks.back().decoder_layers, 1);
  // Megatron-core's own example shape: x*n, commas, an empty-of-layers last chunk.
  const std::vector<LayoutChunk> shaped = layout("Et*3|(tt|)*29,t|L");
  ASSERT_EQ(shaped.size(), 32U);
  EXPECT_EQ(shaped[0].decoder_layers, 3);
  EXPECT_EQ(shaped[30].decoder_layers, 1);
  EXPECT_EQ(shaped[31].decoder_layers, 0);
  EXPECT_TRUE(shaped[31].loss);
}

TEST(PipelineLayout, ErrorsNameTheCharacterOrTheRule) {
  EXPECT_HAS(error_of([] { layout("Etx|tL"); }), "'pipeline_layout': unknown layer character 'x' at character 3");
  EXPECT_HAS(error_of([] { layout("tE|tL"); }), "the embedding (E) must be the layout's first entry");
  EXPECT_HAS(error_of([] { layout("Et|Lt"); }), "the loss (L) must be the layout's last entry");
  EXPECT_HAS(error_of([] { layout("Et|t"); }), "must hold the embedding (E) once, first, and the loss (L) once");
  EXPECT_HAS(error_of([] { layout("E(tt|tL"); }), "the '(' at character 2 is never closed");
  EXPECT_HAS(error_of([] { layout("E(tt)|tL"); }), "a group in parentheses must be repeated");
  EXPECT_HAS(error_of([] { layout("Et*|tL"); }), "'*' at character 3 is not followed by a count");
  EXPECT_HAS(error_of([] { layout("Et)|tL"); }), "unmatched ')' at character 3");
  EXPECT_HAS(error_of([] { layout("E(t*999999)*999999|L"); }), "the layout expands to more than");
  EXPECT_HAS(error_of([] { layout("Et|m|L"); }), "multi-token-prediction layers (m) are not modelled");
}

TEST(SplitLayers, ALayoutGivesEachChunkItsLayers) {
  FsdpConfig config = pipeline_config(4, 4);
  config.pipeline_layout = "Etttt|(tttt|)*14tL";
  const LayerSplit split = split_layers(61, config);
  ASSERT_EQ(split.layers_per_virtual_stage.size(), 16U);
  EXPECT_EQ(split.layers_per_virtual_stage.front(), 4);
  EXPECT_EQ(split.layers_per_virtual_stage.back(), 1);
  EXPECT_EQ(split.first_layer.back(), 60);
  EXPECT_HAS(error_of([&] { (void)split_layers(60, config); }),
             "'pipeline_layout': the layout places 61 decoder layers (t), the model has 60");
  config.virtual_pipeline_stages = 2;
  EXPECT_HAS(error_of([&] { (void)split_layers(61, config); }),
             "the layout has 16 chunks, but pp=4 × virtual_pipeline_stages=2 = 8");
}

TEST(SplitLayers, TorchtitansDefaultGivesTheRemainderToTheFirstStages) {
  // generate_llm_fqn_per_model_part(16, 61): 63 effective layers, 3 per stage and 15 stages with one more; the first
  // gives one to the embedding, the last one to the output: 3, 4 × 14, 2.
  const LayerSplit split = torchtitan_split_layers(61, pipeline_config(2, 8));
  std::vector<int32_t> expected(16, 4);
  expected.front() = 3;
  expected.back() = 2;
  EXPECT_EQ(split.layers_per_virtual_stage, expected);
  EXPECT_EQ(split.first_layer[1], 3);
  // Divisible counts give the even split with the ends counted: 126 + 2 over 8 × 2 = 8 each, 7 at the ends.
  const LayerSplit even = torchtitan_split_layers(126, pipeline_config(8, 2));
  EXPECT_EQ(even.layers_per_virtual_stage.front(), 7);
  EXPECT_EQ(even.layers_per_virtual_stage[1], 8);
  EXPECT_EQ(even.layers_per_virtual_stage.back(), 7);
  EXPECT_HAS(error_of([] { (void)torchtitan_split_layers(2, pipeline_config(8)); }),
             "'pp': 8 pipeline stages for 2 layers");
}

TEST(PipelineP2p, OverlapFollowsEachFrameworkUnlessSet) {
  FsdpConfig megatron = pipeline_config(4, 2);  // interleaved
  EXPECT_TRUE(p2p_overlaps_compute(megatron));  // --overlap-p2p-communication is Megatron-LM's default
  megatron.overlap_p2p_comm = "false";          // --no-overlap-p2p-communication
  EXPECT_FALSE(p2p_overlaps_compute(megatron));
  FsdpConfig plain = pipeline_config(4);  // 1F1B: Megatron-LM never overlaps
  EXPECT_FALSE(p2p_overlaps_compute(plain));
  plain.overlap_p2p_comm = "true";
  EXPECT_HAS(error_of([&] { (void)p2p_overlaps_compute(plain); }),
             "'overlap_p2p_comm': Megatron-LM overlaps pipeline P2P with compute only in the interleaved schedule");
  FsdpConfig fsdp2 = pipeline_config(4);
  fsdp2.implementation = Implementation::fsdp2;
  EXPECT_FALSE(p2p_overlaps_compute(fsdp2));  // Schedule1F1B waits on each exchange
  fsdp2.pipeline_schedule = PipelineSchedule::gpipe;
  EXPECT_TRUE(p2p_overlaps_compute(fsdp2));  // sends are waited for at the end of the step
}

}  // namespace
}  // namespace fsdpsim
