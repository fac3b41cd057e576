// torchtitan's pipeline keys turned into fsdpsim's pipeline schedule and layer split (torchtitan_pipeline.h).
#include "frontends/torchtitan_pipeline.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "common/limits.h"
#include "common/text.h"

// What torchtitan does with these keys: torchtitan/distributed/pipeline_parallel.py @ 238fa995 (the split is the same
// at b5bcd76c66: _get_pipeline_metadata and _generate_llm_fqn_per_model_part).

namespace fsdpsim::torchtitan {
namespace {

const std::string kFirstLessPath = "parallelism.pipeline_parallel_first_stage_less_layers";
const std::string kLastLessPath = "parallelism.pipeline_parallel_last_stage_less_layers";
const std::string kLayersPerStagePath = "parallelism.pipeline_parallel_layers_per_stage";

/// One torch.distributed.pipelining schedule as torchtitan names it (get_schedule_class, matched case-insensitively):
/// single-stage schedules run one model chunk per rank, multi-stage ("looped") ones several.
struct TorchSchedule {
  std::string name;
  bool multi_stage;
  std::optional<PipelineSchedule> modelled;
};

const std::vector<TorchSchedule>& torch_schedules() {
  static const std::vector<TorchSchedule> all{
      {"1F1B", false, PipelineSchedule::one_f_one_b},
      {"GPipe", false, PipelineSchedule::gpipe},
      {"Interleaved1F1B", true, PipelineSchedule::interleaved_1f1b},
      {"LoopedBFS", true, std::nullopt},
      {"InterleavedZeroBubble", true, std::nullopt},
      {"ZBVZeroBubble", true, PipelineSchedule::zbv},
      {"DualPipeV", true, PipelineSchedule::dualpipev},
      {"PipelineScheduleSingle", false, std::nullopt},
      {"PipelineScheduleMulti", true, std::nullopt},
  };
  return all;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return text;
}

const TorchSchedule& read_schedule(const Toml& t, const std::string& path) {
  const std::string name = t.string(path).value_or("1F1B");  // Parallelism.pipeline_parallel_schedule default
  std::vector<std::string> names;
  for (const TorchSchedule& s : torch_schedules()) {
    names.push_back(s.name);
    if (lower(s.name) != lower(name)) continue;
    if (!s.modelled) {
      t.fail(path, "the " + s.name + " pipeline schedule is not modelled",
             "use one fsdpsim models: 1F1B, GPipe, Interleaved1F1B, ZBVZeroBubble or DualPipeV");
    }
    return s;
  }
  t.fail(path, "unknown pipeline schedule '" + name + "'" + did_you_mean(name, names),
         "torch.distributed.pipelining's schedules: " + join(names) +
             "; fsdpsim models 1F1B, GPipe, Interleaved1F1B, ZBVZeroBubble and DualPipeV");
}

std::string counts_text(const std::vector<int64_t>& counts) {
  std::vector<std::string> items;
  for (const int64_t n : counts) items.push_back(std::to_string(n));
  return "[" + join(items) + "]";
}

// torchtitan kept the pipeline keys in [experimental] until 785c34c99 (2025-03-18).
std::string pipeline_key(const Toml& t, const std::string& leaf) {
  return first_present(t, {"parallelism." + leaf, "experimental." + leaf});
}

// A schedule read from a CSV file, an explicit split into model parts and explicit split points are refused: fsdpsim
// models the even split torchtitan makes without them.
void refuse_explicit_split(const Toml& t) {
  const std::string csv_path = pipeline_key(t, "pipeline_parallel_schedule_csv");
  if (!t.string(csv_path).value_or("").empty()) {
    t.fail(
        csv_path, "a pipeline schedule read from a CSV file is not modelled",
        "leave pipeline_parallel_schedule_csv empty and name a schedule (1F1B, Interleaved1F1B, ZBVZeroBubble, ...)");
  }
  if (t.has("parallelism.module_fqns_per_model_part")) {
    t.fail("parallelism.module_fqns_per_model_part", "an explicit split into model parts is not modelled",
           "leave it out: torchtitan then splits evenly (pipeline_parallel_layers_per_stage)");
  }
  const std::string split_path = pipeline_key(t, "pipeline_parallel_split_points");
  if (!t.strings(split_path).value_or(std::vector<std::string>{}).empty()) {
    t.fail(split_path, "explicit pipeline split points are not modelled",
           "leave them out: torchtitan then splits evenly (pipeline_parallel_layers_per_stage)");
  }
}

/// What torchtitan's split weighs: the decoder layers, and the embedding and the output as that many layers each.
struct StageWeights {
  int64_t first = 1;                 ///< pipeline_parallel_first_stage_less_layers: the embedding's weight
  int64_t last = 1;                  ///< pipeline_parallel_last_stage_less_layers: the output's weight
  std::optional<int64_t> per_stage;  ///< pipeline_parallel_layers_per_stage, when given
  int64_t effective = 0;             ///< layers + first + last
  std::string text;                  ///< "(32 layers + 1 + 1 for the embedding and the output)", for messages
};

StageWeights read_stage_weights(const Toml& t, const ModelSpec& model) {
  StageWeights w;
  w.first = t.integer(kFirstLessPath, 0, limits::kMaxLayers).value_or(1);
  w.last = t.integer(kLastLessPath, 0, limits::kMaxLayers).value_or(1);
  w.per_stage = t.integer(kLayersPerStagePath, 1, limits::kMaxLayers);
  const int64_t layers = model.num_layers;
  w.effective = layers + w.first + w.last;
  w.text = "(" + std::to_string(layers) + " layers + " + std::to_string(w.first) + " + " + std::to_string(w.last) +
           " for the embedding and the output)";
  return w;
}

// pipeline_parallel_layers_per_stage = k makes ceil(effective / k) virtual stages, which must be a multiple of pp:
// one per rank for 1F1B and GPipe, at least two for Interleaved1F1B, exactly two for the V schedules. Without it, the
// schedule's own count: 1 per rank, 2 for multi-stage schedules.
int64_t stages_per_rank_of(const Toml& t, const TorchSchedule& schedule, const StageWeights& w, const Degrees& d) {
  if (!w.per_stage) return schedule.multi_stage ? 2 : 1;
  const int64_t per_stage = *w.per_stage;
  const int64_t stages = (w.effective + per_stage - 1) / per_stage;
  const std::string derived =
      w.text + " / " + std::to_string(per_stage) + " = " + std::to_string(stages) + " virtual stages";
  if (stages % d.pp != 0) {
    t.fail(kLayersPerStagePath, derived + " do not divide over pipeline_parallel_degree " + std::to_string(d.pp),
           "choose pipeline_parallel_layers_per_stage so that the stages are a multiple of " + std::to_string(d.pp));
  }
  const int64_t stages_per_rank = stages / d.pp;
  if (!schedule.multi_stage && stages_per_rank != 1) {
    t.fail(kLayersPerStagePath,
           derived + " but " + schedule.name + " runs one stage per rank (" + std::to_string(d.pp) + " stages)",
           "set pipeline_parallel_layers_per_stage = " + std::to_string((w.effective + d.pp - 1) / d.pp) +
               ", or use Interleaved1F1B");
  }
  if (schedule.multi_stage && stages_per_rank < 2) {
    t.fail(kLayersPerStagePath, derived + " but " + schedule.name + " needs at least two stages per rank",
           "lower pipeline_parallel_layers_per_stage");
  }
  if (schedule.modelled && is_v_shaped(*schedule.modelled) && stages_per_rank != 2) {
    t.fail(kLayersPerStagePath, derived + " but " + schedule.name + " runs exactly two stages per rank",
           "set pipeline_parallel_layers_per_stage = " + std::to_string((w.effective + 2 * d.pp - 1) / (2 * d.pp)));
  }
  return stages_per_rank;
}

// The decoder layers of each stage: the weights split evenly, the first (effective mod stages) stages getting one
// more, the first stage giving up `first` layers to the embedding and the last `last` to the output.
std::vector<int64_t> stage_layer_counts(const StageWeights& w, int64_t stages) {
  const int64_t even = w.effective / stages;
  const int64_t extra = w.effective % stages;
  std::vector<int64_t> counts;
  for (int64_t s = 0; s < stages; ++s) {
    counts.push_back(even + (s < extra ? 1 : 0) - (s == 0 ? w.first : 0) - (s == stages - 1 ? w.last : 0));
  }
  return counts;
}

// A split neither of fsdpsim's forms gives: refused, with layers per stage that would divide evenly when one exists.
[[noreturn]] void refuse_split(const Toml& t, const TorchSchedule& schedule, const StageWeights& w, const Degrees& d,
                               const std::vector<int64_t>& counts, const std::string& split_key) {
  std::string fix =
      "choose the stages so that " + w.text + " = " + std::to_string(w.effective) + " divide evenly over them";
  for (int64_t per_rank = 2; schedule.multi_stage && per_rank <= 64; ++per_rank) {
    if (w.effective % (d.pp * per_rank) == 0 &&
        w.effective / (d.pp * per_rank) >= std::max<int64_t>({w.first, w.last, 1})) {
      fix += ", e.g. pipeline_parallel_layers_per_stage = " + std::to_string(w.effective / (d.pp * per_rank)) + " (" +
             std::to_string(per_rank) + " stages per rank)";
      break;
    }
  }
  t.fail(split_key,
         "torchtitan splits the layers over " + std::to_string(counts.size()) + " stages as " + counts_text(counts) +
             ", which fsdpsim's pipeline split (Megatron-core's: even, with only the first and last pipeline rank "
             "different) cannot express",
         fix);
}

// fsdpsim's split is Megatron-core's: an even one with the embedding and the loss counted as a layer each, or the
// first and last pipeline rank's own counts and the rest even; a torchtitan split that neither gives is refused.
void set_stage_split(const Toml& t, FsdpConfig& c, const TorchSchedule& schedule, const StageWeights& w,
                     const Degrees& d, int64_t stages_per_rank, const std::string& split_key) {
  const int64_t stages = d.pp * stages_per_rank;
  if (stages > w.effective || std::max(w.first, w.last) > w.effective / stages) {
    t.fail(split_key,
           std::to_string(stages) + " pipeline stages for " + w.text +
               ": torchtitan needs at least max(first, last) layers per stage",
           "use fewer stages or lower pipeline_parallel_first/last_stage_less_layers");
  }
  const std::vector<int64_t> counts = stage_layer_counts(w, stages);
  const bool middle_even = std::all_of(counts.begin() + 1, counts.end() - 1, [&](int64_t n) { return n == counts[1]; });
  if (w.effective % stages == 0 && w.first <= 1 && w.last <= 1) {
    // Megatron-core's --account-for-embedding/loss-in-pipeline-split: (layers + 1 + 1) / stages per virtual stage,
    // one fewer in the first and the last.
    set_key(c, t, "account_for_embedding_in_pipeline_split", w.first == 1 ? "true" : "false", kFirstLessPath);
    set_key(c, t, "account_for_loss_in_pipeline_split", w.last == 1 ? "true" : "false", kLastLessPath);
  } else if (stages_per_rank == 1 && middle_even && counts.front() > 0 && counts.back() > 0) {
    // One stage per rank: the first and last rank's own counts, the rest even (--decoder-first/last-...-num-layers).
    set_key(c, t, "first_stage_layers", std::to_string(counts.front()), kFirstLessPath);
    set_key(c, t, "last_stage_layers", std::to_string(counts.back()), kLastLessPath);
  } else {
    refuse_split(t, schedule, w, d, counts, split_key);
  }
}

}  // namespace

// torchtitan's pipeline split: the embedding and the output weigh first_stage_less_layers and last_stage_less_layers
// decoder layers (1 each by default); the layers and these weights split evenly over pp × (stages per rank) virtual
// stages (stages_per_rank_of, stage_layer_counts), which set_stage_split expresses in Megatron-core's keys.
void apply_pipeline(const Toml& t, FsdpConfig& c, const ModelSpec& model, const Degrees& d) {
  set_key(c, t, "pp", std::to_string(d.pp), d.pp_path);
  refuse_explicit_split(t);
  const std::string schedule_path = pipeline_key(t, "pipeline_parallel_schedule");
  const TorchSchedule& schedule = read_schedule(t, schedule_path);
  const StageWeights weights = read_stage_weights(t, model);
  const int64_t stages_per_rank = stages_per_rank_of(t, schedule, weights, d);
  const std::string split_key = weights.per_stage ? kLayersPerStagePath : d.pp_path;
  set_stage_split(t, c, schedule, weights, d, stages_per_rank, split_key);
  set_key(c, t, "virtual_pipeline_stages", std::to_string(stages_per_rank), split_key);
  set_key(c, t, "pipeline_schedule", std::string(to_string(*schedule.modelled)), schedule_path);
  // torch.distributed.pipelining defers FSDP2's reduce-scatter to the last micro-batch's backward
  // (PipelineStage.backward_maybe_with_nosync: set_requires_gradient_sync(False), then post_backward on the last).
  set_key(c, t, "gradient_sync", "last_micro_batch", d.pp_path);
}

}  // namespace fsdpsim::torchtitan
