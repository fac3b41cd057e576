#pragma once
/// Decoder-only transformer model specs: dense or MoE, MHA/GQA or DeepSeek's MLA. Read from YAML, from a preset,
/// or imported from a Hugging Face config.json.

#include <cstdint>
#include <string>
#include <vector>

namespace fsdpsim {

/// Normalisation layers: RMSNorm has a weight per channel, LayerNorm a weight and a bias.
enum class NormKind : uint8_t { rmsnorm, layernorm };
/// Position encoding: RoPE has no parameters; learned absolute embeddings add max_position_embeddings × hidden.
enum class PositionEmbedding : uint8_t { rope, learned };

/// Mixture-of-experts layers. num_experts == 0 means a dense model.
struct MoeSpec {
  int32_t num_experts = 0;                    ///< routed experts per MoE layer
  int32_t top_k = 0;                          ///< experts per token
  int64_t expert_ffn_hidden_size = 0;         ///< FFN width of one routed expert
  int32_t num_shared_experts = 0;             ///< always-on experts (DeepSeek)
  int64_t shared_expert_ffn_hidden_size = 0;  ///< FFN width of one shared expert (0: same as a routed expert)
  int32_t first_dense_layers = 0;             ///< leading layers with a dense MLP (DeepSeek's first_k_dense_replace)
  int32_t layer_freq = 1;       ///< after those, layers whose index is a multiple of this are MoE (DeepSeek)
  std::vector<int32_t> layers;  ///< explicit MoE layer indices; overrides the two fields above when set
  int32_t pattern_length = 0;   ///< entries of the layer pattern `layers` came from (0: not from a pattern)
  bool operator==(const MoeSpec&) const = default;
};

/// DeepSeek's multi-head latent attention. Disabled when kv_lora_rank == 0.
struct MlaSpec {
  int64_t q_lora_rank = 0;  ///< 0: queries are projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  [[nodiscard]] bool enabled() const { return kv_lora_rank > 0; }
  bool operator==(const MlaSpec&) const = default;
};

/// A decoder-only transformer.
struct ModelSpec {
  std::string name;
  int32_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t ffn_hidden_size = 0;  ///< dense MLP width
  int32_t num_attention_heads = 0;
  int32_t num_kv_heads = 0;  ///< GQA query groups (= heads for MHA)
  int64_t head_dim = 0;      ///< hidden_size / heads unless given
  int64_t vocab_size = 0;
  bool tied_embeddings = false;
  /// DeepSeek-V3's multi-token-prediction modules (Megatron's --mtp-num-layers, HF num_nextn_predict_layers): each an
  /// embedding-and-hidden-state norm pair, a 2h → h projection, one more decoder layer like the last and its final
  /// norm, sharing the embedding and the output layer, which computes one more set of logits and loss per module.
  int32_t mtp_num_layers = 0;
  bool gated_mlp = true;  ///< SwiGLU (gate, up, down) vs a plain two-matrix MLP (GeLU)
  NormKind norm = NormKind::rmsnorm;
  bool linear_bias = false;  ///< biases on every linear layer (GPT-3)
  bool qkv_bias = false;     ///< biases on Q, K, V only (Qwen2)
  bool qk_norm = false;      ///< RMSNorm on queries and keys per head (Qwen3)
  PositionEmbedding position_embedding = PositionEmbedding::rope;
  int64_t max_position_embeddings = 0;  ///< for learned position embeddings
  MoeSpec moe;
  MlaSpec mla;
  bool operator==(const ModelSpec&) const = default;

  [[nodiscard]] bool is_moe() const { return moe.num_experts > 0; }
  /// True when decoder layer `layer` (0-based) has routed experts.
  [[nodiscard]] bool is_moe_layer(int32_t layer) const;
};

/// Parameter counts of the whole model (no parallelism), for checks against published figures.
struct ParameterCount {
  int64_t total = 0;
  int64_t embedding = 0;         ///< input embedding (+ learned positions)
  int64_t output = 0;            ///< final norm + output projection (0 for the projection when tied)
  int64_t dense_layers = 0;      ///< every non-expert parameter of the decoder layers
  int64_t expert_layers = 0;     ///< routed experts' parameters (shared experts count as dense)
  int64_t active_per_token = 0;  ///< parameters touched by one token (top-k experts)
};

/// Counts the parameters of `model`.
ParameterCount count_parameters(const ModelSpec& model);

/// Names of the built-in model presets.
std::vector<std::string> model_preset_names();
/// A preset by name; ConfigError listing the presets (and the closest name) when unknown.
ModelSpec model_preset(const std::string& name);
/// Parses a model YAML document (the schema in docs/inputs/models.md); `source` names it in errors.
ModelSpec parse_model_yaml(const std::string& text, const std::string& source);
/// The model as YAML in the same schema parse_model_yaml reads.
std::string model_to_yaml(const ModelSpec& model);
/// Checks internal consistency (positive sizes, heads dividing, top_k ≤ experts, ...); throws ConfigError.
void check_model(const ModelSpec& model, const std::string& source);

}  // namespace fsdpsim
