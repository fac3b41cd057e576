// Hugging Face config.json import: one real public config per architecture (tests/data/hf/), each checked against
// its published parameter count, and every error path.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/error.h"
#include "frontends/model_files.h"
#include "model/model.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

std::string config_path(const std::string& model) {
  return std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/hf/" + model + "/config.json";
}

std::string config_text(const std::string& model) {
  std::ifstream in(config_path(model));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` with the first occurrence of `from` replaced by `to` (the test fails if `from` is absent).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void expect_near_published(int64_t count, double published) {
  EXPECT_NEAR(static_cast<double>(count) / published, 1.0, 0.005) << count << " vs published " << published;
}

TEST(HfImport, LlamaMatchesThePreset) {
  ModelSpec m = load_model(config_path("Meta-Llama-3-8B"));
  EXPECT_EQ(m.name, "Meta-Llama-3-8B");  // the directory holding config.json
  m.name = "llama3-8b";
  EXPECT_EQ(m, model_preset("llama3-8b"));
  // 8,030,261,248 as derived in model_count_test.cpp (Meta: 8.03B).
  EXPECT_EQ(count_parameters(m).total, 8'030'261'248);
}

TEST(HfImport, Mistral7B) {
  const ModelSpec m = load_model(config_path("Mistral-7B-v0.1"));
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);  // 4096 / 32
  // Layers as Llama-3-8B: 218,112,000 × 32 = 6,979,584,000; embedding and output 32000·4096 = 131,072,000 each,
  // + final norm 4,096 → 7,241,732,096. Published: 7.24B (Hugging Face Hub, safetensors parameter count).
  EXPECT_EQ(count_parameters(m).total, 7'241'732'096);
  expect_near_published(count_parameters(m).total, 7.24e9);
}

TEST(HfImport, MixtralMatchesThePreset) {
  ModelSpec m = load_model(config_path("Mixtral-8x7B-v0.1"));
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.top_k, 2);
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 14336);
  m.name = "mixtral-8x7b";
  EXPECT_EQ(m, model_preset("mixtral-8x7b"));
  expect_near_published(count_parameters(m).total, 46.7e9);  // 46,702,792,704 (model_count_test.cpp)
}

TEST(HfImport, Qwen2HasQkvBias) {
  const ModelSpec m = load_model(config_path("Qwen2-7B"));
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_FALSE(m.linear_bias);
  const ParameterCount c = count_parameters(m);
  // Per layer (h 3584, 28 heads, 4 KV heads of 128): q 3584² = 12,845,056, k and v 2·3584·512 = 3,670,016,
  // o 12,845,056, QKV biases 3584 + 2·512 = 4,608 → 29,364,736; MLP 3·3584·18944 = 203,685,888; norms 7,168
  // → 233,057,792; × 28 = 6,525,618,176. Embedding 152064·3584 = 544,997,376; output + norm = 545,000,960.
  EXPECT_EQ(c.dense_layers, 6'525'618'176);
  // Total 7,615,616,512. Published for this architecture (Qwen2.5-7B model card, same shapes): 7.61B.
  EXPECT_EQ(c.total, 7'615'616'512);
  expect_near_published(c.total, 7.61e9);
}

TEST(HfImport, Qwen3HasQkNormAndExplicitHeadDim) {
  const ModelSpec m = load_model(config_path("Qwen3-8B"));
  EXPECT_TRUE(m.qk_norm);
  EXPECT_EQ(m.head_dim, 128);
  const ParameterCount c = count_parameters(m);
  // Per layer (h 4096, 32 heads, 8 KV heads of 128): attention 2·4096·4096 + 2·4096·1024 = 41,943,040, q/k norms
  // 2·128 = 256, MLP 3·4096·12288 = 150,994,944, norms 8,192 → 192,946,432; × 36 = 6,946,071,552.
  EXPECT_EQ(c.dense_layers, 6'946'071'552);
  // Embedding 151936·4096 = 622,329,856; output 622,333,952 → total 8,190,735,360 (Qwen3-8B card: 8.2B).
  EXPECT_EQ(c.total, 8'190'735'360);
  expect_near_published(c.total, 8.2e9);
}

TEST(HfImport, Qwen3Moe) {
  const ModelSpec m = load_model(config_path("Qwen3-30B-A3B"));
  EXPECT_EQ(m.moe.num_experts, 128);
  EXPECT_EQ(m.moe.top_k, 8);
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 768);
  EXPECT_TRUE(m.moe.layers.empty());  // decoder_sparse_step 1, no mlp_only_layers: every layer
  const ParameterCount c = count_parameters(m);
  // Per layer (h 2048, 32 heads and 4 KV heads of 128): attention 2048·4096 + 2·2048·512 + 4096·2048 = 18,874,368,
  // q/k norms 256, norms 4,096, router 2048·128 = 262,144 → 19,140,864; × 48 = 918,761,472.
  // Experts 128 · 3·2048·768 = 128 · 4,718,592 = 603,979,776; × 48 = 28,991,029,248.
  EXPECT_EQ(c.dense_layers, 918'761'472);
  EXPECT_EQ(c.expert_layers, 28'991'029'248);
  // Embedding 151936·2048 = 311,164,928; output 311,166,976 → total 30,532,122,624 (card: 30.5B).
  EXPECT_EQ(c.total, 30'532'122'624);
  expect_near_published(c.total, 30.5e9);
  // Active: 918,761,472 + 622,331,904 + 48·8·4,718,592 = 3,353,032,704 (card: "3.3B activated").
  EXPECT_EQ(c.active_per_token, 3'353'032'704);
}

TEST(HfImport, Qwen3MoeSparseStepAndDenseLayers) {
  // decoder_sparse_step 2: layer i is MoE when (i + 1) % 2 == 0 → 1, 3, 5, ...; mlp_only_layers [1] removes 1.
  std::string text = replaced(config_text("Qwen3-30B-A3B"), "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
  text = replaced(text, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [1]");
  const ModelSpec m = import_hf_config(text, "qwen3moe.json");
  ASSERT_EQ(m.moe.layers.size(), 23u);  // 24 odd layers in 0..47, minus layer 1
  EXPECT_EQ(m.moe.layers.front(), 3);
  EXPECT_EQ(m.moe.layers.back(), 47);
  EXPECT_FALSE(m.is_moe_layer(1));
  EXPECT_FALSE(m.is_moe_layer(2));
}

TEST(HfImport, DeepSeekV3MatchesThePreset) {
  ModelSpec m = load_model(config_path("DeepSeek-V3"));
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  EXPECT_EQ(m.head_dim, 192);  // qk_nope 128 + qk_rope 64
  EXPECT_EQ(m.moe.first_dense_layers, 3);
  m.name = "deepseek-v3";
  EXPECT_EQ(m, model_preset("deepseek-v3"));
  expect_near_published(count_parameters(m).total, 671e9);  // 671,026,404,352 (model_count_test.cpp)
  // A null q_lora_rank (DeepSeek-V2-Lite style) means queries are projected directly.
  const ModelSpec direct = import_hf_config(
      replaced(config_text("DeepSeek-V3"), "\"q_lora_rank\": 1536", "\"q_lora_rank\": null"), "ds.json");
  EXPECT_EQ(direct.mla.q_lora_rank, 0);
}

TEST(HfImport, UnknownArchitecture) {
  const std::string text = replaced(config_text("Qwen2-7B"), "Qwen2ForCausalLM", "GPT2LMHeadModel");
  std::string message = error_of([&] { import_hf_config(text, "gpt2.json"); });
  // Line 2 is `  "architectures": [`: the key's 15 characters start at column 3, so the list opens at column 20.
  EXPECT_HAS(message, "gpt2.json:2:20: 'architectures': unsupported architecture 'GPT2LMHeadModel'");
  EXPECT_HAS(message, "supported: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM");
  message = error_of([&] {
    import_hf_config(replaced(config_text("Qwen2-7B"), "Qwen2ForCausalLM", "Qwen2ForCausalLm"), "typo.json");
  });
  EXPECT_HAS(message, "did you mean 'Qwen2ForCausalLM'");
  message = error_of([&] { import_hf_config("{\"hidden_size\": 8}", "none.json"); });
  EXPECT_HAS(message, "none.json: 'architectures': missing required field");
}

TEST(HfImport, MissingAndMistypedFields) {
  std::string message = error_of(
      [] { import_hf_config(replaced(config_text("Meta-Llama-3-8B"), "\"hidden_size\": 4096,", ""), "llama.json"); });
  EXPECT_HAS(message, "llama.json: 'hidden_size': missing required field");
  message = error_of([] {
    import_hf_config(replaced(config_text("Meta-Llama-3-8B"), "\"hidden_size\": 4096", "\"hidden_size\": \"4096\""),
                     "llama.json");
  });
  // Line 10 is `  "hidden_size": "4096",`: the key's 13 characters start at column 3, the value at column 18.
  EXPECT_HAS(message, "llama.json:10:18: 'hidden_size': expected a whole number, got \"4096\"");
  message =
      error_of([] { import_hf_config(replaced(config_text("Qwen3-8B"), "\"head_dim\": 128,", ""), "qwen3.json"); });
  EXPECT_HAS(message, "qwen3.json: 'head_dim': missing required field");
  message = error_of([] {
    import_hf_config(replaced(config_text("Mixtral-8x7B-v0.1"), "\"num_local_experts\": 8,", ""), "mixtral.json");
  });
  EXPECT_HAS(message, "mixtral.json: 'num_local_experts': missing required field");
  message =
      error_of([] { import_hf_config(replaced(config_text("DeepSeek-V3"), "\"kv_lora_rank\": 512,", ""), "ds.json"); });
  EXPECT_HAS(message, "ds.json: 'kv_lora_rank': missing required field");
}

TEST(HfImport, UnrepresentableBiases) {
  std::string message = error_of([] {
    import_hf_config(replaced(config_text("Meta-Llama-3-8B"), "\"attention_bias\": false", "\"attention_bias\": true"),
                     "llama.json");
  });
  // Line 5 is `  "attention_bias": true,`: the key's 16 characters start at column 3, the value at column 21.
  EXPECT_HAS(message,
             "llama.json:5:21: 'attention_bias': biases on only the attention or only the MLP are not modelled");
  message = error_of([] {
    import_hf_config(replaced(config_text("DeepSeek-V3"), "\"attention_bias\": false", "\"attention_bias\": true"),
                     "ds.json");
  });
  EXPECT_HAS(message, "ds.json:5:21: 'attention_bias': biases are not modelled with MLA");  // line 5 as in Llama's
}

TEST(HfImport, InconsistentConfigFailsTheModelCheck) {
  const std::string message = error_of([] {
    import_hf_config(
        replaced(config_text("Meta-Llama-3-8B"), "\"num_key_value_heads\": 8", "\"num_key_value_heads\": 3"),
        "llama.json");
  });
  // The check names fsdpsim's key at the line of the field it came from: line 17, `  "num_key_value_heads": 3,`,
  // whose 21-character key starts at column 3 and value at column 26.
  EXPECT_HAS(message, "llama.json:17:26: 'num_kv_heads': num_attention_heads=32 is not a multiple of num_kv_heads=3");
}

TEST(HfImport, MalformedJson) {
  std::string message = error_of([] { import_hf_config("{\n  \"a\": 1\n  \"b\": 2\n}\n", "bad.json"); });
  // The missing comma is found when the parser meets "b" on line 3.
  EXPECT_HAS(message, "bad.json:3:");
  EXPECT_HAS(message, "malformed JSON");
  message = error_of([] { import_hf_config("[1, 2]", "list.json"); });
  EXPECT_HAS(message, "list.json:1:1: expected a JSON object of config fields");  // the document itself
  EXPECT_HAS(error_of([] { load_model("/nonexistent/config.json"); }), "unknown model '/nonexistent/config.json'");
}

}  // namespace
}  // namespace fsdpsim
