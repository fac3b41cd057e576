// Hugging Face config.json import. Field names and defaults follow the transformers configuration classes
// (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig, DeepseekV3Config) and the
// model code that reads them (modeling_<arch>.py). Fields that do not change parameter shapes (rope_theta,
// rms_norm_eps, router scoring, ...) are ignored.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_location.h"
#include "common/limits.h"
#include "common/text.h"
#include "frontends/model_files.h"
#include "model/model.h"
#include "model/model_check.h"

namespace fsdpsim {
namespace {

using nlohmann::json;

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names{"LlamaForCausalLM",     "MistralForCausalLM", "MixtralForCausalLM",
                                              "Qwen2ForCausalLM",     "Qwen3ForCausalLM",   "Qwen3MoeForCausalLM",
                                              "DeepseekV3ForCausalLM"};
  return names;
}

// Typed access to the top-level fields; every problem names the file and the field.
class JsonFields {
 public:
  JsonFields(const json& root, const std::string& text, std::string source)
      : root_(root), text_(text), source_(std::move(source)) {}

  /// Throws at the line of `key` in the file (or the file alone when the key is absent).
  [[noreturn]] void fail(const std::string& key, const std::string& problem, const std::string& fix) const {
    throw ConfigError(json_path_location(text_, key, source_), key, problem, fix);
  }
  // Missing and null both mean "not given" (HF writes null for unset optional fields, e.g. q_lora_rank).
  [[nodiscard]] bool has(const std::string& key) const { return root_.contains(key) && !root_.at(key).is_null(); }

  [[nodiscard]] int64_t integer(const std::string& key) const {
    if (!has(key)) fail(key, "missing required field", "add \"" + key + "\" as in the model's published config.json");
    const json& value = root_.at(key);
    if (!value.is_number_integer()) fail(key, "expected a whole number, got " + value.dump(), "write e.g. 4096");
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      fail(key, value.dump() + " is beyond what fsdpsim models", "give the model's real size");
    }
    return value.get<int64_t>();
  }
  /// A field fsdpsim keeps in 32 bits (layers, heads, experts): refused, not truncated, when it does not fit.
  [[nodiscard]] int32_t integer32(const std::string& key) const { return narrow(key, integer(key)); }
  [[nodiscard]] int32_t integer32_or(const std::string& key, int64_t fallback) const {
    return narrow(key, integer_or(key, fallback));
  }
  [[nodiscard]] int64_t integer_or(const std::string& key, int64_t fallback) const {
    return has(key) ? integer(key) : fallback;
  }
  [[nodiscard]] int32_t narrow(const std::string& key, int64_t value) const {
    if (value > INT32_MAX || value < INT32_MIN) {
      fail(key, std::to_string(value) + " is beyond what fsdpsim models",
           "give the model's real size (see the limits in docs/hardening.md)");
    }
    return static_cast<int32_t>(value);
  }
  [[nodiscard]] bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& value = root_.at(key);
    if (!value.is_boolean()) fail(key, "expected true or false, got " + value.dump(), "write true or false");
    return value.get<bool>();
  }
  [[nodiscard]] std::vector<int64_t> int_list_or_empty(const std::string& key) const {
    std::vector<int64_t> out;
    if (!has(key)) return out;
    const json& value = root_.at(key);
    if (!value.is_array()) fail(key, "expected a list of layer indices, got " + value.dump(), "write e.g. [0, 1]");
    for (const json& item : value) {
      if (!item.is_number_integer()) fail(key, "expected whole numbers, got " + item.dump(), "write e.g. [0, 1]");
      out.push_back(item.get<int64_t>());
    }
    return out;
  }
  [[nodiscard]] std::string architecture() const {
    const std::string fix = "give \"architectures\": [\"<one of: " + join(supported_architectures()) + ">\"]";
    if (!has("architectures")) fail("architectures", "missing required field", fix);
    const json& value = root_.at("architectures");
    if (!value.is_array() || value.empty() || !value[0].is_string()) {
      fail("architectures", "expected a list holding the model class name, got " + value.dump(), fix);
    }
    return value[0].get<std::string>();
  }

 private:
  const json& root_;
  const std::string& text_;
  std::string source_;
};

json parse_json(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(json_parse_error_location(text, e.byte, source), "", std::string("malformed JSON: ") + e.what(),
                      "fix the syntax at this position");
  } catch (const json::exception& e) {
    // Not only syntax: a number too large for a double (1e999) is an out_of_range error while parsing.
    throw ConfigError(SourceLocation{source, 0, 0}, "", std::string("unreadable JSON: ") + e.what(),
                      "write numbers as plain integers or decimals within range");
  }
}

// "…/Qwen3-8B/config.json" → "Qwen3-8B"; "…/llama3.json" → "llama3".
std::string model_name(const std::string& source) {
  const std::filesystem::path path(source);
  if (path.filename() == "config.json" && path.has_parent_path() && !path.parent_path().filename().empty()) {
    return path.parent_path().filename().string();
  }
  return path.stem().string();
}

// Llama-style biases: attention_bias puts biases on Q, K, V and O, mlp_bias on the MLP. Both together are
// linear_bias; one without the other has no ModelSpec equivalent.
void read_biases(const JsonFields& f, ModelSpec& m) {
  const bool attention = f.boolean_or("attention_bias", false);
  const bool mlp = f.boolean_or("mlp_bias", false);
  if (attention != mlp) {
    f.fail(attention ? "attention_bias" : "mlp_bias", "biases on only the attention or only the MLP are not modelled",
           "write the model as fsdpsim YAML with linear_bias or qkv_bias");
  }
  m.linear_bias = attention && mlp;
}

// The fields every supported architecture shares (LlamaConfig's names).
ModelSpec read_common(const JsonFields& f, bool head_dim_required) {
  ModelSpec m;
  m.hidden_size = f.integer("hidden_size");
  m.ffn_hidden_size = f.integer("intermediate_size");
  m.num_layers = f.integer32("num_hidden_layers");
  m.num_attention_heads = f.integer32("num_attention_heads");
  m.num_kv_heads = f.integer32_or("num_key_value_heads", m.num_attention_heads);
  m.vocab_size = f.integer("vocab_size");
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);
  m.max_position_embeddings = f.integer_or("max_position_embeddings", 0);
  if (head_dim_required || f.has("head_dim")) {
    m.head_dim = f.integer("head_dim");
  } else if (m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads == 0) {
    m.head_dim = m.hidden_size / m.num_attention_heads;
  } else {
    f.fail("head_dim", "missing, and hidden_size is not a multiple of num_attention_heads", "add \"head_dim\"");
  }
  return m;
}

// Qwen3-MoE: layer i has experts when i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
// (Qwen3MoeDecoderLayer). The usual case (every layer) keeps the compact form; anything else lists the layers.
void read_qwen3_moe(const JsonFields& f, ModelSpec& m) {
  m.moe.num_experts = f.integer32("num_experts");
  m.moe.top_k = f.integer32("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = f.integer("moe_intermediate_size");
  const int64_t step = f.integer_or("decoder_sparse_step", 1);
  if (step < 1) f.fail("decoder_sparse_step", "must be at least 1", "1 makes every layer sparse");
  const std::vector<int64_t> listed_layers = f.int_list_or_empty("mlp_only_layers");
  const std::set<int64_t> dense_only(listed_layers.begin(), listed_layers.end());
  // The loop below walks every layer: refuse an absurd count here rather than spin (check_model says it again).
  if (m.num_layers > limits::kMaxLayers) {
    f.fail("num_hidden_layers", std::to_string(m.num_layers) + " layers is beyond what fsdpsim models",
           "at most " + std::to_string(limits::kMaxLayers) + " decoder layers (see the limits in docs/hardening.md)");
  }
  std::vector<int32_t> layers;
  for (int32_t i = 0; i < m.num_layers; ++i) {
    const bool listed = dense_only.count(i) > 0;
    if (!listed && (i + 1) % step == 0) layers.push_back(i);
  }
  if (static_cast<int32_t>(layers.size()) != m.num_layers) m.moe.layers = layers;
  // norm_topk_prob only rescales routing weights: no parameters, no FLOPs worth modelling.
}

// DeepSeek-V3 (DeepseekV3Config defaults for the optional MoE fields: n_shared_experts 1, first_k_dense_replace 3,
// moe_layer_freq 1). The multi-token-prediction module (num_nextn_predict_layers) is not part of the main model.
ModelSpec read_deepseek_v3(const JsonFields& f) {
  ModelSpec m = read_common(f, false);
  if (f.boolean_or("attention_bias", false)) {
    f.fail("attention_bias", "biases are not modelled with MLA", "set \"attention_bias\": false");
  }
  m.mla.q_lora_rank = f.integer_or("q_lora_rank", 0);
  m.mla.kv_lora_rank = f.integer("kv_lora_rank");
  m.mla.qk_nope_head_dim = f.integer("qk_nope_head_dim");
  m.mla.qk_rope_head_dim = f.integer("qk_rope_head_dim");
  m.mla.v_head_dim = f.integer("v_head_dim");
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;  // the width attention runs at
  m.moe.num_experts = f.integer32("n_routed_experts");
  m.moe.top_k = f.integer32("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = f.integer("moe_intermediate_size");
  m.moe.num_shared_experts = f.integer32_or("n_shared_experts", 1);
  m.moe.first_dense_layers = f.integer32_or("first_k_dense_replace", 3);
  m.moe.layer_freq = f.integer32_or("moe_layer_freq", 1);
  return m;
}

ModelSpec read_architecture(const JsonFields& f, const std::string& arch) {
  if (arch == "DeepseekV3ForCausalLM") return read_deepseek_v3(f);
  const bool qwen3 = arch == "Qwen3ForCausalLM" || arch == "Qwen3MoeForCausalLM";
  ModelSpec m = read_common(f, qwen3);  // Qwen3 decouples head_dim from hidden/heads, so it must be explicit
  if (arch == "Qwen2ForCausalLM") {
    m.qkv_bias = true;  // Qwen2Attention: bias=True on q_proj, k_proj, v_proj only
  } else {
    read_biases(f, m);
  }
  m.qk_norm = qwen3;  // Qwen3Attention: q_norm and k_norm, RMSNorm over head_dim
  if (arch == "Qwen3MoeForCausalLM") read_qwen3_moe(f, m);
  if (arch == "MixtralForCausalLM") {
    m.moe.num_experts = f.integer32("num_local_experts");
    m.moe.top_k = f.integer32("num_experts_per_tok");
    m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;  // every Mixtral layer is MoE with experts of intermediate_size
  }
  // Mistral's sliding_window is not modelled: attention is counted as full causal attention, which over-counts
  // attention FLOPs only when seq_length exceeds the window.
  return m;
}

// The config.json fields a ModelSpec key is read from (the names differ between architectures).
std::vector<std::string> hf_fields_of(const std::string& key) {
  static const std::map<std::string, std::vector<std::string>> fields{
      {"num_layers", {"num_hidden_layers"}},
      {"ffn_hidden_size", {"intermediate_size"}},
      {"num_kv_heads", {"num_key_value_heads"}},
      {"max_position_embeddings", {"max_position_embeddings"}},
      {"tied_embeddings", {"tie_word_embeddings"}},
      {"moe.num_experts", {"num_experts", "num_local_experts", "n_routed_experts"}},
      {"moe.top_k", {"num_experts_per_tok"}},
      {"moe.expert_ffn_hidden_size", {"moe_intermediate_size", "intermediate_size"}},
      {"moe.num_shared_experts", {"n_shared_experts"}},
      {"moe.first_dense_layers", {"first_k_dense_replace"}},
      {"moe.layer_freq", {"moe_layer_freq", "decoder_sparse_step"}},
      {"moe.layers", {"mlp_only_layers", "decoder_sparse_step"}},
  };
  if (const auto it = fields.find(key); it != fields.end()) return it->second;
  const size_t dot = key.find('.');
  return {dot == std::string::npos ? key : key.substr(dot + 1)};  // hidden_size, head_dim, mla.kv_lora_rank, ...
}

}  // namespace

ModelSpec import_hf_config(const std::string& json_text, const std::string& source) {
  const json root = parse_json(json_text, source);
  const JsonFields fields(root, json_text, source);
  if (!root.is_object()) fields.fail("", "expected a JSON object of config fields", "give a Hugging Face config.json");
  const std::string arch = fields.architecture();
  const auto& supported = supported_architectures();
  if (std::find(supported.begin(), supported.end(), arch) == supported.end()) {
    fields.fail("architectures", "unsupported architecture '" + arch + "'" + did_you_mean(arch, supported),
                "supported: " + join(supported));
  }
  ModelSpec model = read_architecture(fields, arch);
  model.name = model_name(source);
  // Model errors point at the config.json field the ModelSpec key was read from.
  check_model_at(model, [&](const std::string& key) {
    for (const std::string& field : hf_fields_of(key)) {
      if (root.is_object() && root.contains(field)) return json_path_location(json_text, field, source);
    }
    return SourceLocation{source, 0, 0};
  });
  return model;
}

}  // namespace fsdpsim
