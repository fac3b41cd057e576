// What FP8 linears save for backward: Transformer Engine keeps the FP8 cast of each linear's input (RankShape::
// fp8_saved_inputs), torchao the 16-bit input. Layers of Llama-3 8B, Mixtral and DeepSeek-V3 derived by hand against
// the 16-bit terms that model_units_test.cpp and model_units_moe_test.cpp derive.
#include <gtest/gtest.h>

#include "model/model_units.h"

namespace fsdpsim {
namespace {

constexpr size_t kNone = 0, kSelective = 1, kFull = 2;

RankShape shape(int64_t seq_length, DType compute, bool fp8_saved_inputs) {
  RankShape s;
  s.micro_batch_size = 1;
  s.seq_length = seq_length;
  s.compute_dtype = compute;
  s.fp8_saved_inputs = fp8_saved_inputs;
  return s;
}

UnitCost layer(const std::string& preset, int64_t seq_length, DType compute, bool fp8_saved_inputs, size_t index = 1) {
  return derive_units(model_preset(preset), shape(seq_length, compute, fp8_saved_inputs)).at(index);
}

TEST(Fp8SavedInputs, ADenseLayerKeepsItsLinearInputsInOneByte) {
  const UnitCost bf16 = layer("llama3-8b", 8192, DType::bf16, false);
  const UnitCost te = layer("llama3-8b", 8192, DType::fp8, true);
  // T = 8192, h = 4096, 32 heads of 128, ffn 14336; 1,141,964,800 bytes in 16 bits (model_units_test.cpp). In FP8
  // the two norm outputs (qkv's and fc1's inputs) and SwiGLU's output (fc2's input) lose a byte an element,
  // 2·8192·4096 + 8192·14336 = 184,549,376, and the output projection keeps an FP8 copy of O, 8192·32·128 =
  // 33,554,432, while the attention keeps O itself: 150,994,944 fewer.
  EXPECT_EQ(bf16.saved_activation_bytes[kNone], 1'141'964'800);
  EXPECT_EQ(te.saved_activation_bytes[kNone], 1'141'964'800 - 150'994'944);
  EXPECT_EQ(te.saved_activation_bytes[kSelective], 1'141'964'800 - 150'994'944 - 1'048'576);  // less the log-sum-exp
  EXPECT_EQ(te.saved_activation_bytes[kFull], 67'108'864);  // the layer input, in 16 bits either way
  EXPECT_EQ(te.recomputed_activation_bytes, te.saved_activation_bytes[kNone]);
}

TEST(Fp8SavedInputs, TorchaosLinearsSaveTheSixteenBitInput) {
  // Float8Linear saves input_hp and casts again in backward: FP8 GEMMs, the 16-bit saved bytes.
  EXPECT_EQ(layer("llama3-8b", 8192, DType::fp8, false).saved_activation_bytes[kNone],
            layer("llama3-8b", 8192, DType::bf16, false).saved_activation_bytes[kNone]);
}

TEST(Fp8SavedInputs, AMoeLayerKeepsItsNormOutputForTheRouter) {
  const int64_t bf16 = layer("mixtral-8x7b", 4096, DType::bf16, false).saved_activation_bytes[kNone];
  const int64_t te = layer("mixtral-8x7b", 4096, DType::fp8, true).saved_activation_bytes[kNone];
  // T = 4096, h = 4096, 32 heads of 128; top-2 gives 8192 token-expert pairs of expert width 14336. The attention's
  // norm output loses 4096·4096 = 16,777,216 and O's FP8 copy adds 16,777,216; the MoE block's norm output stays
  // (the router's BF16 linear saves it); the experts' fc1 and fc2 inputs lose 8192·(4096 + 14336) = 150,994,944.
  EXPECT_EQ(bf16 - te, 150'994'944);
}

TEST(Fp8SavedInputs, MlaKeepsItsLatentsInOneByte) {
  const int64_t bf16 = layer("deepseek-v3", 4096, DType::bf16, false).saved_activation_bytes[kNone];
  const int64_t te = layer("deepseek-v3", 4096, DType::fp8, true).saved_activation_bytes[kNone];
  // layer.0 (MLA + dense MLP), T = 4096, h = 7168: the norm output 4096·7168 = 29,360,128, the q latent after its
  // norm 4096·1536 = 6,291,456 and the kv latent 4096·512 = 2,097,152 lose a byte an element; O's FP8 copy adds
  // 4096·128·128 = 67,108,864; the MLP's norm output 29,360,128 and SwiGLU output 4096·18432 = 75,497,472 lose one.
  EXPECT_EQ(bf16 - te, 29'360'128 + 6'291'456 + 2'097'152 - 67'108'864 + 29'360'128 + 75'497'472);
}

// What a recompute module frees is what the layer saved: under TE's FP8 the one-byte casts, not 16-bit tensors.
TEST(Fp8SavedInputs, RecomputeModulesFreeTheFp8Casts) {
  const auto freed = [](const UnitCost& l, RecomputeModule m) {
    return l.module_recompute[static_cast<size_t>(m)].freed_bytes;
  };
  const UnitCost bf16 = layer("llama3-8b", 8192, DType::bf16, false);
  const UnitCost te = layer("llama3-8b", 8192, DType::fp8, true);
  // T = 8192, h = 4096, ffn 14336: the MLP keeps gate and up (2 bytes) and fc2's input (1 byte in FP8).
  EXPECT_EQ(freed(bf16, RecomputeModule::mlp), 3 * 8192 * 14336 * 2);
  EXPECT_EQ(freed(te, RecomputeModule::mlp), 5 * 8192 * 14336);
  EXPECT_EQ(freed(bf16, RecomputeModule::layernorm), 2 * 8192 * 4096 * 2);  // the two norm outputs
  EXPECT_EQ(freed(te, RecomputeModule::layernorm), 2 * 8192 * 4096);
  // Mixtral, T = 4096, 8192 token-expert pairs of width 14336: the experts' SwiGLU output is fc2's FP8 input.
  const UnitCost moe16 = layer("mixtral-8x7b", 4096, DType::bf16, false);
  const UnitCost moe8 = layer("mixtral-8x7b", 4096, DType::fp8, true);
  EXPECT_EQ(freed(moe16, RecomputeModule::moe_act), int64_t{8192} * 14336 * 2);
  EXPECT_EQ(freed(moe8, RecomputeModule::moe_act), int64_t{8192} * 14336);
  // The whole block frees what its saved bytes lost: 8192·(4096 + 14336) fewer.
  EXPECT_EQ(freed(moe16, RecomputeModule::moe) - freed(moe8, RecomputeModule::moe), int64_t{8192} * (4096 + 14336));
  // The MoE norm output stays 16-bit for the router.
  EXPECT_EQ(freed(moe8, RecomputeModule::layernorm), int64_t{4096} * 4096 * (1 + 2));
}

// Megatron's --first-last-layers-bf16: the end layers are the BF16 job's layers, their GEMMs marked to run in BF16
// inside the FP8 schedule; the layers between keep FP8.
TEST(Fp8SavedInputs, LayersLeftInBf16AreTheBf16JobsLayers) {
  RankShape s = shape(8192, DType::fp8, true);
  s.bf16_layers_at_start = 1;
  s.bf16_layers_at_end = 2;
  const std::vector<UnitCost> units = derive_units(model_preset("llama3-8b"), s);
  const UnitCost bf16 = layer("llama3-8b", 8192, DType::bf16, false);
  const UnitCost fp8 = layer("llama3-8b", 8192, DType::fp8, true);
  for (const size_t u : {size_t{1}, size_t{31}, size_t{32}}) {  // layer.0, layer.30, layer.31
    const UnitCost& l = units.at(u);
    SCOPED_TRACE(l.name);
    EXPECT_EQ(l.saved_activation_bytes, bf16.saved_activation_bytes);
    EXPECT_EQ(l.fwd_bytes_touched, bf16.fwd_bytes_touched);  // no FP8 casts
    EXPECT_EQ(l.bwd_bytes_touched, bf16.bwd_bytes_touched);
    EXPECT_EQ(l.fwd_kernels, bf16.fwd_kernels);
    for (const Gemm& g : l.fwd_gemms) EXPECT_EQ(g.bf16_in_fp8, !g.attention) << g.name;
    for (const Gemm& g : l.bwd_gemms) EXPECT_EQ(g.bf16_in_fp8, !g.attention) << g.name;
  }
  for (const size_t u : {size_t{2}, size_t{30}}) {  // layer.1, layer.29
    const UnitCost& l = units.at(u);
    EXPECT_EQ(l.saved_activation_bytes, fp8.saved_activation_bytes);
    EXPECT_EQ(l.fwd_bytes_touched, fp8.fwd_bytes_touched);
    for (const Gemm& g : l.fwd_gemms) EXPECT_FALSE(g.bf16_in_fp8) << g.name;
  }
  EXPECT_GT(fp8.fwd_bytes_touched, bf16.fwd_bytes_touched);  // the casts the BF16 layers do not run
}

}  // namespace
}  // namespace fsdpsim
