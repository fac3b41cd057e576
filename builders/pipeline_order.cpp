// Pipeline orders and layer splits, written from Megatron-LM's code at commit d98e8a64dd:
//   megatron/core/pipeline_parallel/schedules.py   get_pp_rank_microbatches, get_schedule_table,
//     forward_backward_pipelining_with_interleaving, forward_backward_pipelining_without_interleaving
//   megatron/core/transformer/transformer_block.py get_num_layers_to_build
//   megatron/core/transformer/transformer_layer.py get_transformer_layer_offset
//   megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__ (the uneven-split checks)
// and torch.distributed.pipelining's ScheduleGPipe for the GPipe order.
#include "builders/pipeline_order.h"

#include <algorithm>
#include <array>
#include <deque>
#include <optional>
#include <string>

#include "common/error.h"
#include "config/pipeline_layout.h"

namespace fsdpsim {
namespace {

using Kind = PipelineAction::Kind;

// Pipeline arguments reach pipeline_orders without their configuration, so their errors carry this place; the
// FsdpConfig overload re-raises them at the key's own source.
const SourceLocation kScheduleArguments{"<pipeline schedule>", 0, 0};

std::string num(int64_t value) {
  return std::to_string(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Nearest valid alternatives, for the `fix` part of the errors.

// The values v' nearest to `near` (one below, one above, each only if it exists in [1, limit]) that `valid` accepts,
// written "a or b".
template <typename Valid>
std::string nearest_valid(int64_t near, int64_t limit, Valid valid) {
  std::optional<int64_t> below;
  std::optional<int64_t> above;
  for (int64_t v = near - 1; v >= 1 && !below; --v) {
    if (valid(v)) below = v;
  }
  for (int64_t v = near + 1; v <= limit && !above; ++v) {
    if (valid(v)) above = v;
  }
  if (below && above) return num(*below) + " or " + num(*above);
  if (below) return num(*below);
  if (above) return num(*above);
  return "";
}

// ---------------------------------------------------------------------------------------------------------------
// Schedule arguments.

void check_schedule_arguments(PipelineSchedule schedule, int32_t pp, int32_t virtual_stages, int32_t micro_batches) {
  const std::string name(to_string(schedule));
  if (pp < 1) {
    throw ConfigError(kScheduleArguments, "pp", "pp is " + num(pp) + ", a pipeline needs at least one stage",
                      "set pp to 1 (no pipeline) or more");
  }
  if (virtual_stages < 1) {
    throw ConfigError(kScheduleArguments, "virtual_pipeline_stages",
                      "virtual_pipeline_stages is " + num(virtual_stages) + ", each rank needs at least one chunk",
                      "set virtual_pipeline_stages to 1, or 2 and more with pipeline_schedule interleaved_1f1b");
  }
  if (micro_batches < 1) {
    throw ConfigError(kScheduleArguments, "global_batch_size",
                      "the step has " + num(micro_batches) + " micro-batches, the pipeline needs at least one",
                      "raise global_batch_size to at least micro_batch_size x data-parallel size");
  }
  if (is_v_shaped(schedule)) {
    // ScheduleZBVZeroBubble and ScheduleDualPipeV (torch/distributed/pipelining/schedules.py) take exactly two stages
    // per rank; DualPipeV also at least as many micro-batches as stages.
    if (pp < 2) {
      throw ConfigError(kScheduleArguments, "pp", name + " folds the model over the pipeline ranks in a V, pp is 1",
                        "set pp to 2 or more");
    }
    if (virtual_stages != 2) {
      throw ConfigError(kScheduleArguments, "virtual_pipeline_stages",
                        name + " runs exactly two stages per rank, virtual_pipeline_stages is " + num(virtual_stages),
                        "set virtual_pipeline_stages to 2");
    }
    if (schedule == PipelineSchedule::dualpipev && micro_batches < 2 * pp) {
      throw ConfigError(
          kScheduleArguments, "global_batch_size",
          "dualpipev needs at least as many micro-batches as stages (" + num(2 * pp) + "), the step has " +
              num(micro_batches),
          "raise global_batch_size to give at least " + num(2 * pp) + " micro-batches, or use pipeline_schedule zbv");
    }
    return;
  }
  if (schedule != PipelineSchedule::interleaved_1f1b) {
    // Megatron runs forward_backward_pipelining_without_interleaving exactly when the virtual size is unset (1).
    if (virtual_stages != 1) {
      throw ConfigError(kScheduleArguments, "pipeline_schedule",
                        name + " runs one model chunk per rank, but virtual_pipeline_stages is " + num(virtual_stages),
                        "use pipeline_schedule interleaved_1f1b, or virtual_pipeline_stages 1");
    }
    return;
  }
  if (pp < 2) {
    throw ConfigError(kScheduleArguments, "pp", "interleaved_1f1b interleaves chunks across pipeline ranks, pp is 1",
                      "set pp to 2 or more, or pipeline_schedule 1f1b (gradient accumulation)");
  }
  if (virtual_stages < 2) {
    throw ConfigError(
        kScheduleArguments, "virtual_pipeline_stages",
        "interleaved_1f1b needs more than one model chunk per rank, virtual_pipeline_stages is " + num(virtual_stages),
        "set virtual_pipeline_stages to 2 or more, or pipeline_schedule 1f1b");
  }
  // forward_backward_pipelining_with_interleaving runs micro-batches in groups of microbatch_group_size_per_vp_stage
  // (pp by default): it refuses a group larger than M and a last group of 1 … pp-1 micro-batches. With groups of pp
  // both mean M must be a multiple of pp.
  if (micro_batches % pp != 0) {
    const std::string lower = micro_batches >= pp ? num(micro_batches / pp * pp) + " or " : "";
    throw ConfigError(kScheduleArguments, "global_batch_size",
                      "interleaved_1f1b runs micro-batches in groups of pp=" + num(pp) + ", but the step has " +
                          num(micro_batches) + " micro-batches, not a multiple of " + num(pp),
                      "choose a global_batch_size giving " + lower + num((micro_batches / pp + 1) * pp) +
                          " micro-batches, or pipeline_schedule 1f1b");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Orders.

PipelineAction forward(int32_t micro_batch, int32_t chunk = 0) {
  return {Kind::forward, micro_batch, chunk};
}
PipelineAction backward(int32_t micro_batch, int32_t chunk = 0) {
  return {Kind::backward, micro_batch, chunk};
}

// Without a pipeline each micro-batch's backward follows its forward (gradient accumulation; Megatron's
// forward_backward_no_pipelining).
PipelineOrder accumulation_order(int32_t micro_batches) {
  PipelineOrder order;
  for (int32_t mb = 0; mb < micro_batches; ++mb) {
    order.push_back(forward(mb));
    order.push_back(backward(mb));
  }
  return order;
}

// ScheduleGPipe: every forward, then every backward, both in micro-batch order.
PipelineOrder gpipe_order(int32_t micro_batches) {
  PipelineOrder order;
  for (int32_t mb = 0; mb < micro_batches; ++mb) order.push_back(forward(mb));
  for (int32_t mb = 0; mb < micro_batches; ++mb) order.push_back(backward(mb));
  return order;
}

// The shape shared by both Megatron pipelined schedules, over "virtual micro-batches" k = 0 … total-1: `warmup`
// forwards, then (forward warmup+k, backward k) pairs until the forwards run out, then the remaining backwards.
template <typename ForwardAt, typename BackwardAt>
PipelineOrder warmup_steady_cooldown(int32_t total, int32_t warmup, ForwardAt forward_at, BackwardAt backward_at) {
  PipelineOrder order;
  order.reserve(2 * static_cast<size_t>(total));
  for (int32_t k = 0; k < warmup; ++k) order.push_back(forward_at(k));
  const int32_t steady = total - warmup;
  for (int32_t k = 0; k < steady; ++k) {
    order.push_back(forward_at(warmup + k));
    order.push_back(backward_at(k));
  }
  for (int32_t k = steady; k < total; ++k) order.push_back(backward_at(k));
  return order;
}

// forward_backward_pipelining_without_interleaving: one chunk, forwards and backwards both in micro-batch order.
PipelineOrder one_f_one_b_order(int32_t micro_batches, int32_t warmup) {
  return warmup_steady_cooldown(
      micro_batches, warmup, [](int32_t k) { return forward(k); }, [](int32_t k) { return backward(k); });
}

// get_schedule_table with groups of pp micro-batches (M a multiple of pp): virtual micro-batch k belongs to group
// k / (pp·v); inside a group the chunks take turns, each running the group's pp micro-batches.
struct TableEntry {
  int32_t micro_batch;
  int32_t chunk;
};
TableEntry schedule_table_entry(int32_t k, int32_t pp, int32_t virtual_stages) {
  const int32_t group_size = pp * virtual_stages;
  const int32_t in_group = k % group_size;
  return {(k / group_size) * pp + in_group % pp, in_group / pp};
}

// forward_backward_pipelining_with_interleaving: forwards walk the table; backwards walk it too, but through the
// chunks in reverse (get_model_chunk_id with forward=False), each chunk's micro-batches still in order.
PipelineOrder interleaved_order(int32_t pp, int32_t virtual_stages, int32_t micro_batches, int32_t warmup) {
  const auto forward_at = [=](int32_t k) {
    const TableEntry e = schedule_table_entry(k, pp, virtual_stages);
    return forward(e.micro_batch, e.chunk);
  };
  const auto backward_at = [=](int32_t k) {
    const TableEntry e = schedule_table_entry(k, pp, virtual_stages);
    return backward(e.micro_batch, virtual_stages - 1 - e.chunk);
  };
  return warmup_steady_cooldown(micro_batches * virtual_stages, warmup, forward_at, backward_at);
}

// ScheduleZBVZeroBubble._calculate_single_rank_operations (torch/distributed/pipelining/schedules.py, pytorch
// 00722e648b): chunk 0 is stage `rank`, chunk 1 stage 2pp-1-rank. Warm-up: 2(pp-rank)-1 chunk-0 forwards, `rank`
// pairs of (chunk-1, chunk-0) forwards, then pp-rank rounds of a chunk-1 forward with its I and W; steady rounds of
// F, I, W on chunk 0 then on chunk 1; cool-down: `rank` pairs of I on both chunks, pp-rank chunk-0 (I, W), then the
// deferred W of chunk 1 and chunk 0. It plans max(2pp-1, M) micro-batches and drops the actions beyond M.
PipelineOrder zbv_order(int32_t pp, int32_t micro_batches, int32_t rank) {
  using K = Kind;
  const int32_t planned = std::max(2 * pp - 1, micro_batches);
  PipelineOrder all;
  int32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  const auto add = [&](K kind, int32_t chunk, int32_t mb) { all.push_back({kind, mb, chunk}); };
  for (int32_t i = 0; i < 2 * (pp - rank) - 1; ++i) add(K::forward, 0, f0++);
  for (int32_t i = 0; i < rank; ++i) {
    add(K::forward, 1, f1++);
    add(K::forward, 0, f0++);
  }
  for (int32_t i = 0; i < pp - rank; ++i) {
    add(K::forward, 1, f1++);
    add(K::backward_input, 1, b1);
    add(K::backward_weight, 1, b1++);
  }
  while (f1 < f0 || f0 < planned) {
    if (f0 < planned) add(K::forward, 0, f0++);
    add(K::backward_input, 0, b0);
    add(K::backward_weight, 0, b0++);
    add(K::forward, 1, f1++);
    add(K::backward_input, 1, b1);
    add(K::backward_weight, 1, b1++);
  }
  int32_t w0 = b0, w1 = b1;
  for (int32_t i = 0; i < rank; ++i) {
    add(K::backward_input, 0, b0++);
    add(K::backward_input, 1, b1++);
  }
  for (int32_t i = 0; i < pp - rank; ++i) {
    add(K::backward_input, 0, b0++);
    add(K::backward_weight, 0, w0++);
  }
  while (w1 < b1) add(K::backward_weight, 1, w1++);
  while (w0 < b0) add(K::backward_weight, 0, w0++);
  FSDPSIM_CHECK(w0 == b0 && b0 == f0 && w1 == b1 && b1 == f1, "zbv: every forward has its I and W");
  PipelineOrder order;
  for (const PipelineAction& a : all) {
    if (a.micro_batch < micro_batches) order.push_back(a);
  }
  return order;
}

// ScheduleDualPipeV._calculate_single_rank_operations (same file and commit), after DeepSeek's DualPipe: eight steps
// of forwards, full backwards (B), input-gradient backwards (I) whose weight gradients (W) queue up and run where the
// schedule has a gap, and overlapped pairs — a forward of one chunk with a full backward of the other — which run
// here as the forward, then the backward (one compute stream: their overlap hides communication, not compute).
PipelineOrder dualpipev_order(int32_t pp, int32_t micro_batches, int32_t rank) {
  using K = Kind;
  PipelineOrder order;
  std::array<int32_t, 2> forwards{}, backwards{};   // per chunk: the next micro-batch to run forward / backward
  std::deque<std::pair<int32_t, int32_t>> weights;  // (chunk, micro-batch) of deferred weight gradients
  const auto add = [&](K kind, int32_t chunk) {
    const auto c = static_cast<size_t>(chunk);
    if (kind == K::forward) {
      order.push_back({kind, forwards[c]++, chunk});
      return;
    }
    if (kind == K::backward_input) weights.emplace_back(chunk, backwards[c]);
    order.push_back({kind, backwards[c]++, chunk});
  };
  const auto weight_if_pending = [&] {
    if (weights.empty()) return;
    order.push_back({K::backward_weight, weights.front().second, weights.front().first});
    weights.pop_front();
  };
  const auto overlapped = [&](int32_t forward_chunk, int32_t backward_chunk) {
    add(K::forward, forward_chunk);
    add(K::backward, backward_chunk);
  };
  for (int32_t i = 0; i < (pp - rank - 1) * 2; ++i) add(K::forward, 0);  // step 1: F0
  for (int32_t i = 0; i < rank + 1; ++i) {                               // step 2: F0 F1
    add(K::forward, 0);
    add(K::forward, 1);
  }
  for (int32_t i = 0; i < pp - rank - 1; ++i) {  // step 3: I1 W F1
    add(K::backward_input, 1);
    weight_if_pending();
    add(K::forward, 1);
  }
  for (int32_t i = 0; i < micro_batches - 2 * pp + rank + 1; ++i) {  // step 4: F0B1, F1B0
    if (i == 0 && rank == pp - 1) {
      add(K::forward, 0);  // not overlapped, to shrink the bubble
      add(K::backward, 1);
    } else {
      overlapped(0, 1);
    }
    overlapped(1, 0);
  }
  for (int32_t i = 0; i < pp - rank - 1; ++i) {  // step 5: B1, F1B0
    add(K::backward, 1);
    overlapped(1, 0);
  }
  bool zero_bubble = false;
  for (int32_t i = 0; i < rank + 1; ++i) {  // step 6: B1 B0, the second half as I
    if (i == (rank + 1) / 2 && rank % 2 == 1) zero_bubble = true;
    add(zero_bubble ? K::backward_input : K::backward, 1);
    if (i == (rank + 1) / 2 && rank % 2 == 0) zero_bubble = true;
    add(zero_bubble ? K::backward_input : K::backward, 0);
  }
  for (int32_t i = 0; i < pp - rank - 1; ++i) {  // step 7: W B0
    weight_if_pending();
    add(zero_bubble ? K::backward_input : K::backward, 0);
  }
  for (int32_t i = 0; i < rank + 1; ++i) weight_if_pending();  // step 8: W
  FSDPSIM_CHECK(weights.empty() && forwards[0] == micro_batches && forwards[1] == micro_batches &&
                    backwards[0] == micro_batches && backwards[1] == micro_batches,
                "dualpipev: every forward has its backward");
  return order;
}

// Re-raises an argument error at the source of the key it names.
[[noreturn]] void rethrow_at(const ConfigError& error, const FsdpConfig& config) {
  throw ConfigError(config.where(error.key()), error.key(), error.problem(), error.fix());
}

// ---------------------------------------------------------------------------------------------------------------
// Layer splits.

// Megatron's uneven split: the first and/or last pipeline rank hold the layers the configuration names, spread
// evenly over their chunks; the ranks in between (the other end too when only one is named) share the rest.
std::vector<int32_t> uneven_rank_layers(int32_t layers, const FsdpConfig& config) {
  const int32_t pp = config.pp;
  const int32_t v = config.virtual_pipeline_stages;
  const int32_t first = config.first_stage_layers;
  const int32_t last = config.last_stage_layers;
  const bool has_first = first > 0;
  const bool has_last = last > 0;

  if (pp == 1) {
    const std::string key = has_first ? "first_stage_layers" : "last_stage_layers";
    throw ConfigError(config.where(key), key, "pp is 1: the only stage holds all " + num(layers) + " layers",
                      "set " + key + " to 0, or pp to 2 or more");
  }
  // TransformerConfig refuses uneven first/last stages together with the embedding or loss counted as a layer.
  if (config.account_for_embedding_in_pipeline_split || config.account_for_loss_in_pipeline_split) {
    const std::string key = config.account_for_embedding_in_pipeline_split ? "account_for_embedding_in_pipeline_split"
                                                                           : "account_for_loss_in_pipeline_split";
    throw ConfigError(config.where(key), key,
                      "Megatron-core does not combine it with first_stage_layers / last_stage_layers",
                      "set " + key + " to false, or first_stage_layers and last_stage_layers to 0");
  }
  for (const auto& [key, count] : {std::pair<std::string, int32_t>{"first_stage_layers", first},
                                   std::pair<std::string, int32_t>{"last_stage_layers", last}}) {
    if (count > 0 && count % v != 0) {
      throw ConfigError(
          config.where(key), key,
          num(count) + " layers do not spread evenly over virtual_pipeline_stages=" + num(v) + " chunks",
          "use a multiple of " + num(v) + ": " + nearest_valid(count, layers, [v](int64_t c) { return c % v == 0; }));
    }
  }

  const int32_t middle_ranks = pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
  const int32_t middle_layers = layers - first - last;
  // The key to blame for the middle ranks' share: the one set (the first one when both are).
  const std::string key = has_first ? "first_stage_layers" : "last_stage_layers";
  const int32_t other_end = has_first ? last : first;
  const auto middle_divides = [&](int64_t candidate) {
    const int64_t rest = layers - other_end - candidate;
    if (candidate % v != 0 || rest < 0) return false;
    if (middle_ranks == 0) return rest == 0;
    return rest > 0 && rest % (static_cast<int64_t>(middle_ranks) * v) == 0;
  };
  const int32_t named = has_first ? first : last;
  const std::string alternatives = nearest_valid(named, layers, middle_divides);
  const std::string fix = alternatives.empty() ? "choose first_stage_layers and last_stage_layers that leave the "
                                                 "middle ranks a multiple of their chunk count"
                                               : "set " + key + " to " + alternatives;
  if (middle_layers < 0) {
    throw ConfigError(config.where(key), key,
                      "first_stage_layers + last_stage_layers = " + num(first + last) + " exceed the model's " +
                          num(layers) + " layers",
                      fix);
  }
  // TransformerConfig: middle ranks and middle layers come together or not at all.
  if (middle_ranks == 0 && middle_layers != 0) {
    throw ConfigError(config.where(key), key,
                      "pp=" + num(pp) + " has no middle rank for the " + num(middle_layers) +
                          " layers the first and last stage leave",
                      fix);
  }
  if (middle_ranks > 0 && (middle_layers == 0 || middle_layers % (static_cast<int64_t>(middle_ranks) * v) != 0)) {
    throw ConfigError(config.where(key), key,
                      "the " + num(middle_layers) + " layers left do not split evenly over " + num(middle_ranks) +
                          " middle ranks x virtual_pipeline_stages=" + num(v) + " chunks",
                      fix);
  }

  std::vector<int32_t> per_rank(static_cast<size_t>(pp), middle_ranks > 0 ? middle_layers / middle_ranks : 0);
  if (has_first) per_rank.front() = first;
  if (has_last) per_rank.back() = last;
  return per_rank;
}

// Megatron's even split (get_num_layers_to_build): the embedding and the loss, when accounted for, count as one layer
// each, so the split divides layers + 1 (+ 1) over pp·v chunks.
int32_t even_chunk_layers(int32_t layers, const FsdpConfig& config) {
  const int64_t pp = config.pp;
  const int64_t v = config.virtual_pipeline_stages;
  const int32_t extra =
      (config.account_for_embedding_in_pipeline_split ? 1 : 0) + (config.account_for_loss_in_pipeline_split ? 1 : 0);
  const int64_t counted = static_cast<int64_t>(layers) + extra;
  const std::string what = num(layers) + " layers" +
                           (extra > 0 ? " (" + num(counted) + " counting the embedding and loss accounted for)" : "");
  if (counted % pp != 0) {
    const std::string pps = nearest_valid(pp, counted, [&](int64_t c) { return counted % (c * v) == 0; });
    throw ConfigError(config.where("pp"), "pp", what + " do not split evenly over pp=" + num(pp) + " ranks",
                      pps.empty() ? "set first_stage_layers / last_stage_layers for an uneven split"
                                  : "pp " + pps + " would divide them, or set first_stage_layers / last_stage_layers");
  }
  if (counted % (pp * v) != 0) {
    const int64_t per_rank = counted / pp;
    const std::string vs = nearest_valid(v, per_rank, [&](int64_t c) { return per_rank % c == 0; });
    throw ConfigError(config.where("virtual_pipeline_stages"), "virtual_pipeline_stages",
                      what + " give " + num(per_rank) +
                          " per rank, which do not split over virtual_pipeline_stages=" + num(v) + " chunks",
                      "virtual_pipeline_stages " + (vs.empty() ? std::string("1") : vs) + " would divide them");
  }
  return static_cast<int32_t>(counted / (pp * v));
}

}  // namespace

// torchtitan places the stages the same way (_get_pp_rank_to_stage_indices_mapping in
// torchtitan/distributed/pipeline_parallel.py @ b5bcd76c66: "v" style for ScheduleZBVZeroBubble and ScheduleDualPipeV,
// rank r holds stages r and num_stages-1-r; "loop" style r + s·pp otherwise).
int32_t virtual_stage_of(PipelineSchedule schedule, int32_t pp, int32_t chunk, int32_t rank) {
  if (is_v_shaped(schedule)) return chunk == 0 ? rank : 2 * pp - 1 - rank;
  return chunk * pp + rank;
}

int32_t rank_of_virtual_stage(PipelineSchedule schedule, int32_t pp, int32_t virtual_stage) {
  if (is_v_shaped(schedule)) return virtual_stage < pp ? virtual_stage : 2 * pp - 1 - virtual_stage;
  return virtual_stage % pp;
}

std::vector<PipelineOrder> pipeline_orders(PipelineSchedule schedule, int32_t pp, int32_t virtual_stages,
                                           int32_t micro_batches) {
  check_schedule_arguments(schedule, pp, virtual_stages, micro_batches);
  std::vector<PipelineOrder> orders;
  orders.reserve(static_cast<size_t>(pp));
  for (int32_t rank = 0; rank < pp; ++rank) {
    const int32_t warmup =
        is_v_shaped(schedule) ? 0 : warmup_forwards(schedule, pp, virtual_stages, micro_batches, rank);
    if (pp == 1) {
      orders.push_back(accumulation_order(micro_batches));
    } else if (schedule == PipelineSchedule::gpipe) {
      orders.push_back(gpipe_order(micro_batches));
    } else if (schedule == PipelineSchedule::one_f_one_b) {
      orders.push_back(one_f_one_b_order(micro_batches, warmup));
    } else if (schedule == PipelineSchedule::zbv) {
      orders.push_back(zbv_order(pp, micro_batches, rank));
    } else if (schedule == PipelineSchedule::dualpipev) {
      orders.push_back(dualpipev_order(pp, micro_batches, rank));
    } else {
      orders.push_back(interleaved_order(pp, virtual_stages, micro_batches, warmup));
    }
  }
  return orders;
}

std::vector<PipelineOrder> pipeline_orders(const FsdpConfig& config, int32_t micro_batches) {
  try {
    return pipeline_orders(config.pipeline_schedule, config.pp, config.virtual_pipeline_stages, micro_batches);
  } catch (const ConfigError& error) {
    rethrow_at(error, config);
  }
}

int32_t warmup_forwards(PipelineSchedule schedule, int32_t pp, int32_t virtual_stages, int32_t micro_batches,
                        int32_t rank) {
  check_schedule_arguments(schedule, pp, virtual_stages, micro_batches);
  FSDPSIM_CHECK(rank >= 0 && rank < pp, "pipeline rank " + num(rank) + " outside 0.." + num(pp - 1));
  if (pp == 1) return 0;  // forward_backward_no_pipelining: no warm-up
  if (schedule == PipelineSchedule::gpipe) return micro_batches;
  if (is_v_shaped(schedule)) {
    // The forwards before the rank's first backward of any kind, read off its order.
    const PipelineOrder order = schedule == PipelineSchedule::zbv ? zbv_order(pp, micro_batches, rank)
                                                                  : dualpipev_order(pp, micro_batches, rank);
    int32_t forwards = 0;
    while (forwards < static_cast<int32_t>(order.size()) && order[static_cast<size_t>(forwards)].kind == Kind::forward)
      ++forwards;
    return forwards;
  }
  // get_pp_rank_microbatches. Without interleaving the later ranks start 1F1B sooner; with it every rank first runs
  // (v-1) groups of pp chunk-forwards, plus two per rank it has ahead of the last. Either is capped at all of them
  // (are_all_microbatches_in_warmup). Megatron's extra warm-up forward for overlap_moe_expert_parallel_comm is not
  // modelled.
  const int32_t total = micro_batches * virtual_stages;
  const int32_t wanted = schedule == PipelineSchedule::one_f_one_b
                             ? pp - rank - 1
                             : (pp - rank - 1) * 2 + (virtual_stages - 1) * pp;  // microbatch_group_size = pp
  return std::min(wanted, total);
}

LayerSplit split_layers(int32_t layers, const FsdpConfig& config) {
  FSDPSIM_CHECK(layers >= 0, "negative layer count " + num(layers));
  const int32_t pp = config.pp;
  const int32_t v = config.virtual_pipeline_stages;
  if (pp < 1) {
    throw ConfigError(config.where("pp"), "pp", "pp is " + num(pp) + ", a pipeline needs at least one stage",
                      "set pp to 1 (no pipeline) or more");
  }
  if (v < 1) {
    throw ConfigError(config.where("virtual_pipeline_stages"), "virtual_pipeline_stages",
                      "virtual_pipeline_stages is " + num(v) + ", each rank needs at least one chunk",
                      "set virtual_pipeline_stages to 1 or more");
  }
  for (const auto& [key, count] : {std::pair<std::string, int32_t>{"first_stage_layers", config.first_stage_layers},
                                   std::pair<std::string, int32_t>{"last_stage_layers", config.last_stage_layers}}) {
    if (count < 0) {
      throw ConfigError(config.where(key), key, num(count) + " layers", "set " + key + " to 0 (even split) or more");
    }
  }

  const size_t stages = static_cast<size_t>(pp) * static_cast<size_t>(v);
  LayerSplit split;
  split.layers_per_virtual_stage.assign(stages, 0);
  if (!config.pipeline_layout.empty()) {
    const std::vector<LayoutChunk> chunks =
        parse_pipeline_layout(config.pipeline_layout, config.where("pipeline_layout"));
    if (chunks.size() != stages) {
      throw ConfigError(config.where("pipeline_layout"), "pipeline_layout",
                        "the layout has " + num(static_cast<int64_t>(chunks.size())) + " chunks, but pp=" + num(pp) +
                            " × virtual_pipeline_stages=" + num(v) + " = " + num(static_cast<int64_t>(stages)),
                        "give pp × virtual_pipeline_stages chunks separated by |");
    }
    int32_t total = 0;
    for (size_t stage = 0; stage < stages; ++stage) {
      split.layers_per_virtual_stage[stage] = chunks[stage].decoder_layers;
      total += chunks[stage].decoder_layers;
    }
    if (total != layers) {
      throw ConfigError(config.where("pipeline_layout"), "pipeline_layout",
                        "the layout places " + num(total) + " decoder layers (t), the model has " + num(layers),
                        "give exactly " + num(layers) + " t entries");
    }
  } else if (config.first_stage_layers > 0 || config.last_stage_layers > 0) {
    const std::vector<int32_t> per_rank = uneven_rank_layers(layers, config);
    for (size_t stage = 0; stage < stages; ++stage) {
      const int32_t rank = rank_of_virtual_stage(config.pipeline_schedule, pp, static_cast<int32_t>(stage));
      split.layers_per_virtual_stage[stage] = per_rank[static_cast<size_t>(rank)] / v;
    }
  } else {
    split.layers_per_virtual_stage.assign(stages, even_chunk_layers(layers, config));
    // The embedding's share is taken from the model's first chunk, the loss's from its last (get_num_layers_to_build).
    if (config.account_for_embedding_in_pipeline_split) --split.layers_per_virtual_stage.front();
    if (config.account_for_loss_in_pipeline_split) --split.layers_per_virtual_stage.back();
  }

  // get_transformer_layer_offset amounts to the prefix sums in model order.
  split.first_layer.reserve(stages);
  int32_t next = 0;
  for (const int32_t count : split.layers_per_virtual_stage) {
    split.first_layer.push_back(next);
    next += count;
  }
  FSDPSIM_CHECK(next == layers, "the split holds " + num(next) + " of " + num(layers) + " layers");
  return split;
}

LayerSplit torchtitan_split_layers(int32_t layers, const FsdpConfig& config) {
  const int32_t stages = std::max(config.pp, 1) * std::max(config.virtual_pipeline_stages, 1);
  const int32_t effective = layers + 2;
  const int32_t per_stage = effective / stages;
  const int32_t extra = effective % stages;
  if (stages > 1 && per_stage < 1) {
    throw ConfigError(config.where("pp"), "pp",
                      num(stages) + " pipeline stages for " + num(layers) + " layers with the embedding and output",
                      "use at most " + num(effective) + " stages (pp × virtual_pipeline_stages)");
  }
  LayerSplit split;
  int32_t next = 0;
  for (int32_t stage = 0; stage < stages; ++stage) {
    int32_t count = per_stage + (stage < extra ? 1 : 0);
    if (stages == 1) count = layers;
    if (stage == 0 && stages > 1) --count;           // the embedding's share
    if (stage == stages - 1 && stages > 1) --count;  // the output's share
    split.first_layer.push_back(next);
    split.layers_per_virtual_stage.push_back(count);
    next += count;
  }
  FSDPSIM_CHECK(next == layers, "the torchtitan split holds " + num(next) + " of " + num(layers) + " layers");
  return split;
}

bool p2p_overlaps_compute(const FsdpConfig& config) {
  const bool interleaved = config.pipeline_schedule == PipelineSchedule::interleaved_1f1b;
  if (config.overlap_p2p_comm == "false") return false;
  if (config.implementation == Implementation::megatron_fsdp) {
    if (config.overlap_p2p_comm == "true" && !interleaved) {
      throw ConfigError(config.where("overlap_p2p_comm"), "overlap_p2p_comm",
                        "Megatron-LM overlaps pipeline P2P with compute only in the interleaved schedule (it sets "
                        "overlap_p2p_comm False otherwise)",
                        "set overlap_p2p_comm: auto, or pipeline_schedule: interleaved_1f1b");
    }
    return interleaved;
  }
  // torch.distributed.pipelining: Schedule1F1B waits on each fused send/receive; GPipe and the multi-stage schedules
  // keep their send works and wait for them when the step ends.
  return config.overlap_p2p_comm == "true" || config.pipeline_schedule != PipelineSchedule::one_f_one_b;
}

}  // namespace fsdpsim
