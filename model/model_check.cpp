// Consistency checks of a ModelSpec. Every failure is a ConfigError naming the key, where it was written, and what
// would be valid.
#include <cstdio>
#include <string>

#include "common/limits.h"
#include "common/text.h"
#include "common/units.h"
#include "model/model.h"
#include "model/model_internal.h"

namespace fsdpsim {
namespace {

void require(bool ok, const KeyLocator& locate, const std::string& key, const std::string& problem,
             const std::string& fix) {
  if (!ok) throw ConfigError(locate(key), key, problem, fix);
}

void require_positive(int64_t value, const KeyLocator& locate, const std::string& key) {
  require(value >= 1, locate, key, key + "=" + std::to_string(value) + " must be at least 1", "give a positive size");
}

// "1, 2, 4, 8": the divisors of n, for messages.
std::string divisors_of(int64_t n) {
  std::vector<std::string> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(std::to_string(d));
  }
  return join(out);
}

// A size above `limit` (common/limits.h) is refused before anything multiplies it.
void require_at_most(int64_t value, int64_t limit, const KeyLocator& locate, const std::string& key) {
  require(value <= limit, locate, key, key + "=" + std::to_string(value) + " is beyond what fsdpsim models",
          "use at most " + std::to_string(limit) + " (see the limits in docs/hardening.md)");
}

// Every dimension against its limit, so that the tensor shapes below (products of two dimensions) fit in int64.
void check_limits(const ModelSpec& m, const KeyLocator& locate) {
  require_at_most(m.num_layers, limits::kMaxLayers, locate, "num_layers");
  require_at_most(m.hidden_size, limits::kMaxHiddenSize, locate, "hidden_size");
  require_at_most(m.ffn_hidden_size, limits::kMaxFfnHiddenSize, locate, "ffn_hidden_size");
  require_at_most(m.num_attention_heads, limits::kMaxHeads, locate, "num_attention_heads");
  require_at_most(m.head_dim, limits::kMaxHeadDim, locate, "head_dim");
  require_at_most(m.vocab_size, limits::kMaxVocabSize, locate, "vocab_size");
  require_at_most(m.max_position_embeddings, limits::kMaxSequence, locate, "max_position_embeddings");
  require_at_most(m.moe.num_experts, limits::kMaxExperts, locate, "moe.num_experts");
  require_at_most(m.moe.num_shared_experts, limits::kMaxExperts, locate, "moe.num_shared_experts");
  require_at_most(m.moe.expert_ffn_hidden_size, limits::kMaxFfnHiddenSize, locate, "moe.expert_ffn_hidden_size");
  require_at_most(m.moe.shared_expert_ffn_hidden_size, limits::kMaxFfnHiddenSize, locate,
                  "moe.shared_expert_ffn_hidden_size");
  require_at_most(m.mla.q_lora_rank, limits::kMaxLoraRank, locate, "mla.q_lora_rank");
  require_at_most(m.mla.kv_lora_rank, limits::kMaxLoraRank, locate, "mla.kv_lora_rank");
  require_at_most(m.mla.qk_nope_head_dim, limits::kMaxHeadDim, locate, "mla.qk_nope_head_dim");
  require_at_most(m.mla.qk_rope_head_dim, limits::kMaxHeadDim, locate, "mla.qk_rope_head_dim");
  require_at_most(m.mla.v_head_dim, limits::kMaxHeadDim, locate, "mla.v_head_dim");
}

// The whole model's parameters, summed in long double so that an absurd model is measured, not overflowed; each
// tensor's rows and cols are products of at most two dimensions already bounded by check_limits().
long double parameters_upper_bound(const ModelSpec& m) {
  const auto sum = [](const std::vector<ParamTensor>& tensors) {
    long double total = 0;
    for (const auto& t : tensors) {
      total += static_cast<long double>(t.rows) * static_cast<long double>(t.cols) * static_cast<long double>(t.copies);
    }
    return total;
  };
  long double total = sum(embedding_tensors(m)) + sum(output_tensors(m));
  long double dense_layer = -1, moe_layer = -1;  // every dense layer has the same tensors, and every MoE layer
  for (int32_t layer = 0; layer < m.num_layers; ++layer) {
    long double& cached = m.is_moe_layer(layer) ? moe_layer : dense_layer;
    if (cached < 0) cached = sum(layer_tensors(m, layer));
    total += cached;
  }
  return total;
}

void check_sizes(const ModelSpec& m, const KeyLocator& locate) {
  require(!m.name.empty(), locate, "name", "the model has no name", "give name: <model name>");
  require_positive(m.num_layers, locate, "num_layers");
  require_positive(m.hidden_size, locate, "hidden_size");
  require_positive(m.ffn_hidden_size, locate, "ffn_hidden_size");
  require_positive(m.num_attention_heads, locate, "num_attention_heads");
  require_positive(m.num_kv_heads, locate, "num_kv_heads");
  require_positive(m.head_dim, locate, "head_dim");
  require_positive(m.vocab_size, locate, "vocab_size");
  require(
      m.num_attention_heads % m.num_kv_heads == 0, locate, "num_kv_heads",
      "num_attention_heads=" + std::to_string(m.num_attention_heads) +
          " is not a multiple of num_kv_heads=" + std::to_string(m.num_kv_heads),
      "each KV head serves a whole group of query heads; valid num_kv_heads: " + divisors_of(m.num_attention_heads));
  require(m.max_position_embeddings >= 0, locate, "max_position_embeddings",
          "max_position_embeddings must not be negative", "give 0 (unused with rope) or the context length");
  require(m.position_embedding != PositionEmbedding::learned || m.max_position_embeddings >= 1, locate,
          "max_position_embeddings", "learned position embeddings need max_position_embeddings",
          "give max_position_embeddings: <context length>, e.g. 2048");
  require(!(m.linear_bias && m.qkv_bias), locate, "qkv_bias", "qkv_bias is implied by linear_bias",
          "remove qkv_bias (linear_bias already puts biases on Q, K and V)");
}

// MoE fields without experts, or experts with impossible fields.
void check_moe(const ModelSpec& m, const KeyLocator& locate) {
  const MoeSpec& e = m.moe;
  if (e.num_experts == 0) {
    require(e == MoeSpec{}, locate, "moe.num_experts", "MoE fields are set but moe.num_experts is 0",
            "set moe.num_experts (routed experts per MoE layer) or remove the moe fields");
    return;
  }
  require_positive(e.num_experts, locate, "moe.num_experts");
  require(e.top_k >= 1 && e.top_k <= e.num_experts, locate, "moe.top_k",
          "top_k=" + std::to_string(e.top_k) + " is not between 1 and num_experts=" + std::to_string(e.num_experts),
          "a token is routed to between 1 and num_experts experts");
  require_positive(e.expert_ffn_hidden_size, locate, "moe.expert_ffn_hidden_size");
  require(e.num_shared_experts >= 0, locate, "moe.num_shared_experts", "num_shared_experts must not be negative",
          "give 0 or more");
  require(e.shared_expert_ffn_hidden_size >= 0, locate, "moe.shared_expert_ffn_hidden_size",
          "shared_expert_ffn_hidden_size must not be negative", "give 0 (same as a routed expert) or a width");
  require(e.shared_expert_ffn_hidden_size == 0 || e.num_shared_experts > 0, locate, "moe.shared_expert_ffn_hidden_size",
          "shared_expert_ffn_hidden_size is set but num_shared_experts is 0",
          "set moe.num_shared_experts or remove shared_expert_ffn_hidden_size");
  require(e.first_dense_layers >= 0 && e.first_dense_layers < m.num_layers, locate, "moe.first_dense_layers",
          "first_dense_layers=" + std::to_string(e.first_dense_layers) + " leaves no MoE layer in " +
              std::to_string(m.num_layers) + " layers",
          "valid: 0 to " + std::to_string(m.num_layers - 1));
  require(e.layer_freq >= 1, locate, "moe.layer_freq", "layer_freq must be at least 1",
          "1 makes every layer after first_dense_layers an MoE layer");
  require(e.layers.empty() || (e.first_dense_layers == 0 && e.layer_freq == 1), locate, "moe.layers",
          "moe.layers is given together with first_dense_layers/layer_freq",
          "give either the explicit list moe.layers or first_dense_layers and layer_freq");
  for (size_t i = 0; i < e.layers.size(); ++i) {
    require(e.layers[i] >= 0 && e.layers[i] < m.num_layers, locate, "moe.layers",
            "layer " + std::to_string(e.layers[i]) + " is outside 0.." + std::to_string(m.num_layers - 1),
            "list 0-based decoder layer indices");
    require(i == 0 || e.layers[i] > e.layers[i - 1], locate, "moe.layers", "moe.layers is not strictly increasing",
            "list each MoE layer once, in increasing order");
  }
  bool any_moe = false;
  for (int32_t layer = 0; layer < m.num_layers && !any_moe; ++layer) any_moe = m.is_moe_layer(layer);
  require(any_moe, locate, "moe.layer_freq", "no decoder layer is an MoE layer",
          "lower first_dense_layers or layer_freq, or list moe.layers");
}

void check_mla(const ModelSpec& m, const KeyLocator& locate) {
  const MlaSpec& a = m.mla;
  if (!a.enabled()) {
    require(a == MlaSpec{}, locate, "mla.kv_lora_rank", "MLA fields are set but mla.kv_lora_rank is 0",
            "set mla.kv_lora_rank (the compressed KV width) or remove the mla fields");
    return;
  }
  require(a.q_lora_rank >= 0, locate, "mla.q_lora_rank", "q_lora_rank must not be negative",
          "give 0 (queries projected directly) or the compressed query width");
  require_positive(a.qk_nope_head_dim, locate, "mla.qk_nope_head_dim");
  require_positive(a.qk_rope_head_dim, locate, "mla.qk_rope_head_dim");
  require_positive(a.v_head_dim, locate, "mla.v_head_dim");
  require(m.num_kv_heads == m.num_attention_heads, locate, "num_kv_heads",
          "MLA has one key/value head per query head, but num_kv_heads=" + std::to_string(m.num_kv_heads),
          "set num_kv_heads to num_attention_heads=" + std::to_string(m.num_attention_heads) + " or remove it");
  const int64_t qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  require(m.head_dim == qk_dim, locate, "head_dim",
          "with MLA head_dim is the query/key head width qk_nope_head_dim + qk_rope_head_dim = " +
              std::to_string(qk_dim) + ", not " + std::to_string(m.head_dim),
          "remove head_dim or set it to " + std::to_string(qk_dim));
  require(!m.linear_bias && !m.qkv_bias, locate, m.linear_bias ? "linear_bias" : "qkv_bias",
          "biases are not modelled with MLA", "set linear_bias and qkv_bias to false");
  require(!m.qk_norm, locate, "qk_norm", "qk_norm does not apply to MLA (it normalises the latents instead)",
          "set qk_norm: false");
}

}  // namespace

void check_model_at(const ModelSpec& model, const KeyLocator& locate) {
  check_limits(model, locate);  // first: the messages of the other checks list divisors up to these sizes
  check_sizes(model, locate);
  check_moe(model, locate);
  check_mla(model, locate);
  const long double params = parameters_upper_bound(model);
  require(params <= static_cast<long double>(limits::kMaxParameters), locate, "num_layers",
          "a model of " + format_huge_count(params) + " parameters is beyond what fsdpsim models",
          "at most " + format_huge_count(static_cast<long double>(limits::kMaxParameters)) +
              " parameters (about 1.1e15; the largest published models have ~2e12)");
}

void check_model(const ModelSpec& model, const std::string& source) {
  check_model_at(model, [&source](const std::string&) { return SourceLocation{source, 0, 0}; });
}

}  // namespace fsdpsim
