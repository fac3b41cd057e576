// The model YAML schema: defaults, exact round trip, every error path (file:line, key and fix), and load_model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "frontends/model_files.h"
#include "model/model.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

// The ConfigError message `body` throws ("" when it throws none).
// Six lines; extra keys are appended from line 7.
const std::string kTiny =
    "name: tiny\n"
    "num_layers: 4\n"
    "hidden_size: 256\n"
    "ffn_hidden_size: 512\n"
    "num_attention_heads: 8\n"
    "vocab_size: 1000\n";

TEST(ModelYaml, DefaultsFollowTheSchema) {
  const ModelSpec m = parse_model_yaml(kTiny, "tiny.yaml");
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.num_kv_heads, 8);  // = num_attention_heads
  EXPECT_EQ(m.head_dim, 32);     // 256 / 8
  EXPECT_TRUE(m.gated_mlp);
  EXPECT_EQ(m.norm, NormKind::rmsnorm);
  EXPECT_EQ(m.position_embedding, PositionEmbedding::rope);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_FALSE(m.is_moe());
  EXPECT_FALSE(m.mla.enabled());
}

TEST(ModelYaml, MlaHeadDimDefaultsToQkWidth) {
  const ModelSpec m = parse_model_yaml(kTiny +
                                           "mla:\n  kv_lora_rank: 64\n  qk_nope_head_dim: 32\n"
                                           "  qk_rope_head_dim: 16\n  v_head_dim: 32\n",
                                       "mla.yaml");
  EXPECT_EQ(m.head_dim, 48);  // 32 + 16
  EXPECT_EQ(m.mla.q_lora_rank, 0);
}

TEST(ModelYaml, RoundTripIsExact) {
  for (const std::string& name : model_preset_names()) {
    const ModelSpec m = model_preset(name);
    EXPECT_EQ(parse_model_yaml(model_to_yaml(m), "rt.yaml"), m) << name;
  }
  // Every other field off its default, including an explicit MoE layer list and a shared-expert width.
  ModelSpec m = parse_model_yaml(kTiny, "tiny.yaml");
  m.name = "odd: name";  // needs quoting
  m.num_kv_heads = 2;
  m.head_dim = 40;
  m.tied_embeddings = true;
  m.gated_mlp = false;
  m.norm = NormKind::layernorm;
  m.qkv_bias = true;
  m.qk_norm = true;
  m.position_embedding = PositionEmbedding::learned;
  m.max_position_embeddings = 4096;
  m.moe = MoeSpec{4, 2, 128, 1, 64, 0, 1, {1, 3}};
  const std::string text = model_to_yaml(m);
  EXPECT_EQ(parse_model_yaml(text, "rt.yaml"), m) << text;
}

TEST(ModelYaml, UnknownKeySuggestsTheFix) {
  const std::string message = error_of([] { parse_model_yaml(kTiny + "hiden_size: 4\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:7:1: 'hiden_size': unknown key (did you mean 'hidden_size'?)");
  EXPECT_HAS(message, "valid keys here:");
  const std::string nested = error_of([] {
    parse_model_yaml(kTiny + "moe:\n  num_experts: 4\n  topk: 2\n  top_k: 2\n  expert_ffn_hidden_size: 64\n", "m.yaml");
  });
  EXPECT_HAS(nested, "m.yaml:9:3: 'moe.topk': unknown key (did you mean 'top_k'?)");
}

TEST(ModelYaml, WrongTypesAndRanges) {
  std::string message = error_of([] { parse_model_yaml("name: x\nnum_layers: many\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:2:13: 'num_layers': expected a whole number, got 'many'");
  message = error_of([] {
    parse_model_yaml(
        "name: x\nnum_layers: 0\nhidden_size: 8\nffn_hidden_size: 8\nnum_attention_heads: 1\n"
        "vocab_size: 8\n",
        "m.yaml");
  });
  EXPECT_HAS(message, "m.yaml:2:13: 'num_layers': value 0 is out of range (it must be between 1 and 2147483647)");
  message = error_of([] {
    parse_model_yaml(
        "name: x\nnum_layers: 1\nhidden_size: 8\nffn_hidden_size: 8\nnum_attention_heads: 1\n"
        "vocab_size: -5\n",
        "m.yaml");
  });
  EXPECT_HAS(message, "m.yaml:6:13: 'vocab_size': value -5 is out of range (it must be at least 1)");
  message = error_of([] { parse_model_yaml(kTiny + "norm: rms\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:7:7: 'norm': unknown value 'rms'");
  EXPECT_HAS(message, "valid: rmsnorm, layernorm");
  message = error_of([] { parse_model_yaml(kTiny + "gated_mlp: yes\n", "m.yaml"); });
  EXPECT_HAS(message, "'gated_mlp': expected true or false, got 'yes'");
}

TEST(ModelYaml, MissingRequiredKeys) {
  std::string message = error_of([] { parse_model_yaml("num_layers: 2\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:1:1: missing required key 'name' (add 'name: ...' to this section)");
  message = error_of([] { parse_model_yaml(kTiny + "moe:\n  top_k: 2\n  expert_ffn_hidden_size: 64\n", "m.yaml"); });
  EXPECT_HAS(message, "'moe': missing required key 'moe.num_experts'");
  EXPECT_HAS(message, "add 'num_experts: ...'");
  message = error_of([] { parse_model_yaml("", "empty.yaml"); });
  EXPECT_HAS(message, "empty.yaml");
  EXPECT_HAS(message, "expected a mapping");
}

TEST(ModelYaml, HeadsMustDivideByKvHeads) {
  const std::string message = error_of([] { parse_model_yaml(kTiny + "num_kv_heads: 3\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:7:15: 'num_kv_heads': num_attention_heads=8 is not a multiple of num_kv_heads=3");
  EXPECT_HAS(message, "valid num_kv_heads: 1, 2, 4, 8");
}

TEST(ModelYaml, HeadDimNeededWhenHiddenDoesNotSplit) {
  const std::string message = error_of([] {
    parse_model_yaml(
        "name: x\nnum_layers: 1\nhidden_size: 100\nffn_hidden_size: 8\nnum_attention_heads: 8\n"
        "vocab_size: 8\n",
        "m.yaml");
  });
  EXPECT_HAS(message, "m.yaml:3:14: 'head_dim': head_dim is not given and hidden_size=100 is not a multiple");
  EXPECT_HAS(message, "give head_dim explicitly");
}

TEST(ModelYaml, MoeErrorsNameTheKey) {
  const std::string moe = "moe:\n  num_experts: 8\n  expert_ffn_hidden_size: 64\n";  // lines 7-9
  std::string message = error_of([&] { parse_model_yaml(kTiny + moe + "  top_k: 9\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:10:10: 'moe.top_k': top_k=9 is not between 1 and num_experts=8");
  message = error_of([&] { parse_model_yaml(kTiny + moe + "  top_k: 2\n  first_dense_layers: 4\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:11:23: 'moe.first_dense_layers': first_dense_layers=4 leaves no MoE layer in 4 layers");
  EXPECT_HAS(message, "valid: 0 to 3");
  message = error_of([&] { parse_model_yaml(kTiny + moe + "  top_k: 2\n  layers: [3, 1]\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:11:11: 'moe.layers': moe.layers is not strictly increasing");
  message = error_of([&] { parse_model_yaml(kTiny + moe + "  top_k: 2\n  layers: [1, 4]\n", "m.yaml"); });
  EXPECT_HAS(message, "'moe.layers': layer 4 is outside 0..3");
  message = error_of([&] { parse_model_yaml(kTiny + moe + "  top_k: 2\n  layers: [1]\n  layer_freq: 2\n", "m.yaml"); });
  EXPECT_HAS(message, "'moe.layers': moe.layers is given together with first_dense_layers/layer_freq");
  message =
      error_of([&] { parse_model_yaml(kTiny + moe + "  top_k: 2\n  shared_expert_ffn_hidden_size: 32\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:11:34: 'moe.shared_expert_ffn_hidden_size': shared_expert_ffn_hidden_size is set but");
  EXPECT_HAS(message, "set moe.num_shared_experts");
  message = error_of(
      [&] { parse_model_yaml(kTiny + moe + "  top_k: 2\n  first_dense_layers: 1\n  layer_freq: 5\n", "m.yaml"); });
  EXPECT_HAS(message, "'moe.layer_freq': no decoder layer is an MoE layer");
}

TEST(ModelYaml, MoeFieldsWithoutExpertsAreRejectedByCheckModel) {
  ModelSpec m = parse_model_yaml(kTiny, "tiny.yaml");
  m.moe.top_k = 2;
  const std::string message = error_of([&] { check_model(m, "api"); });
  EXPECT_HAS(message, "api: 'moe.num_experts': MoE fields are set but moe.num_experts is 0");
  EXPECT_HAS(message, "set moe.num_experts");
}

TEST(ModelYaml, CheckModelRejectsBadSpecsFromCode) {
  ModelSpec m = parse_model_yaml(kTiny, "tiny.yaml");
  m.hidden_size = 0;
  EXPECT_HAS(error_of([&] { check_model(m, "api"); }),
             "api: 'hidden_size': hidden_size=0 must be at least 1 (give a positive size)");
  m = parse_model_yaml(kTiny, "tiny.yaml");
  m.mla.v_head_dim = 64;
  EXPECT_HAS(error_of([&] { check_model(m, "api"); }),
             "api: 'mla.kv_lora_rank': MLA fields are set but mla.kv_lora_rank is 0");
  m = parse_model_yaml(kTiny, "tiny.yaml");
  m.name.clear();
  EXPECT_HAS(error_of([&] { check_model(m, "api"); }), "api: 'name': the model has no name");
}

TEST(ModelYaml, MlaErrors) {
  const std::string mla =
      "mla:\n  kv_lora_rank: 64\n  qk_nope_head_dim: 32\n  qk_rope_head_dim: 16\n  v_head_dim: 32\n";
  std::string message = error_of([&] { parse_model_yaml(kTiny + "head_dim: 32\n" + mla, "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:7:11: 'head_dim': with MLA head_dim is the query/key head width");
  EXPECT_HAS(message, "remove head_dim or set it to 48");
  message = error_of([&] { parse_model_yaml(kTiny + "num_kv_heads: 2\n" + mla, "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:7:15: 'num_kv_heads': MLA has one key/value head per query head");
  message = error_of([&] { parse_model_yaml(kTiny + "qk_norm: true\n" + mla, "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:7:10: 'qk_norm': qk_norm does not apply to MLA");
  message = error_of([] { parse_model_yaml(kTiny + "mla:\n  q_lora_rank: 16\n", "m.yaml"); });
  EXPECT_HAS(message, "'mla': missing required key 'mla.kv_lora_rank'");
}

TEST(ModelYaml, FlagConflicts) {
  std::string message = error_of([] { parse_model_yaml(kTiny + "position_embedding: learned\n", "m.yaml"); });
  EXPECT_HAS(message, "'max_position_embeddings': learned position embeddings need max_position_embeddings");
  EXPECT_HAS(message, "give max_position_embeddings");
  message = error_of([] { parse_model_yaml(kTiny + "linear_bias: true\nqkv_bias: true\n", "m.yaml"); });
  EXPECT_HAS(message, "m.yaml:8:11: 'qkv_bias': qkv_bias is implied by linear_bias");
}

TEST(ModelYaml, MalformedYamlNamesTheLine) {
  const std::string message = error_of([] { parse_model_yaml(kTiny + "moe: [1, 2\n", "bad.yaml"); });
  EXPECT_HAS(message, "bad.yaml:");
  EXPECT_HAS(message, "malformed YAML");
}

class LoadModelFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
    std::ofstream(path) << text;
    return path.string();
  }
};

TEST_F(LoadModelFiles, PresetYamlAndJson) {
  EXPECT_EQ(load_model("llama3-70b"), model_preset("llama3-70b"));
  const std::string yaml = write("fsdpsim_tiny_model.yaml", kTiny);
  EXPECT_EQ(load_model(yaml), parse_model_yaml(kTiny, yaml));
  const std::string hf = std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/hf/Qwen2-7B/config.json";
  EXPECT_EQ(load_model(hf).name, "Qwen2-7B");
  // A Hugging Face model directory is read through its config.json.
  EXPECT_EQ(load_model(std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/hf/Qwen2-7B"), load_model(hf));
}

TEST_F(LoadModelFiles, YamlErrorsNameTheFile) {
  const std::string yaml = write("fsdpsim_bad_model.yaml", kTiny + "num_layrs: 2\n");
  EXPECT_HAS(error_of([&] { load_model(yaml); }), yaml + ":7:1: 'num_layrs': unknown key");
}

TEST(LoadModel, UnknownNameListsPresetsAndClosest) {
  const std::string message = error_of([] { load_model("llama3-8B"); });
  EXPECT_HAS(message, "unknown model 'llama3-8B' (did you mean 'llama3-8b'?)");
  EXPECT_HAS(message, "presets: llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, deepseek-v3, gpt3-175b");
  EXPECT_HAS(error_of([] { model_preset("gpt3"); }), "unknown model preset 'gpt3'");
}

}  // namespace
}  // namespace fsdpsim
