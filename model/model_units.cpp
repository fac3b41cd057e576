// derive_units: the FSDP units of one rank — embedding, each decoder layer, output — with their per-rank parameters
// (Megatron-Core's tensor-parallel layouts), and the divisibility rules Megatron enforces on the parallel shape.
// GEMMs, collectives and memory are built in model_units_{gemms,comm,memory}.cpp.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/enum_names.h"
#include "common/int_math.h"
#include "common/text.h"
#include "model/model_internal.h"
#include "model/model_units.h"
#include "model/model_units_internal.h"

namespace fsdpsim {
namespace {

// Megatron-LM pads the vocabulary to a multiple of make_vocab_size_divisible_by (default 128) × tp so that every
// rank's vocab-parallel slice is equal and aligned (megatron/training/tokenizer/tokenizer.py,
// _vocab_size_with_padding).
constexpr int64_t kVocabPadMultiple = 128;

// "1, 2, 4, 8, 16, ...": the divisors of n, for messages (the first ten).
std::string valid_values(int64_t n) {
  std::vector<std::string> out;
  for (int64_t v = 1; v <= n && out.size() < 10; ++v) {
    if (n % v == 0) out.push_back(std::to_string(v));
  }
  std::string text = join(out);
  int64_t count = 0;
  for (int64_t v = 1; v <= n; ++v) count += (n % v == 0) ? 1 : 0;
  if (count > 10) text += ", ...";
  return text;
}

[[noreturn]] void shape_error(const std::string& key, const std::string& problem, const std::string& fix) {
  throw ConfigError(SourceLocation{"<parallel shape>", 0, 0}, key, problem, fix);
}

void require_divides(const std::string& key, int64_t value, const std::string& what, int64_t size,
                     int64_t all_constraints) {
  if (size % value == 0) return;
  shape_error(key, key + "=" + std::to_string(value) + " does not divide " + what + "=" + std::to_string(size),
              "valid " + key + ": " + valid_values(all_constraints));
}

bool has_dense_mlp(const ModelSpec& m) {
  for (int32_t layer = 0; layer < m.num_layers; ++layer) {
    if (!m.is_moe_layer(layer)) return true;
  }
  return false;
}

int64_t shared_width(const ModelSpec& m) {
  const MoeSpec& e = m.moe;
  return e.num_shared_experts *
         (e.shared_expert_ffn_hidden_size > 0 ? e.shared_expert_ffn_hidden_size : e.expert_ffn_hidden_size);
}

// Megatron splits heads, KV heads and MLP columns over TP (megatron/core/transformer/attention.py, mlp.py; the
// divide() asserts in TransformerConfig).
void check_tp(const ModelSpec& m, int64_t tp) {
  int64_t all = std::gcd(int64_t{m.num_attention_heads}, int64_t{m.num_kv_heads});
  if (has_dense_mlp(m)) all = std::gcd(all, m.ffn_hidden_size);
  if (m.is_moe() && shared_width(m) > 0) all = std::gcd(all, shared_width(m));
  require_divides("tp", tp, "num_attention_heads", m.num_attention_heads, all);
  require_divides("tp", tp, "num_kv_heads", m.num_kv_heads, all);
  if (has_dense_mlp(m)) require_divides("tp", tp, "ffn_hidden_size", m.ffn_hidden_size, all);
  if (m.is_moe() && shared_width(m) > 0) {
    require_divides("tp", tp, "the shared experts' width", shared_width(m), all);
  }
}

void check_moe_shape(const ModelSpec& m, const RankShape& s) {
  if (!m.is_moe()) {
    if (s.ep > 1)
      shape_error("ep", "ep=" + std::to_string(s.ep) + " needs an MoE model; " + m.name + " has no experts",
                  "valid ep: 1");
    if (s.etp > 1) {
      shape_error("etp", "etp=" + std::to_string(s.etp) + " needs an MoE model; " + m.name + " has no experts",
                  "valid etp: 1");
    }
    return;
  }
  require_divides("ep", s.ep, "moe.num_experts", m.moe.num_experts, m.moe.num_experts);
  require_divides("etp", s.etp, "moe.expert_ffn_hidden_size", m.moe.expert_ffn_hidden_size,
                  m.moe.expert_ffn_hidden_size);
}

// Context parallelism with load balancing splits each sequence into 2·cp chunks, rank i holding chunks i and
// 2cp−1−i (Megatron-Core get_batch_on_this_cp_rank). Sequence parallelism then splits the rank's s/cp tokens over tp
// (scatter_to_sequence_parallel_region needs dim 0 divisible by tp).
void check_sequence(const RankShape& s) {
  if (s.cp > 1 && s.seq_length % (2 * s.cp) != 0) {
    std::vector<std::string> valid;
    for (int64_t cp = 1; cp <= s.seq_length / 2 && valid.size() < 10; cp *= 2) {
      if (cp == 1 || s.seq_length % (2 * cp) == 0) valid.push_back(std::to_string(cp));
    }
    shape_error("cp",
                "seq_length=" + std::to_string(s.seq_length) + " is not divisible by 2·cp=" + std::to_string(2 * s.cp) +
                    " (context-parallel load balancing splits a sequence into 2·cp chunks)",
                "valid cp for this seq_length: " + join(valid) + "; or make seq_length a multiple of " +
                    std::to_string(2 * s.cp));
  }
  const int64_t per_cp = s.seq_length / s.cp;
  if (s.tp > 1 && per_cp % s.tp != 0) {
    shape_error("seq_length",
                "seq_length/cp=" + std::to_string(per_cp) + " is not divisible by tp=" + std::to_string(s.tp) +
                    " (sequence parallelism splits each sequence over the TP ranks)",
                "make seq_length a multiple of " + std::to_string(s.tp * s.cp * (s.cp > 1 ? 2 : 1)));
  }
}

void check_positive(const std::string& key, int64_t value) {
  if (value < 1) shape_error(key, key + "=" + std::to_string(value) + " must be at least 1", "give 1 or more");
}

void check_shape(const ModelSpec& m, const RankShape& s) {
  check_positive("tp", s.tp);
  check_positive("cp", s.cp);
  check_positive("ep", s.ep);
  check_positive("etp", s.etp);
  check_positive("micro_batch_size", s.micro_batch_size);
  check_positive("seq_length", s.seq_length);
  check_tp(m, s.tp);
  check_moe_shape(m, s);
  check_sequence(s);
}

// Attention GEMM shape with exactly the causal pairs: q_rows·kv_cols = s(s+1)/(2cp). With s divisible by 2cp (always
// when cp > 1) q_rows = s/(2cp), kv_cols = s+1; an odd s (cp = 1) uses s rows of (s+1)/2 keys.
void set_attention_shape(UnitDims& d, const RankShape& s) {
  if (s.seq_length % (2 * s.cp) == 0) {
    d.attn_q_rows = s.seq_length / (2 * s.cp);
    d.attn_kv_cols = s.seq_length + 1;
  } else {
    d.attn_q_rows = s.seq_length;
    d.attn_kv_cols = (s.seq_length + 1) / 2;
  }
  d.attn_batch = s.micro_batch_size * d.heads;
  d.score_elems = d.attn_batch * (s.seq_length / s.cp) * s.seq_length;
}

void set_moe_dims(UnitDims& d, const ModelSpec& m, const RankShape& s) {
  d.shared_ffn = shared_width(m) / s.tp;
  d.expert_ffn = m.moe.expert_ffn_hidden_size / s.etp;
  d.local_experts = m.moe.num_experts / s.ep;
  // Each rank routes its T/tp tokens to top_k experts; with balanced routing the EP all-to-all delivers as many
  // pairs back to each rank, the busiest rank of a skewed routing `moe_routing_skew` times as many, and the expert-TP
  // all-gather multiplies them by etp.
  d.dispatch_tokens = d.sp_tokens * m.moe.top_k;
  d.received_tokens = std::llround(static_cast<double>(d.dispatch_tokens) * s.moe_routing_skew);
  d.expert_pairs = d.received_tokens * s.etp;
  d.expert_rows = ceil_div(d.expert_pairs, d.local_experts);
}

UnitDims make_dims(const ModelSpec& m, const RankShape& s) {
  UnitDims d;
  d.model = &m;
  d.shape = s;
  d.act_bytes = dtype_bytes(s.activation_dtype);
  d.tokens = s.micro_batch_size * s.seq_length / s.cp;
  d.sp_tokens = d.tokens / s.tp;
  d.heads = m.num_attention_heads / s.tp;
  d.kv_heads = m.mla.enabled() ? d.heads : m.num_kv_heads / s.tp;
  d.qk_head_dim = m.mla.enabled() ? m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim : m.head_dim;
  d.v_head_dim = m.mla.enabled() ? m.mla.v_head_dim : m.head_dim;
  set_attention_shape(d, s);
  d.padded_vocab = ceil_div(m.vocab_size, kVocabPadMultiple * s.tp) * kVocabPadMultiple * s.tp;
  d.vocab_rank = d.padded_vocab / s.tp;
  d.ffn = m.ffn_hidden_size / s.tp;
  if (m.is_moe()) set_moe_dims(d, m, s);
  return d;
}

int64_t exact_div(int64_t a, int64_t b, const std::string& what) {
  FSDPSIM_CHECK(a % b == 0, what + ": " + std::to_string(a) + " is not divisible by " + std::to_string(b));
  return a / b;
}

// Per-rank parameters of `tensors`: column-parallel rows and row-parallel columns divided by tp (by etp for experts),
// vocab rows padded and divided by tp, experts divided by ep; replicated tensors count fully.
void set_params(const std::vector<ParamTensor>& tensors, const UnitDims& d, bool tp_grad_reduce, UnitCost& unit) {
  for (const ParamTensor& t : tensors) {
    const int64_t split = t.expert ? d.shape.etp : d.shape.tp;
    int64_t rows = t.rows;
    if (t.split == TpSplit::column) rows = exact_div(t.rows, split, t.name);
    if (t.split == TpSplit::vocab) rows = d.vocab_rank;
    const int64_t cols = t.split == TpSplit::row ? exact_div(t.cols, split, t.name) : t.cols;
    const int64_t copies = t.expert ? exact_div(t.copies, d.shape.ep, t.name) : t.copies;
    const int64_t elems = rows * cols * copies;
    const bool linear = t.name.find(".linear_") != std::string::npos || t.name == "output_layer.weight";
    unit.param_tensors.push_back(UnitParam{rows * cols, copies, t.expert, linear});
    if (t.expert) {
      unit.expert_params += elems;
      unit.expert_row_elems = std::max(unit.expert_row_elems, cols);
    } else {
      unit.dense_params += elems;
      unit.dense_row_elems = std::max(unit.dense_row_elems, cols);
      if (tp_grad_reduce && d.shape.tp > 1 && t.split == TpSplit::replicated) unit.tp_replicated_params += elems;
    }
  }
}

int64_t sum_flops(const std::vector<Gemm>& gemms) {
  int64_t total = 0;
  for (const Gemm& g : gemms) total += 2 * g.m * g.n * g.k * g.batch;
  return total;
}

UnitCost embedding_unit(const UnitDims& d) {
  UnitCost unit;
  unit.name = "embedding";
  unit.kind = UnitKind::embedding;
  // Learned positions are added before the sequence-parallel split, so every TP rank computes the same full
  // gradient: no TP reduction (unlike the norms inside the layers).
  set_params(embedding_tensors(*d.model), d, false, unit);
  add_embedding_collectives(d, unit);
  add_embedding_memory(d, unit);
  add_embedding_kernels(d, unit);
  return unit;
}

UnitCost layer_unit(const UnitDims& d, int32_t layer) {
  UnitCost unit;
  unit.name = "layer." + std::to_string(layer);
  unit.kind = UnitKind::decoder_layer;
  unit.layer = layer;
  unit.moe = d.model->is_moe_layer(layer);
  set_params(layer_tensors(*d.model, layer), d, true, unit);
  add_layer_gemms(d, unit.moe, unit);
  add_layer_collectives(d, unit.moe, unit);
  add_layer_memory(d, unit.moe, unit);
  add_layer_op_sac(d, unit);
  add_layer_kernels(d, unit.moe, unit);
  return unit;
}

// Megatron's --first-last-layers-bf16 (--num-layers-at-start-in-bf16, --num-layers-at-end-in-bf16): those decoder
// layers are built outside Transformer Engine's FP8 context (megatron/core/fp8_utils.py, get_fp8_context), so their
// GEMMs run in BF16, nothing is cast to FP8 and their linears save their BF16 inputs.
bool runs_in_bf16(const RankShape& shape, int32_t layer, int32_t num_layers) {
  if (shape.compute_dtype != DType::fp8) return false;
  return layer < shape.bf16_layers_at_start || layer >= num_layers - shape.bf16_layers_at_end;
}

// Such a layer: derived as in a BF16 job, its GEMMs marked to run in BF16 inside the FP8 schedule.
UnitCost bf16_layer_unit(const ModelSpec& model, const RankShape& shape, int32_t layer) {
  RankShape bf16 = shape;
  bf16.compute_dtype = DType::bf16;
  bf16.fp8_saved_inputs = false;
  UnitCost unit = layer_unit(make_dims(model, bf16), layer);
  const auto mark = [](std::vector<Gemm>& gemms) {
    for (Gemm& g : gemms) g.bf16_in_fp8 = !g.attention;
  };
  mark(unit.fwd_gemms);
  mark(unit.bwd_gemms);
  mark(unit.op_sac_recompute_gemms);
  for (ModuleRecompute& r : unit.module_recompute) mark(r.gemms);
  return unit;
}

// A multi-token-prediction module (Megatron-Core MultiTokenPredictionLayer): the decoder's last layer again, after
// enorm/hnorm of the shifted tokens' embeddings and of the hidden states and their 2h → h projection eh_proj.
UnitCost mtp_unit(const UnitDims& d, const UnitCost& last_layer, int32_t k) {
  const ModelSpec& m = *d.model;
  UnitCost unit = last_layer;
  unit.name = "mtp." + std::to_string(k);
  unit.layer = m.num_layers + k;
  set_params(mtp_extra_tensors(m), d, true, unit);
  const int64_t h = m.hidden_size, a = d.act_bytes, h_rank = h / d.shape.tp;
  unit.fwd_gemms.insert(unit.fwd_gemms.begin(), Gemm{"mtp_eh_proj", d.tokens, h_rank, 2 * h, 1, false});
  unit.bwd_gemms.push_back(Gemm{"mtp_eh_proj.dgrad", d.tokens, 2 * h, h_rank, 1, false});
  unit.bwd_gemms.push_back(Gemm{"mtp_eh_proj.wgrad", h_rank, 2 * h, d.tokens, 1, false});
  // Saved: both norms' inputs and the projection's [embedding; hidden] input (2h per token); a full-recompute
  // checkpoint keeps the extra embedding input. The two norms read and write h per token (backward: read two, write
  // one).
  for (size_t mode = 0; mode < unit.saved_activation_bytes.size(); ++mode) {
    const bool full = mode == static_cast<size_t>(Recompute::full);
    unit.saved_activation_bytes[mode] += d.sp_tokens * h * a * (full ? 1 : 4);
  }
  unit.recomputed_activation_bytes += d.sp_tokens * h * a * 4;
  unit.fwd_bytes_touched += 2 * 2 * d.sp_tokens * h * a;
  unit.bwd_bytes_touched += 2 * 3 * d.sp_tokens * h * a;
  add_mtp_kernels(d, unit);
  return unit;
}

// The output layer computes one more set of logits and cross-entropy per MTP module (GPTModel._postprocess): its GEMMs,
// collectives, memory-bound work and saved tensors repeat.
void add_mtp_heads(int32_t modules, UnitCost& output) {
  if (modules <= 0) return;
  const UnitCost main = output;
  for (int32_t k = 0; k < modules; ++k) {
    const std::string suffix = ".mtp" + std::to_string(k);
    for (Gemm g : main.fwd_gemms) output.fwd_gemms.push_back((g.name += suffix, g));
    for (Gemm g : main.bwd_gemms) output.bwd_gemms.push_back((g.name += suffix, g));
    for (UnitCollective c : main.fwd_collectives) output.fwd_collectives.push_back((c.name += suffix, c));
    for (UnitCollective c : main.bwd_collectives) output.bwd_collectives.push_back((c.name += suffix, c));
  }
  for (int64_t& saved : output.saved_activation_bytes) saved *= 1 + modules;
  output.fwd_bytes_touched *= 1 + modules;
  output.bwd_bytes_touched *= 1 + modules;
  output.fwd_kernels *= 1 + modules;
  output.bwd_kernels *= 1 + modules;
  output.fwd_elementwise_kernels *= 1 + modules;
  for (KernelClassBytes* c : {&output.fwd_class_bytes, &output.bwd_class_bytes}) {
    c->unvectorized *= 1 + modules;
    c->reduction *= 1 + modules;
  }
}

UnitCost output_unit(const UnitDims& d) {
  UnitCost unit;
  unit.name = "output";
  unit.kind = UnitKind::output;
  set_params(output_tensors(*d.model), d, true, unit);
  add_output_gemms(d, unit);
  if (d.shape.loss_chunked_backward) {
    // torchtitan's ChunkedLossWrapper runs each chunk's projection backward inside the forward's loop.
    unit.fwd_gemms.insert(unit.fwd_gemms.end(), unit.bwd_gemms.begin(), unit.bwd_gemms.end());
    unit.bwd_gemms.clear();
    unit.weight_grads_in_forward = true;
  }
  add_output_collectives(d, unit);
  add_output_memory(d, unit);
  add_output_kernels(d, unit);
  return unit;
}

}  // namespace

std::vector<RecomputeModule> applicable_modules(const UnitCost& unit, const std::vector<RecomputeModule>& requested) {
  const auto has = [&](RecomputeModule m) {
    return std::find(requested.begin(), requested.end(), m) != requested.end();
  };
  std::vector<RecomputeModule> out;
  for (size_t i = 0; i < kRecomputeModuleCount; ++i) {
    const auto m = static_cast<RecomputeModule>(i);
    if (!has(m)) continue;
    if (m == RecomputeModule::mlp && unit.moe) continue;
    if ((m == RecomputeModule::moe || m == RecomputeModule::moe_act || m == RecomputeModule::shared_experts) &&
        !unit.moe) {
      continue;
    }
    if ((m == RecomputeModule::moe_act || m == RecomputeModule::shared_experts) && has(RecomputeModule::moe)) continue;
    out.push_back(m);
  }
  return out;
}

int64_t selective_saved_bytes(const UnitCost& unit, const std::vector<RecomputeModule>& requested) {
  // saved[selective] is the `none` set less the attention core (Megatron's default recompute_modules = [core_attn]).
  int64_t saved = unit.saved_activation_bytes[static_cast<size_t>(Recompute::selective)] +
                  unit.module_recompute[static_cast<size_t>(RecomputeModule::core_attn)].freed_bytes;
  for (const RecomputeModule m : applicable_modules(unit, requested)) {
    saved -= unit.module_recompute[static_cast<size_t>(m)].freed_bytes;
  }
  return std::max<int64_t>(saved, 0);
}

namespace {
constexpr EnumNames<RecomputeModule, kRecomputeModuleCount> kModuleNames{
    {{{RecomputeModule::core_attn, "core_attn"},
      {RecomputeModule::moe_act, "moe_act"},
      {RecomputeModule::layernorm, "layernorm"},
      {RecomputeModule::mla_up_proj, "mla_up_proj"},
      {RecomputeModule::mlp, "mlp"},
      {RecomputeModule::moe, "moe"},
      {RecomputeModule::shared_experts, "shared_experts"}}}};
}  // namespace

std::string_view to_string(RecomputeModule m) {
  return kModuleNames.name(m);
}

std::optional<RecomputeModule> parse_recompute_module(std::string_view text) {
  return kModuleNames.parse(text);
}

int64_t UnitCost::largest_param_elems(bool include_linear_weights) const {
  int64_t largest = 0;
  for (const UnitParam& p : param_tensors) {
    if (p.linear_weight && !include_linear_weights) continue;
    largest = std::max(largest, p.elems);
  }
  return largest;
}

int64_t UnitCost::fwd_flops() const {
  return sum_flops(fwd_gemms);
}
int64_t UnitCost::bwd_flops() const {
  return sum_flops(bwd_gemms);
}

void check_rank_shape(const ModelSpec& model, const RankShape& shape) {
  check_model(model, "<model " + model.name + ">");  // a spec built in code may not have been checked yet
  check_shape(model, shape);
}

std::vector<UnitCost> derive_units(const ModelSpec& model, const RankShape& shape) {
  check_rank_shape(model, shape);
  const UnitDims d = make_dims(model, shape);
  std::vector<UnitCost> units;
  units.reserve(static_cast<size_t>(model.num_layers) + 2);
  units.push_back(embedding_unit(d));
  // Every dense layer (and every MoE layer) of a rank is the same: derive one of each and copy it; so is every such
  // layer that runs in BF16 under FP8.
  std::optional<UnitCost> dense_layer, moe_layer, dense_bf16_layer, moe_bf16_layer;
  for (int32_t layer = 0; layer < model.num_layers; ++layer) {
    const bool bf16 = runs_in_bf16(shape, layer, model.num_layers);
    std::optional<UnitCost>& prototype =
        model.is_moe_layer(layer) ? (bf16 ? moe_bf16_layer : moe_layer) : (bf16 ? dense_bf16_layer : dense_layer);
    if (!prototype) prototype = bf16 ? bf16_layer_unit(model, shape, layer) : layer_unit(d, layer);
    UnitCost unit = *prototype;
    unit.name = "layer." + std::to_string(layer);
    unit.layer = layer;
    units.push_back(std::move(unit));
  }
  const UnitCost last_layer = units.back();
  for (int32_t k = 0; k < model.mtp_num_layers; ++k) units.push_back(mtp_unit(d, last_layer, k));
  units.push_back(output_unit(d));
  add_mtp_heads(model.mtp_num_layers, units.back());
  // MFU counts the model's FLOPs: forward, plus backward at twice the forward, without recompute
  // (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", §5.1; PaLM App. B).
  // They are the job's per GPU, the mean rank's: the busiest expert-parallel rank of a skewed routing computes more,
  // and counting that would raise its MFU for work the other ranks do not do.
  if (shape.moe_routing_skew != 1.0) {
    RankShape balanced = shape;
    balanced.moe_routing_skew = 1.0;
    const std::vector<UnitCost> mean_rank = derive_units(model, balanced);
    for (size_t i = 0; i < units.size(); ++i) units[i].model_flops = mean_rank[i].model_flops;
    return units;
  }
  // torchtitan's chunked loss runs the output projection's backward GEMMs in the forward: its forward and backward
  // GEMMs together are the three passes.
  for (UnitCost& unit : units) {
    unit.model_flops = unit.weight_grads_in_forward ? unit.fwd_flops() + unit.bwd_flops() : 3 * unit.fwd_flops();
  }
  return units;
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
    case Recompute::selective_op:
      return "selective_op";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view text) {
  if (text == "none") return Recompute::none;
  if (text == "selective") return Recompute::selective;
  if (text == "full") return Recompute::full;
  if (text == "selective_op") return Recompute::selective_op;
  return std::nullopt;
}

}  // namespace fsdpsim
