// The model YAML schema: the keys are ModelSpec's field names, with nested `moe:` and `mla:` sections. Strict: an
// unknown key, a wrong type or an impossible value is a ConfigError naming file:line, the key and the fix.
#include <map>

#include <yaml-cpp/yaml.h>

#include "common/yaml_reader.h"
#include "model/model.h"
#include "model/model_internal.h"

namespace fsdpsim {
namespace {

constexpr int64_t kInt32Max = INT32_MAX;

// Reads typed keys and remembers the line of each, so cross-field checks can point at the key they are about.
class ModelReader {
 public:
  explicit ModelReader(const YamlMap& top) : top_location_(top.location()) {}

  int64_t integer(YamlMap& map, const std::string& key, int64_t min, int64_t max = INT64_MAX) {
    const YamlValue value = map.get(key);
    where_[value.key_path()] = value.location();
    return value.as_int(min, max);
  }
  int64_t integer_or(YamlMap& map, const std::string& key, int64_t fallback, int64_t min, int64_t max = INT64_MAX) {
    return map.has(key) ? integer(map, key, min, max) : fallback;
  }
  bool boolean_or(YamlMap& map, const std::string& key, bool fallback) {
    if (!map.has(key)) return fallback;
    const YamlValue value = map.get(key);
    where_[value.key_path()] = value.location();
    return value.as_bool();
  }
  std::string choice_or(YamlMap& map, const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& choices) {
    if (!map.has(key)) return fallback;
    const YamlValue value = map.get(key);
    where_[value.key_path()] = value.location();
    return value.as_choice(choices);
  }
  void remember(const std::string& key_path, const SourceLocation& where) { where_[key_path] = where; }

  /// The line of `key`, or of its section, or of the document when the key was left at its default.
  [[nodiscard]] SourceLocation locate(const std::string& key) const {
    if (auto it = where_.find(key); it != where_.end()) return it->second;
    const auto dot = key.find('.');
    if (dot != std::string::npos) {
      if (auto it = where_.find(key.substr(0, dot)); it != where_.end()) return it->second;
    }
    return top_location_;
  }

 private:
  SourceLocation top_location_;
  std::map<std::string, SourceLocation> where_;
};

MoeSpec read_moe(YamlMap& top, ModelReader& reader) {
  YamlMap map = top.map("moe");
  reader.remember("moe", map.location());
  MoeSpec moe;
  moe.num_experts = static_cast<int32_t>(reader.integer(map, "num_experts", 1, kInt32Max));
  moe.top_k = static_cast<int32_t>(reader.integer(map, "top_k", 1, kInt32Max));
  moe.expert_ffn_hidden_size = reader.integer(map, "expert_ffn_hidden_size", 1);
  moe.num_shared_experts = static_cast<int32_t>(reader.integer_or(map, "num_shared_experts", 0, 0, kInt32Max));
  moe.shared_expert_ffn_hidden_size = reader.integer_or(map, "shared_expert_ffn_hidden_size", 0, 0);
  moe.first_dense_layers = static_cast<int32_t>(reader.integer_or(map, "first_dense_layers", 0, 0, kInt32Max));
  moe.layer_freq = static_cast<int32_t>(reader.integer_or(map, "layer_freq", 1, 1, kInt32Max));
  if (map.has("layers")) {
    for (const YamlValue& value : map.list("layers")) {
      moe.layers.push_back(static_cast<int32_t>(value.as_int(0, kInt32Max)));
    }
    reader.remember("moe.layers", location_of(map.node()["layers"], map.source()));
  }
  map.finish();
  return moe;
}

MlaSpec read_mla(YamlMap& top, ModelReader& reader) {
  YamlMap map = top.map("mla");
  reader.remember("mla", map.location());
  MlaSpec mla;
  mla.q_lora_rank = reader.integer_or(map, "q_lora_rank", 0, 0);
  mla.kv_lora_rank = reader.integer(map, "kv_lora_rank", 1);
  mla.qk_nope_head_dim = reader.integer(map, "qk_nope_head_dim", 1);
  mla.qk_rope_head_dim = reader.integer(map, "qk_rope_head_dim", 1);
  mla.v_head_dim = reader.integer(map, "v_head_dim", 1);
  map.finish();
  return mla;
}

// head_dim defaults to hidden/heads (to qk_nope + qk_rope with MLA, the width attention runs at).
int64_t read_head_dim(YamlMap& top, ModelReader& reader, const ModelSpec& m) {
  if (top.has("head_dim")) return reader.integer(top, "head_dim", 1);
  if (m.mla.enabled()) return m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  if (m.hidden_size % m.num_attention_heads != 0) {
    throw ConfigError(reader.locate("hidden_size"), "head_dim",
                      "head_dim is not given and hidden_size=" + std::to_string(m.hidden_size) +
                          " is not a multiple of num_attention_heads=" + std::to_string(m.num_attention_heads),
                      "give head_dim explicitly");
  }
  return m.hidden_size / m.num_attention_heads;
}

void read_sizes(YamlMap& top, ModelReader& reader, ModelSpec& m) {
  const YamlValue name = top.get("name");
  reader.remember("name", name.location());
  m.name = name.as_string();
  m.num_layers = static_cast<int32_t>(reader.integer(top, "num_layers", 1, kInt32Max));
  m.hidden_size = reader.integer(top, "hidden_size", 1);
  m.ffn_hidden_size = reader.integer(top, "ffn_hidden_size", 1);
  m.num_attention_heads = static_cast<int32_t>(reader.integer(top, "num_attention_heads", 1, kInt32Max));
  m.num_kv_heads = static_cast<int32_t>(reader.integer_or(top, "num_kv_heads", m.num_attention_heads, 1, kInt32Max));
  m.vocab_size = reader.integer(top, "vocab_size", 1);
  m.max_position_embeddings = reader.integer_or(top, "max_position_embeddings", 0, 0);
  m.mtp_num_layers = static_cast<int32_t>(reader.integer_or(top, "mtp_num_layers", 0, 0, 64));
}

void read_flags(YamlMap& top, ModelReader& reader, ModelSpec& m) {
  m.tied_embeddings = reader.boolean_or(top, "tied_embeddings", false);
  m.gated_mlp = reader.boolean_or(top, "gated_mlp", true);
  m.norm = reader.choice_or(top, "norm", "rmsnorm", {"rmsnorm", "layernorm"}) == "layernorm" ? NormKind::layernorm
                                                                                             : NormKind::rmsnorm;
  m.linear_bias = reader.boolean_or(top, "linear_bias", false);
  m.qkv_bias = reader.boolean_or(top, "qkv_bias", false);
  m.qk_norm = reader.boolean_or(top, "qk_norm", false);
  m.position_embedding = reader.choice_or(top, "position_embedding", "rope", {"rope", "learned"}) == "learned"
                             ? PositionEmbedding::learned
                             : PositionEmbedding::rope;
}

void emit_moe(YAML::Emitter& out, const MoeSpec& moe) {
  out << YAML::Key << "moe" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "num_experts" << YAML::Value << moe.num_experts;
  out << YAML::Key << "top_k" << YAML::Value << moe.top_k;
  out << YAML::Key << "expert_ffn_hidden_size" << YAML::Value << moe.expert_ffn_hidden_size;
  out << YAML::Key << "num_shared_experts" << YAML::Value << moe.num_shared_experts;
  out << YAML::Key << "shared_expert_ffn_hidden_size" << YAML::Value << moe.shared_expert_ffn_hidden_size;
  out << YAML::Key << "first_dense_layers" << YAML::Value << moe.first_dense_layers;
  out << YAML::Key << "layer_freq" << YAML::Value << moe.layer_freq;
  if (!moe.layers.empty()) out << YAML::Key << "layers" << YAML::Value << YAML::Flow << moe.layers;
  out << YAML::EndMap;
}

void emit_mla(YAML::Emitter& out, const MlaSpec& mla) {
  out << YAML::Key << "mla" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "q_lora_rank" << YAML::Value << mla.q_lora_rank;
  out << YAML::Key << "kv_lora_rank" << YAML::Value << mla.kv_lora_rank;
  out << YAML::Key << "qk_nope_head_dim" << YAML::Value << mla.qk_nope_head_dim;
  out << YAML::Key << "qk_rope_head_dim" << YAML::Value << mla.qk_rope_head_dim;
  out << YAML::Key << "v_head_dim" << YAML::Value << mla.v_head_dim;
  out << YAML::EndMap;
}

}  // namespace

ModelSpec parse_model_yaml(const std::string& text, const std::string& source) {
  const YamlDocument doc = load_yaml_text(text, source);
  YamlMap top(doc.root, doc.source, "");
  ModelReader reader(top);
  ModelSpec m;
  read_sizes(top, reader, m);
  read_flags(top, reader, m);
  if (top.has("moe")) m.moe = read_moe(top, reader);
  if (top.has("mla")) m.mla = read_mla(top, reader);
  m.head_dim = read_head_dim(top, reader, m);
  top.finish();
  check_model_at(m, [&reader](const std::string& key) { return reader.locate(key); });
  return m;
}

std::string model_to_yaml(const ModelSpec& m) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << m.name;
  out << YAML::Key << "num_layers" << YAML::Value << m.num_layers;
  out << YAML::Key << "hidden_size" << YAML::Value << m.hidden_size;
  out << YAML::Key << "ffn_hidden_size" << YAML::Value << m.ffn_hidden_size;
  out << YAML::Key << "num_attention_heads" << YAML::Value << m.num_attention_heads;
  out << YAML::Key << "num_kv_heads" << YAML::Value << m.num_kv_heads;
  out << YAML::Key << "head_dim" << YAML::Value << m.head_dim;
  out << YAML::Key << "vocab_size" << YAML::Value << m.vocab_size;
  out << YAML::Key << "tied_embeddings" << YAML::Value << m.tied_embeddings;
  out << YAML::Key << "gated_mlp" << YAML::Value << m.gated_mlp;
  out << YAML::Key << "norm" << YAML::Value << (m.norm == NormKind::layernorm ? "layernorm" : "rmsnorm");
  out << YAML::Key << "linear_bias" << YAML::Value << m.linear_bias;
  out << YAML::Key << "qkv_bias" << YAML::Value << m.qkv_bias;
  out << YAML::Key << "qk_norm" << YAML::Value << m.qk_norm;
  out << YAML::Key << "position_embedding" << YAML::Value
      << (m.position_embedding == PositionEmbedding::learned ? "learned" : "rope");
  out << YAML::Key << "max_position_embeddings" << YAML::Value << m.max_position_embeddings;
  if (m.mtp_num_layers > 0) out << YAML::Key << "mtp_num_layers" << YAML::Value << m.mtp_num_layers;
  // Sections are written whenever a field differs from its default, so an inconsistent spec fails to parse back
  // instead of silently losing fields.
  if (m.moe != MoeSpec{}) emit_moe(out, m.moe);
  if (m.mla != MlaSpec{}) emit_mla(out, m.mla);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace fsdpsim
