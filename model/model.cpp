// Parameter tensors of a decoder-only transformer, in Megatron-Core's layout (megatron/core/models/gpt,
// megatron/core/transformer/{attention,multi_latent_attention,mlp}.py, megatron/core/transformer/moe/), and the
// parameter counts built from them.
#include <algorithm>

#include "model/model.h"
#include "model/model_internal.h"

namespace fsdpsim {
namespace {

// A norm over `width` channels: RMSNorm has a weight, LayerNorm a weight and a bias (Zhang & Sennrich 2019; Ba et al.
// 2016).
void add_norm(std::vector<ParamTensor>& out, const ModelSpec& m, const std::string& name, int64_t width) {
  out.push_back({name + ".weight", width, 1, TpSplit::replicated});
  if (m.norm == NormKind::layernorm) out.push_back({name + ".bias", width, 1, TpSplit::replicated});
}

// Multi-head / grouped-query attention: one fused QKV weight [(heads + 2·kv_heads)·head_dim, hidden] (column-parallel)
// and the output projection [hidden, heads·head_dim] (row-parallel), as Megatron-Core's SelfAttention builds them.
void add_gqa(std::vector<ParamTensor>& out, const ModelSpec& m) {
  const int64_t q = int64_t{m.num_attention_heads} * m.head_dim;
  const int64_t kv = int64_t{m.num_kv_heads} * m.head_dim;
  out.push_back({"self_attention.linear_qkv.weight", q + 2 * kv, m.hidden_size, TpSplit::column});
  if (m.linear_bias || m.qkv_bias) out.push_back({"self_attention.linear_qkv.bias", q + 2 * kv, 1, TpSplit::column});
  if (m.qk_norm) {  // Qwen3: one norm over head_dim shared by every query head, one for the keys
    add_norm(out, m, "self_attention.q_layernorm", m.head_dim);
    add_norm(out, m, "self_attention.k_layernorm", m.head_dim);
  }
  out.push_back({"self_attention.linear_proj.weight", m.hidden_size, q, TpSplit::row});
  if (m.linear_bias) out.push_back({"self_attention.linear_proj.bias", m.hidden_size, 1, TpSplit::replicated});
}

// DeepSeek-V2/V3 multi-head latent attention (DeepSeek-V3 report §2.1.1, arXiv:2412.19437). Megatron-Core's
// MLASelfAttention builds the down-projections as TELinear(parallel_mode="duplicated") — replicated over TP — and the
// up-projections column-parallel.
void add_mla(std::vector<ParamTensor>& out, const ModelSpec& m) {
  const MlaSpec& a = m.mla;
  const int64_t heads = m.num_attention_heads;
  const int64_t qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0) {
    out.push_back({"self_attention.linear_q_down_proj.weight", a.q_lora_rank, m.hidden_size, TpSplit::replicated});
    add_norm(out, m, "self_attention.q_layernorm", a.q_lora_rank);
    out.push_back({"self_attention.linear_q_up_proj.weight", heads * qk_dim, a.q_lora_rank, TpSplit::column});
  } else {
    out.push_back({"self_attention.linear_q_proj.weight", heads * qk_dim, m.hidden_size, TpSplit::column});
  }
  out.push_back({"self_attention.linear_kv_down_proj.weight", a.kv_lora_rank + a.qk_rope_head_dim, m.hidden_size,
                 TpSplit::replicated});
  add_norm(out, m, "self_attention.kv_layernorm", a.kv_lora_rank);
  out.push_back({"self_attention.linear_kv_up_proj.weight", heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank,
                 TpSplit::column});
  out.push_back({"self_attention.linear_proj.weight", m.hidden_size, heads * a.v_head_dim, TpSplit::row});
}

// An MLP of width `ffn`: fc1 [ffn or 2·ffn (gate and up, SwiGLU), hidden] column-parallel, fc2 [hidden, ffn]
// row-parallel (Megatron-Core's MLP; Shazeer 2020 for the gated form). `copies` > 1 marks routed experts.
void add_mlp(std::vector<ParamTensor>& out, const ModelSpec& m, const std::string& prefix, int64_t ffn, bool expert,
             int64_t copies) {
  const int64_t fc1_rows = (m.gated_mlp ? 2 : 1) * ffn;
  out.push_back({prefix + ".linear_fc1.weight", fc1_rows, m.hidden_size, TpSplit::column, expert, copies});
  if (m.linear_bias) out.push_back({prefix + ".linear_fc1.bias", fc1_rows, 1, TpSplit::column, expert, copies});
  out.push_back({prefix + ".linear_fc2.weight", m.hidden_size, ffn, TpSplit::row, expert, copies});
  if (m.linear_bias)
    out.push_back({prefix + ".linear_fc2.bias", m.hidden_size, 1, TpSplit::replicated, expert, copies});
}

// A MoE block: router [experts, hidden] (replicated), the routed experts, and the shared experts as one MLP of width
// num_shared × shared width (Megatron-Core's SharedExpertMLP; DeepSeek-V3's DeepseekV3MoE does the same).
void add_moe(std::vector<ParamTensor>& out, const ModelSpec& m) {
  const MoeSpec& e = m.moe;
  out.push_back({"mlp.router.weight", e.num_experts, m.hidden_size, TpSplit::replicated});
  add_mlp(out, m, "mlp.experts", e.expert_ffn_hidden_size, true, e.num_experts);
  if (e.num_shared_experts > 0) {
    const int64_t width =
        e.shared_expert_ffn_hidden_size > 0 ? e.shared_expert_ffn_hidden_size : e.expert_ffn_hidden_size;
    add_mlp(out, m, "mlp.shared_experts", width * e.num_shared_experts, false, 1);
  }
}

int64_t sum_elems(const std::vector<ParamTensor>& tensors, bool expert) {
  int64_t total = 0;
  for (const auto& t : tensors) {
    if (t.expert == expert) total += t.elems();
  }
  return total;
}

}  // namespace

bool ModelSpec::is_moe_layer(int32_t layer) const {
  if (!is_moe() || layer < 0 || layer >= num_layers) return false;
  if (!moe.layers.empty()) return std::find(moe.layers.begin(), moe.layers.end(), layer) != moe.layers.end();
  // DeepSeek-V3's rule (HF modeling_deepseek.py DeepseekV3DecoderLayer; Megatron's integer --moe-layer-freq):
  // layer ≥ first_k_dense_replace and layer % moe_layer_freq == 0.
  return layer >= moe.first_dense_layers && moe.layer_freq > 0 && layer % moe.layer_freq == 0;
}

std::vector<ParamTensor> mtp_extra_tensors(const ModelSpec& model) {
  std::vector<ParamTensor> out;
  add_norm(out, model, "mtp.enorm", model.hidden_size);
  add_norm(out, model, "mtp.hnorm", model.hidden_size);
  // eh_proj: [embedding; hidden] (2h) → h, a column-parallel linear (multi_token_prediction.py).
  out.push_back({"mtp.eh_proj.weight", model.hidden_size, 2 * model.hidden_size, TpSplit::column});
  add_norm(out, model, "mtp.final_layernorm", model.hidden_size);
  return out;
}

std::vector<ParamTensor> embedding_tensors(const ModelSpec& model) {
  std::vector<ParamTensor> out;
  out.push_back({"embedding.word_embeddings.weight", model.vocab_size, model.hidden_size, TpSplit::vocab});
  if (model.position_embedding == PositionEmbedding::learned) {
    // GPT-2/GPT-3 learned absolute positions; Megatron keeps them whole on every TP rank.
    out.push_back({"embedding.position_embeddings.weight", model.max_position_embeddings, model.hidden_size,
                   TpSplit::replicated});
  }
  return out;
}

std::vector<ParamTensor> output_tensors(const ModelSpec& model) {
  std::vector<ParamTensor> out;
  add_norm(out, model, "decoder.final_layernorm", model.hidden_size);
  if (!model.tied_embeddings) {
    out.push_back({"output_layer.weight", model.vocab_size, model.hidden_size, TpSplit::vocab});
  }
  return out;
}

std::vector<ParamTensor> layer_tensors(const ModelSpec& model, int32_t layer) {
  std::vector<ParamTensor> out;
  add_norm(out, model, "input_layernorm", model.hidden_size);
  if (model.mla.enabled()) {
    add_mla(out, model);
  } else {
    add_gqa(out, model);
  }
  add_norm(out, model, "pre_mlp_layernorm", model.hidden_size);
  if (model.is_moe_layer(layer)) {
    add_moe(out, model);
  } else {
    add_mlp(out, model, "mlp", model.ffn_hidden_size, false, 1);
  }
  return out;
}

ParameterCount count_parameters(const ModelSpec& model) {
  ParameterCount count;
  count.embedding = sum_elems(embedding_tensors(model), false);
  count.output = sum_elems(output_tensors(model), false);
  int64_t active_experts = 0;
  for (int32_t layer = 0; layer < model.num_layers; ++layer) {
    const auto tensors = layer_tensors(model, layer);
    count.dense_layers += sum_elems(tensors, false);
    const int64_t experts = sum_elems(tensors, true);
    count.expert_layers += experts;
    // A token passes through top_k routed experts of each MoE layer; experts / num_experts is one expert's size.
    if (experts > 0) active_experts += experts / model.moe.num_experts * model.moe.top_k;
  }
  // Each MTP module: its own norms and projection, and one decoder layer like the last (get_gpt_mtp_block_spec).
  for (int32_t k = 0; k < model.mtp_num_layers; ++k) {
    const auto tensors = layer_tensors(model, model.num_layers - 1);
    count.dense_layers += sum_elems(tensors, false) + sum_elems(mtp_extra_tensors(model), false);
    const int64_t experts = sum_elems(tensors, true);
    count.expert_layers += experts;
    if (experts > 0) active_experts += experts / model.moe.num_experts * model.moe.top_k;
  }
  count.total = count.embedding + count.output + count.dense_layers + count.expert_layers;
  count.active_per_token = count.embedding + count.output + count.dense_layers + active_experts;
  return count;
}

}  // namespace fsdpsim
