// Parameter counts of the presets, derived by hand per component and checked against the published figures.
#include <gtest/gtest.h>

#include "model/model.h"

namespace fsdpsim {
namespace {

// |count − published| / published ≤ 0.5%.
void expect_near_published(int64_t count, double published) {
  EXPECT_NEAR(static_cast<double>(count) / published, 1.0, 0.005) << count << " vs published " << published;
}

TEST(ModelCount, Llama3_8B) {
  const ParameterCount c = count_parameters(model_preset("llama3-8b"));
  // Per layer (h 4096, 32 heads, 8 KV heads of 128, ffn 14336):
  //   attention 2·4096² + 2·4096·1024 = 33,554,432 + 8,388,608 = 41,943,040
  //   MLP 3·4096·14336 = 176,160,768; two RMSNorms 2·4096 = 8,192  → 218,112,000; × 32 = 6,979,584,000
  // Embedding 128256·4096 = 525,336,576; output = the same + final norm 4,096 = 525,340,672.
  EXPECT_EQ(c.dense_layers, 6'979'584'000);
  EXPECT_EQ(c.embedding, 525'336'576);
  EXPECT_EQ(c.output, 525'340'672);
  EXPECT_EQ(c.expert_layers, 0);
  // Total 6,979,584,000 + 525,336,576 + 525,340,672 = 8,030,261,248 (Meta: 8.03B).
  EXPECT_EQ(c.total, 8'030'261'248);
  EXPECT_EQ(c.active_per_token, c.total);
  expect_near_published(c.total, 8.03e9);
}

TEST(ModelCount, Llama3_70B) {
  const ParameterCount c = count_parameters(model_preset("llama3-70b"));
  // Per layer (h 8192, 64 heads, 8 KV heads, ffn 28672): attention 2·8192² + 2·8192·1024 = 150,994,944,
  // MLP 3·8192·28672 = 704,643,072, norms 16,384 → 855,654,400; × 80 = 68,452,352,000.
  // Embedding 128256·8192 = 1,050,673,152; output 1,050,673,152 + 8,192 = 1,050,681,344.
  EXPECT_EQ(c.dense_layers, 68'452'352'000);
  // Total 68,452,352,000 + 1,050,673,152 + 1,050,681,344 = 70,553,706,496 (Meta: 70.55B).
  EXPECT_EQ(c.total, 70'553'706'496);
  expect_near_published(c.total, 70.55e9);
}

TEST(ModelCount, Llama3_405B) {
  const ParameterCount c = count_parameters(model_preset("llama3-405b"));
  // Per layer (h 16384, 128 heads, 8 KV heads, ffn 53248): attention 2·16384² + 2·16384·1024 = 570,425,344,
  // MLP 3·16384·53248 = 2,617,245,696, norms 32,768 → 3,187,703,808; × 126 = 401,650,679,808.
  // Embedding 128256·16384 = 2,101,346,304; output 2,101,346,304 + 16,384 = 2,101,362,688.
  EXPECT_EQ(c.dense_layers, 401'650'679'808);
  // Total 401,650,679,808 + 2,101,346,304 + 2,101,362,688 = 405,853,388,800 (Meta: 405.85B).
  EXPECT_EQ(c.total, 405'853'388'800);
  expect_near_published(c.total, 405.85e9);
}

TEST(ModelCount, Mixtral8x7B) {
  const ParameterCount c = count_parameters(model_preset("mixtral-8x7b"));
  // Per layer: attention 41,943,040 (as Llama-3-8B), norms 8,192, router 4096·8 = 32,768 → dense 41,984,000;
  // × 32 = 1,343,488,000. Experts 8 · 3·4096·14336 = 8 · 176,160,768 = 1,409,286,144; × 32 = 45,097,156,608.
  // Embedding 32000·4096 = 131,072,000; output 131,072,000 + 4,096 = 131,076,096.
  EXPECT_EQ(c.dense_layers, 1'343'488'000);
  EXPECT_EQ(c.expert_layers, 45'097'156'608);
  EXPECT_EQ(c.embedding, 131'072'000);
  // Total 1,343,488,000 + 45,097,156,608 + 131,072,000 + 131,076,096 = 46,702,792,704 (Mistral AI: 46.7B).
  EXPECT_EQ(c.total, 46'702'792'704);
  expect_near_published(c.total, 46.7e9);
  // Active: everything but the experts, plus 2 of 8 experts per layer: 32 · 2 · 176,160,768 = 11,274,289,152;
  // 1,343,488,000 + 262,148,096 + 11,274,289,152 = 12,879,925,248 (Mistral AI: 12.9B active).
  EXPECT_EQ(c.active_per_token, 12'879'925'248);
}

TEST(ModelCount, DeepSeekV3) {
  const ParameterCount c = count_parameters(model_preset("deepseek-v3"));
  // MLA per layer (h 7168, 128 heads): q_a 7168·1536 = 11,010,048; q_a norm 1,536; q_b 1536·128·(128+64) =
  // 37,748,736; kv_a 7168·(512+64) = 4,128,768; kv_a norm 512; kv_b 512·128·(128+128) = 16,777,216;
  // o 128·128·7168 = 117,440,512 → 187,107,328. Layer norms 2·7168 = 14,336.
  // Dense layers 0-2: MLP 3·7168·18432 = 396,361,728 → 583,483,392; × 3 = 1,750,450,176.
  // MoE layers 3-60 (58): router 7168·256 = 1,835,008; shared expert 3·7168·2048 = 44,040,192 →
  //   dense part 187,107,328 + 14,336 + 1,835,008 + 44,040,192 = 232,996,864; × 58 = 13,513,818,112.
  //   Routed experts 256 · 44,040,192 = 11,274,289,152; × 58 = 653,908,770,816.
  EXPECT_EQ(c.dense_layers, 1'750'450'176 + 13'513'818'112);
  EXPECT_EQ(c.expert_layers, 653'908'770'816);
  // Embedding 129280·7168 = 926,679,040; output 926,679,040 + 7,168 = 926,686,208.
  EXPECT_EQ(c.output, 926'686'208);
  // Total 15,264,268,288 + 653,908,770,816 + 926,679,040 + 926,686,208 = 671,026,404,352 (DeepSeek: 671B).
  EXPECT_EQ(c.total, 671'026'404'352);
  expect_near_published(c.total, 671e9);
  // Active: 58 layers × 8 routed experts × 44,040,192 = 20,434,649,088;
  // 15,264,268,288 + 1,853,365,248 + 20,434,649,088 = 37,552,282,624 (DeepSeek: 37B activated).
  EXPECT_EQ(c.active_per_token, 37'552'282'624);
}

TEST(ModelCount, Gpt3_175B) {
  const ParameterCount c = count_parameters(model_preset("gpt3-175b"));
  // Per layer (h 12288, LayerNorm, biases, GeLU MLP of 4h): attention 4h² + 4h (QKV and O biases) =
  // 603,979,776 + 49,152 = 604,028,928; MLP 8h² + 5h = 1,207,959,552 + 61,440 = 1,208,020,992;
  // two LayerNorms 4h = 49,152 → 1,812,099,072; × 96 = 173,961,510,912.
  EXPECT_EQ(c.dense_layers, 173'961'510'912);
  // Embedding 50257·12288 = 617,558,016 + positions 2048·12288 = 25,165,824 → 642,723,840.
  EXPECT_EQ(c.embedding, 642'723'840);
  // Tied: the output unit is only the final LayerNorm, 2h = 24,576.
  EXPECT_EQ(c.output, 24'576);
  // Total 174,604,259,328 (Brown et al. 2020: 175B; −0.23%).
  EXPECT_EQ(c.total, 174'604'259'328);
  expect_near_published(c.total, 175e9);
}

TEST(ModelCount, MoeLayerRules) {
  ModelSpec m = model_preset("deepseek-v3");
  // first_dense_layers 3, layer_freq 1: layers 3..60 are MoE.
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_FALSE(m.is_moe_layer(2));
  EXPECT_TRUE(m.is_moe_layer(3));
  EXPECT_TRUE(m.is_moe_layer(60));
  EXPECT_FALSE(m.is_moe_layer(61));  // out of range
  // DeepSeek's rule with layer_freq 2: layer ≥ 3 and layer % 2 == 0 → 4, 6, ...
  m.moe.layer_freq = 2;
  EXPECT_FALSE(m.is_moe_layer(3));
  EXPECT_TRUE(m.is_moe_layer(4));
  // An explicit list overrides the rule.
  m.moe.first_dense_layers = 0;
  m.moe.layer_freq = 1;
  m.moe.layers = {1, 7};
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_TRUE(m.is_moe_layer(7));
  EXPECT_FALSE(model_preset("llama3-8b").is_moe_layer(0));
}

TEST(ModelCount, PresetNames) {
  EXPECT_EQ(model_preset_names(), (std::vector<std::string>{"llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b",
                                                            "deepseek-v3", "gpt3-175b"}));
  for (const std::string& name : model_preset_names()) EXPECT_EQ(model_preset(name).name, name);
}

}  // namespace
}  // namespace fsdpsim
