// GPU profiles: the built-in profiles against their cited figures, exact round trips, and every error path.
#include <gtest/gtest.h>

#include <string>

#include "common/units.h"
#include "tests/topologies/test_support.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

using test::with_line;

// A valid profile; the error tests change one line of it (line numbers in the comments).
const std::string kProfile =
    "name: test-gpu\n"                         // 1
    "arch: hopper\n"                           // 2
    "sm_count: 132\n"                          // 3
    "dense_bf16_flops_per_s: 989TFLOPS\n"      // 4
    "dense_fp8_flops_per_s: 1979TFLOPS\n"      // 5
    "hbm_bytes: 80GiB\n"                       // 6
    "hbm_bw_bytes_per_s: 3.35TB/s\n"           // 7
    "gemm_max_efficiency: 0.8\n"               // 8
    "fp8_gemm_max_efficiency: 0.7\n"           // 9
    "gemm_tile_m: 128\n"                       // 10
    "gemm_tile_n: 256\n"                       // 11
    "gemm_k_half: 256\n"                       // 12
    "attention_efficiency: 0.5\n"              // 13
    "memory_efficiency: 0.8\n"                 // 14
    "kernel_overhead_ns: 5us\n"                // 15
    "cuda_context_bytes: 512MiB\n"             // 16
    "cublas_workspace_bytes: 32MiB\n"          // 17
    "nccl_buffer_bytes: 4MiB\n"                // 18
    "allocator_segment_reserve_bytes: 2GiB\n"  // 19
    "ring_sms: 24\n"                           // 20
    "nvls_sms: 16\n"                           // 21
    "registered_sms: 6\n"                      // 22
    "overlap_slowdown: 0.19\n"                 // 23
    "cuda_malloc_ns: 1ms\n";                   // 24

std::string parse_error(const std::string& text) {
  return error_of([&] { (void)parse_gpu_profile_yaml(text, "gpu.yaml"); });
}

TEST(GpuProfileYaml, ParsesEveryFieldWithItsUnit) {
  const GpuProfile p = parse_gpu_profile_yaml(kProfile, "gpu.yaml");
  EXPECT_EQ(p.name, "test-gpu");
  EXPECT_EQ(p.arch, GpuArch::hopper);
  EXPECT_EQ(p.sm_count, 132);
  EXPECT_DOUBLE_EQ(p.dense_bf16_flops_per_s, 989e12);  // 989 × 1e12
  EXPECT_DOUBLE_EQ(p.dense_fp8_flops_per_s, 1979e12);  // 1979 × 1e12
  EXPECT_EQ(p.hbm_bytes, int64_t{85899345920});        // 80 × 2^30 = 85,899,345,920
  EXPECT_DOUBLE_EQ(p.hbm_bw_bytes_per_s, 3.35e12);     // 3.35 × 1e12
  EXPECT_DOUBLE_EQ(p.gemm_max_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(p.fp8_gemm_max_efficiency, 0.7);
  EXPECT_EQ(p.gemm_tile_m, 128);
  EXPECT_EQ(p.gemm_tile_n, 256);
  EXPECT_EQ(p.gemm_k_half, 256);
  EXPECT_EQ(p.kernel_overhead_ns, 5000);                              // 5 us = 5 × 1000 ns
  EXPECT_EQ(p.cuda_context_bytes, int64_t{536870912});                // 512 × 2^20
  EXPECT_EQ(p.cublas_workspace_bytes, int64_t{33554432});             // 32 × 2^20
  EXPECT_EQ(p.nccl_buffer_bytes, int64_t{4194304});                   // 4 × 2^20
  EXPECT_EQ(p.allocator_segment_reserve_bytes, int64_t{2147483648});  // 2 × 2^30
  EXPECT_EQ(p.ring_sms, 24);
  EXPECT_EQ(p.nvls_sms, 16);
  EXPECT_EQ(p.registered_sms, 6);
  EXPECT_DOUBLE_EQ(p.overlap_slowdown, 0.19);
  EXPECT_EQ(p.cuda_malloc_ns, 1000000);  // 1 ms = 1e6 ns
}

TEST(GpuProfileYaml, Fp8IsOptionalAndZeroWhenAbsent) {
  std::string text = with_line(kProfile, "dense_fp8_flops_per_s", "");
  text = with_line(text, "fp8_gemm_max_efficiency", "");
  const GpuProfile p = parse_gpu_profile_yaml(text, "gpu.yaml");
  EXPECT_EQ(p.dense_fp8_flops_per_s, 0.0);
}

// ---- built-in profiles against the figures their YAML cites -----------------------------------------------------
TEST(GpuProfilePresets, H100MatchesDatasheetAndMamf) {
  const GpuProfile p = gpu_profile("h100-sxm");
  EXPECT_EQ(p.arch, GpuArch::hopper);
  EXPECT_EQ(p.sm_count, 132);                          // H100 SXM5 whitepaper
  EXPECT_DOUBLE_EQ(p.dense_bf16_flops_per_s, 989e12);  // 1979 sparse / 2
  EXPECT_DOUBLE_EQ(p.dense_fp8_flops_per_s, 1979e12);  // 3958 sparse / 2
  EXPECT_EQ(p.hbm_bytes, int64_t{85017493504});        // cudaMemGetInfo total measured on an H100 80GB HBM3
  EXPECT_DOUBLE_EQ(p.hbm_bw_bytes_per_s, 3.35e12);
  EXPECT_NEAR(p.gemm_max_efficiency, 794.5 / 989.0, 5e-4);        // MAMF 794.5 TFLOPS / 989 = 0.8033
  EXPECT_NEAR(p.fp8_gemm_max_efficiency, 1402.6 / 1979.0, 5e-4);  // 1402.6 / 1979 = 0.7087
  EXPECT_EQ(p.cublas_workspace_bytes, 32 * kMiB);                 // cuBLAS: 32 MiB on Hopper
  EXPECT_EQ(p.nccl_buffer_bytes, int64_t{4194304});               // NCCL_BUFFSIZE default
  EXPECT_EQ(p.ring_sms, 24);                                      // "24 coll channels"
  EXPECT_EQ(p.nvls_sms, 16);                                      // NVLS_NCHANNELS_SM90
}

TEST(GpuProfilePresets, A100HasNoFp8AndNoNvlsKernels) {
  const GpuProfile p = gpu_profile("a100-sxm-80gb");
  EXPECT_EQ(p.arch, GpuArch::ampere);
  EXPECT_EQ(p.sm_count, 108);
  EXPECT_DOUBLE_EQ(p.dense_bf16_flops_per_s, 312e12);
  EXPECT_EQ(p.dense_fp8_flops_per_s, 0.0);  // no FP8 tensor cores on Ampere
  EXPECT_EQ(p.hbm_bytes, 80 * kGiB);        // 81,920 MiB = 80 GiB exactly
  EXPECT_DOUBLE_EQ(p.hbm_bw_bytes_per_s, 2.039e12);
  EXPECT_NEAR(p.gemm_max_efficiency, 271.2 / 312.0, 5e-4);  // MAMF 271.2 / 312 = 0.8692
  EXPECT_EQ(p.cublas_workspace_bytes, 4 * kMiB);            // cuBLAS: 4 MiB before Hopper
  EXPECT_EQ(p.nvls_sms, 0);
  EXPECT_EQ(p.registered_sms, 0);
}

TEST(GpuProfilePresets, H200B200Gb200MatchCitedFigures) {
  const GpuProfile h200 = gpu_profile("h200-sxm");
  EXPECT_EQ(h200.hbm_bytes, int64_t{150109880320});  // cudaMemGetInfo total measured on an H200 ("141 GB")
  EXPECT_DOUBLE_EQ(h200.hbm_bw_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.dense_bf16_flops_per_s, 989e12);
  const GpuProfile b200 = gpu_profile("b200");
  EXPECT_EQ(b200.arch, GpuArch::blackwell);
  EXPECT_EQ(b200.sm_count, 148);
  EXPECT_DOUBLE_EQ(b200.dense_bf16_flops_per_s, 2250e12);  // 4.5 PF sparse / 2
  EXPECT_DOUBLE_EQ(b200.dense_fp8_flops_per_s, 4500e12);   // DGX B200 72 PF FP8 sparse / 8 GPUs / 2
  // "~180 GB usable": 183,359 MiB = 192,265,846,784 B = 179.06 GiB.
  EXPECT_EQ(b200.hbm_bytes, int64_t{192265846784});
  EXPECT_NEAR(static_cast<double>(b200.hbm_bytes) / static_cast<double>(kGiB), 179.06, 0.01);
  EXPECT_DOUBLE_EQ(b200.hbm_bw_bytes_per_s, 8e12);
  EXPECT_EQ(b200.ring_sms, 16);  // NCCL 2.28: Blackwell max CTAs 32 → 16
  const GpuProfile gb200 = gpu_profile("gb200");
  EXPECT_DOUBLE_EQ(gb200.dense_bf16_flops_per_s, 2500e12);  // NVL72 720 PF FP8 sparse / 72 / 2 (dense) / 2 (bf16)
  EXPECT_DOUBLE_EQ(gb200.dense_fp8_flops_per_s, 5000e12);   // 720 PF / 72 / 2
  // "~186 GB": 189,471 MiB = 198,674,743,296 B = 185.03 GiB.
  EXPECT_EQ(gb200.hbm_bytes, int64_t{189471} * kMiB);
  EXPECT_NEAR(static_cast<double>(gb200.hbm_bytes) / static_cast<double>(kGiB), 185.03, 0.01);
  EXPECT_NEAR(gb200.gemm_max_efficiency, 1822.0 / 2500.0, 5e-4);  // MAMF 1822 / 2500 = 0.7288
}

TEST(GpuProfilePresets, NvlsChunkPipelineConstantsPerArchitecture) {
  // Fitted per architecture (sim/nccl/nccl_pipeline.cpp): Hopper on one 8×H100 all_reduce_perf sweep, Blackwell on two
  // 8×B200 rows; profiles of the same NVSwitch generation share them, and Ampere has no NVLS at all.
  for (const char* name : {"h100-sxm", "h100-96gb", "h200-sxm"}) {
    EXPECT_EQ(gpu_profile(name).nvls_chunk_handshake_ns, 4'150) << name;
    EXPECT_DOUBLE_EQ(gpu_profile(name).nvls_pipeline_fill_chunks, 1.15) << name;
  }
  for (const char* name : {"b200", "b200-power-limited", "gb200", "gb300"}) {
    EXPECT_EQ(gpu_profile(name).nvls_chunk_handshake_ns, 5'550) << name;
    EXPECT_DOUBLE_EQ(gpu_profile(name).nvls_pipeline_fill_chunks, 2.6) << name;
  }
  EXPECT_EQ(gpu_profile("a100-sxm-80gb").nvls_chunk_handshake_ns, 0);
  EXPECT_EQ(gpu_profile("a100-sxm-80gb").nvls_pipeline_fill_chunks, 0.0);
}

TEST(GpuProfileYaml, NvlsChunkPipelineKeysAreOptional) {
  // Absent: 0 and 0, NCCL's tuning model alone; present: read with their units, and written back only when set.
  const GpuProfile plain = parse_gpu_profile_yaml(kProfile, "gpu.yaml");
  EXPECT_EQ(plain.nvls_chunk_handshake_ns, 0);
  EXPECT_EQ(plain.nvls_pipeline_fill_chunks, 0.0);
  EXPECT_EQ(gpu_profile_to_yaml(plain).find("nvls_chunk"), std::string::npos);
  const GpuProfile p = parse_gpu_profile_yaml(
      kProfile + "nvls_chunk_handshake_ns: 4.15us\nnvls_pipeline_fill_chunks: 1.15\n", "gpu.yaml");
  EXPECT_EQ(p.nvls_chunk_handshake_ns, 4'150);
  EXPECT_DOUBLE_EQ(p.nvls_pipeline_fill_chunks, 1.15);
  EXPECT_EQ(parse_gpu_profile_yaml(gpu_profile_to_yaml(p), "back.yaml"), p);
}

// ---- exact round trips -------------------------------------------------------------------------------------------
TEST(GpuProfileYaml, EveryPresetRoundTripsExactly) {
  for (const std::string& name : gpu_profile_names()) {
    const GpuProfile original = gpu_profile(name);
    const std::string text = gpu_profile_to_yaml(original);
    const GpuProfile back = parse_gpu_profile_yaml(text, "<round trip " + name + ">");
    EXPECT_EQ(back, original) << name << "\n" << text;
    EXPECT_EQ(gpu_profile_to_yaml(back), text) << name;
  }
}

TEST(GpuProfileYaml, CalibratedValuesRoundTripBitForBit) {
  // Values a calibration run writes: no round unit fits them, so the writer must keep every bit.
  GpuProfile p = gpu_profile("h100-sxm");
  p.name = "h100-calibrated";
  p.dense_bf16_flops_per_s = 794.51234567891e12;
  p.hbm_bw_bytes_per_s = 3.0123456789e12 / 3.0;
  p.gemm_max_efficiency = 0.1 + 0.2;  // 0.30000000000000004: not the double nearest 0.3
  p.attention_efficiency = 2.0 / 3.0;
  p.hbm_bytes = 81559 * kMiB + 7;  // not a whole number of KiB
  p.kernel_overhead_ns = 4321;
  p.overlap_slowdown = 0.0;
  const GpuProfile back = parse_gpu_profile_yaml(gpu_profile_to_yaml(p), "calibrated.yaml");
  EXPECT_EQ(back, p) << gpu_profile_to_yaml(p);
}

// ---- errors: each names file:line and key and says what would be valid ----------------------------------------
TEST(GpuProfileErrors, UnknownKeySuggestsTheClosest) {
  const std::string message = parse_error(with_line(kProfile, "sm_count", "sm_cont: 132"));
  EXPECT_NE(message.find("gpu.yaml:3:1: 'sm_cont': unknown key (did you mean 'sm_count'?)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("valid keys here:"), std::string::npos) << message;
}

TEST(GpuProfileErrors, MissingUnit) {
  const std::string message = parse_error(with_line(kProfile, "dense_bf16_flops_per_s", "dense_bf16_flops_per_s: 989"));
  EXPECT_NE(message.find("gpu.yaml:4:"), std::string::npos) << message;
  EXPECT_NE(message.find("'dense_bf16_flops_per_s': compute rate '989' has no unit"), std::string::npos) << message;
  EXPECT_NE(message.find("989TFLOPS"), std::string::npos) << message;
}

TEST(GpuProfileErrors, UnknownUnit) {
  const std::string message = parse_error(with_line(kProfile, "hbm_bw_bytes_per_s", "hbm_bw_bytes_per_s: 3.35TX/s"));
  EXPECT_NE(message.find("gpu.yaml:7:"), std::string::npos) << message;
  EXPECT_NE(message.find("'hbm_bw_bytes_per_s': unknown bandwidth unit 'TX/s'"), std::string::npos) << message;
  EXPECT_NE(message.find("450GB/s"), std::string::npos) << message;
}

TEST(GpuProfileErrors, ZeroAndNegativeSizes) {
  std::string message = parse_error(with_line(kProfile, "hbm_bytes", "hbm_bytes: 0"));
  EXPECT_NE(message.find("gpu.yaml:6:"), std::string::npos) << message;
  EXPECT_NE(message.find("'hbm_bytes': size 0 is too small (it must be at least 1 bytes)"), std::string::npos)
      << message;
  message = parse_error(with_line(kProfile, "nccl_buffer_bytes", "nccl_buffer_bytes: -4MiB"));
  EXPECT_NE(message.find("gpu.yaml:18:"), std::string::npos) << message;
  EXPECT_NE(message.find("'nccl_buffer_bytes': negative size"), std::string::npos) << message;
}

TEST(GpuProfileErrors, NegativeBandwidth) {
  const std::string message = parse_error(with_line(kProfile, "hbm_bw_bytes_per_s", "hbm_bw_bytes_per_s: -3TB/s"));
  EXPECT_NE(message.find("gpu.yaml:7:"), std::string::npos) << message;
  EXPECT_NE(message.find("'hbm_bw_bytes_per_s': negative bandwidth"), std::string::npos) << message;
}

TEST(GpuProfileErrors, EfficiencyOutsideZeroToOne) {
  std::string message = parse_error(with_line(kProfile, "gemm_max_efficiency", "gemm_max_efficiency: 0"));
  EXPECT_NE(message.find("gpu.yaml:8:"), std::string::npos) << message;
  EXPECT_NE(message.find("'gemm_max_efficiency': an efficiency of 0"), std::string::npos) << message;
  EXPECT_NE(message.find("(0, 1]"), std::string::npos) << message;
  message = parse_error(with_line(kProfile, "memory_efficiency", "memory_efficiency: 1.5"));
  EXPECT_NE(message.find("gpu.yaml:14:"), std::string::npos) << message;
  EXPECT_NE(message.find("'memory_efficiency': value 1.5 is out of range (it must be between 0 and 1)"),
            std::string::npos)
      << message;
}

TEST(GpuProfileErrors, WrongTypeAndUnknownArch) {
  std::string message = parse_error(with_line(kProfile, "sm_count", "sm_count: many"));
  EXPECT_NE(message.find("gpu.yaml:3:11: 'sm_count': expected a whole number, got 'many'"), std::string::npos)
      << message;
  message = parse_error(with_line(kProfile, "arch", "arch: hoper"));
  EXPECT_NE(message.find("gpu.yaml:2:7: 'arch': unknown value 'hoper' (did you mean 'hopper'?)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("valid: ampere, hopper, blackwell"), std::string::npos) << message;
}

TEST(GpuProfileErrors, CommunicationSmsBeyondTheGpu) {
  const std::string message = parse_error(with_line(kProfile, "ring_sms", "ring_sms: 200"));
  EXPECT_NE(message.find("gpu.yaml:20:"), std::string::npos) << message;
  // sm_count is 132 (line 3), so 200 ring SMs cannot exist.
  EXPECT_NE(message.find("'ring_sms': value 200 is out of range (it must be between 1 and 132)"), std::string::npos)
      << message;
}

TEST(GpuProfileErrors, NvlsChunkPipelineOutOfRange) {
  std::string message = parse_error(kProfile + "nvls_pipeline_fill_chunks: -1\n");
  EXPECT_NE(message.find("gpu.yaml:25:"), std::string::npos) << message;
  EXPECT_NE(message.find("'nvls_pipeline_fill_chunks': value -1 is out of range (it must be between 0 and 64)"),
            std::string::npos)
      << message;
  message = parse_error(kProfile + "nvls_chunk_handshake_ns: 2ms\n");
  EXPECT_NE(message.find("gpu.yaml:25:"), std::string::npos) << message;
  EXPECT_NE(message.find("'nvls_chunk_handshake_ns': a handshake of more than 1 ms"), std::string::npos) << message;
  EXPECT_NE(message.find("e.g. 4.15us"), std::string::npos) << message;
  message = parse_error(kProfile + "nvls_chunk_handshake_ns: 4.15\n");
  EXPECT_NE(message.find("'nvls_chunk_handshake_ns'"), std::string::npos) << message;
}

TEST(GpuProfileErrors, Fp8EfficiencyWithoutFp8Peak) {
  const std::string message = parse_error(with_line(kProfile, "dense_fp8_flops_per_s", ""));
  // Removing line 5 moves fp8_gemm_max_efficiency from line 9 to line 8.
  EXPECT_NE(message.find("gpu.yaml:8:"), std::string::npos) << message;
  EXPECT_NE(message.find("'fp8_gemm_max_efficiency': an FP8 efficiency is given but no FP8 peak"), std::string::npos)
      << message;
  EXPECT_NE(message.find("add dense_fp8_flops_per_s"), std::string::npos) << message;
}

TEST(GpuProfileErrors, MissingRequiredKey) {
  const std::string message = parse_error(with_line(kProfile, "cuda_context_bytes", ""));
  EXPECT_NE(message.find("gpu.yaml:1:1: missing required key 'cuda_context_bytes'"), std::string::npos) << message;
}

TEST(GpuProfileErrors, OverheadsLargerThanMemory) {
  // 80 GiB of memory, 512 MiB context + 32 MiB workspace + 100 GiB reserve ≥ 80 GiB.
  const std::string message =
      parse_error(with_line(kProfile, "allocator_segment_reserve_bytes", "allocator_segment_reserve_bytes: 100GiB"));
  EXPECT_NE(message.find("gpu.yaml:16:"), std::string::npos) << message;
  EXPECT_NE(message.find("'cuda_context_bytes': the fixed overheads"), std::string::npos) << message;
}

TEST(GpuProfileErrors, MalformedYaml) {
  const std::string message = parse_error(with_line(kProfile, "gemm_tile_n", "gemm_tile_n: [256"));
  EXPECT_NE(message.find("gpu.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST(GpuProfileErrors, DuplicateKey) {
  const std::string message = parse_error(kProfile + "sm_count: 100\n");
  EXPECT_NE(message.find("gpu.yaml:25:1: 'sm_count': key appears twice"), std::string::npos) << message;
}

TEST(GpuProfileErrors, EmptyName) {
  const std::string message = parse_error(with_line(kProfile, "name", "name: \"\""));
  EXPECT_NE(message.find("gpu.yaml:1:7: 'name': the profile name is empty"), std::string::npos) << message;
}

}  // namespace
}  // namespace fsdpsim
