// GPU profile YAML: the keys are GpuProfile's field names; units are strings ("989TFLOPS", "80GiB", "3.35TB/s",
// "5us"), counts are integers and efficiencies are numbers in (0, 1].
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "topologies/hardware.h"
#include "topologies/hardware_yaml.h"

namespace fsdpsim {
namespace {

// Every key a profile may hold, in field order (the writer's order too).
const std::vector<std::string>& profile_keys() {
  static const std::vector<std::string> keys{"name",
                                             "arch",
                                             "sm_count",
                                             "dense_bf16_flops_per_s",
                                             "dense_fp8_flops_per_s",
                                             "hbm_bytes",
                                             "hbm_bw_bytes_per_s",
                                             "gemm_max_efficiency",
                                             "fp8_gemm_max_efficiency",
                                             "gemm_tile_m",
                                             "gemm_tile_n",
                                             "gemm_k_half",
                                             "attention_efficiency",
                                             "memory_efficiency",
                                             "sustained_clock_fraction",
                                             "kernel_overhead_ns",
                                             "cuda_context_bytes",
                                             "cublas_workspace_bytes",
                                             "nccl_buffer_bytes",
                                             "allocator_segment_reserve_bytes",
                                             "ring_sms",
                                             "nvls_sms",
                                             "registered_sms",
                                             "nvls_chunk_handshake_ns",
                                             "nvls_pipeline_fill_chunks",
                                             "overlap_slowdown",
                                             "cuda_malloc_ns",
                                             "busbw_scale_all_gather",
                                             "busbw_scale_reduce_scatter",
                                             "busbw_scale_all_reduce",
                                             "calibration"};
  return keys;
}

// An efficiency: a fraction of a peak, in (0, 1].
double read_fraction(YamlMap& map, const std::string& key) {
  const YamlValue value = map.get(key);
  const double fraction = value.as_double(0.0, 1.0);
  if (fraction <= 0.0) {
    value.fail("an efficiency of 0 would make every operation take forever", "write a number in (0, 1], e.g. 0.8");
  }
  return fraction;
}

int32_t read_count(YamlMap& map, const std::string& key, int64_t min, int64_t max) {
  return static_cast<int32_t>(map.get(key).as_int(min, max));
}

void read_identity_and_peaks(YamlMap& map, GpuProfile& p) {
  const YamlValue name = map.get("name");
  p.name = name.as_string();
  if (p.name.empty()) name.fail("the profile name is empty", "write e.g. name: h100-sxm");
  p.arch = kGpuArchNames.parse(map.get("arch").as_choice(kGpuArchNames.names())).value();  // as_choice refused others
  p.sm_count = read_count(map, "sm_count", 1, 100000);
  p.dense_bf16_flops_per_s = map.get("dense_bf16_flops_per_s").as_flops_per_s();
  // FP8 is optional: a GPU without FP8 tensor cores (A100) leaves both FP8 keys out.
  const bool has_fp8 = map.has("dense_fp8_flops_per_s");
  if (has_fp8) p.dense_fp8_flops_per_s = map.get("dense_fp8_flops_per_s").as_flops_per_s();
  if (!has_fp8 && map.has("fp8_gemm_max_efficiency")) {
    map.get("fp8_gemm_max_efficiency")
        .fail("an FP8 efficiency is given but no FP8 peak", "add dense_fp8_flops_per_s, or remove this key");
  }
  if (has_fp8) p.fp8_gemm_max_efficiency = read_fraction(map, "fp8_gemm_max_efficiency");
  p.hbm_bytes = map.get("hbm_bytes").as_bytes(1);
  p.hbm_bw_bytes_per_s = map.get("hbm_bw_bytes_per_s").as_bandwidth_bytes_per_s();
}

void read_compute_model(YamlMap& map, GpuProfile& p) {
  p.gemm_max_efficiency = read_fraction(map, "gemm_max_efficiency");
  p.gemm_tile_m = map.get("gemm_tile_m").as_int(1, 65536);
  p.gemm_tile_n = map.get("gemm_tile_n").as_int(1, 65536);
  p.gemm_k_half = map.get("gemm_k_half").as_int(1, INT32_MAX);
  p.attention_efficiency = read_fraction(map, "attention_efficiency");
  p.memory_efficiency = read_fraction(map, "memory_efficiency");
  if (map.has("sustained_clock_fraction")) {
    // Above 1 only a little: a step cannot run much faster than the best-shape GEMM measurement allows.
    p.sustained_clock_fraction = map.get("sustained_clock_fraction").as_double(0.05, 1.25);
  }
  p.kernel_overhead_ns = map.get("kernel_overhead_ns").as_time_ns();
}

void read_memory_overheads(YamlMap& map, GpuProfile& p) {
  p.cuda_context_bytes = map.get("cuda_context_bytes").as_bytes(1);
  p.cublas_workspace_bytes = map.get("cublas_workspace_bytes").as_bytes(1);
  p.nccl_buffer_bytes = map.get("nccl_buffer_bytes").as_bytes(1);
  // 0 is allowed: a profile may assume no fragmentation at all.
  p.allocator_segment_reserve_bytes = map.get("allocator_segment_reserve_bytes").as_bytes(0);
  const int64_t fixed = p.cuda_context_bytes + p.cublas_workspace_bytes + p.allocator_segment_reserve_bytes;
  if (fixed >= p.hbm_bytes) {
    map.get("cuda_context_bytes")
        .fail("the fixed overheads (" + format_bytes(fixed) + ") leave no memory of the " + format_bytes(p.hbm_bytes) +
                  " in hbm_bytes",
              "check the units of hbm_bytes and the overheads");
  }
}

void read_interference(YamlMap& map, GpuProfile& p) {
  // Communication kernels occupy at most every SM; NVLS / registered kernels may be absent (0).
  p.ring_sms = read_count(map, "ring_sms", 1, p.sm_count);
  p.nvls_sms = read_count(map, "nvls_sms", 0, p.sm_count);
  p.registered_sms = read_count(map, "registered_sms", 0, p.sm_count);
  // Optional: a profile without them gets NCCL's tuning model alone for NVLS calls.
  if (map.has("nvls_chunk_handshake_ns")) {
    const YamlValue v = map.get("nvls_chunk_handshake_ns");
    p.nvls_chunk_handshake_ns = v.as_time_ns();
    if (p.nvls_chunk_handshake_ns > 1'000'000) {
      v.fail("a handshake of more than 1 ms per chunk step would make every NVLS call crawl",
             "write the fixed cost of one chunk step, e.g. 4.15us");
    }
  }
  if (map.has("nvls_pipeline_fill_chunks")) {
    p.nvls_pipeline_fill_chunks = map.get("nvls_pipeline_fill_chunks").as_double(0.0, 64.0);
  }
  p.overlap_slowdown = map.get("overlap_slowdown").as_double(0.0, 1.0);
  p.cuda_malloc_ns = map.get("cuda_malloc_ns").as_time_ns();
}

// Optional calibration written by `fsdpsim calibrate`: measured over predicted busbw, per collective.
void read_calibration(YamlMap& map, GpuProfile& p) {
  const auto scale = [&](const char* key, double& field) {
    if (!map.has(key)) return;
    const YamlValue v = map.get(key);
    field = v.as_double(0.0, 4.0);
    if (field <= 0) v.fail("a bandwidth scale must be positive", "write measured busbw / predicted busbw, e.g. 0.95");
  };
  scale("busbw_scale_all_gather", p.busbw_scale_all_gather);
  scale("busbw_scale_reduce_scatter", p.busbw_scale_reduce_scatter);
  scale("busbw_scale_all_reduce", p.busbw_scale_all_reduce);
  p.calibration = map.string_or("calibration", "");
}

}  // namespace

namespace hardware_yaml {

GpuProfile read_gpu_profile(YamlMap& map) {
  // Unknown and misspelled keys first, so a typo gets "did you mean" instead of "missing required key".
  map.allow(profile_keys());
  map.finish();
  GpuProfile profile;
  read_identity_and_peaks(map, profile);
  read_compute_model(map, profile);
  read_memory_overheads(map, profile);
  read_interference(map, profile);
  read_calibration(map, profile);
  return profile;
}

void emit_gpu_profile_keys(YAML::Emitter& out, const GpuProfile& p) {
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "arch" << YAML::Value << std::string(to_string(p.arch));
  out << YAML::Key << "sm_count" << YAML::Value << p.sm_count;
  out << YAML::Key << "dense_bf16_flops_per_s" << YAML::Value << exact_flops_text(p.dense_bf16_flops_per_s);
  if (p.dense_fp8_flops_per_s > 0) {
    out << YAML::Key << "dense_fp8_flops_per_s" << YAML::Value << exact_flops_text(p.dense_fp8_flops_per_s);
  }
  out << YAML::Key << "hbm_bytes" << YAML::Value << exact_bytes_text(p.hbm_bytes);
  out << YAML::Key << "hbm_bw_bytes_per_s" << YAML::Value << exact_bandwidth_text(p.hbm_bw_bytes_per_s, false);
  out << YAML::Key << "gemm_max_efficiency" << YAML::Value << exact_number_text(p.gemm_max_efficiency);
  if (p.dense_fp8_flops_per_s > 0) {
    out << YAML::Key << "fp8_gemm_max_efficiency" << YAML::Value << exact_number_text(p.fp8_gemm_max_efficiency);
  }
  out << YAML::Key << "gemm_tile_m" << YAML::Value << p.gemm_tile_m;
  out << YAML::Key << "gemm_tile_n" << YAML::Value << p.gemm_tile_n;
  out << YAML::Key << "gemm_k_half" << YAML::Value << p.gemm_k_half;
  out << YAML::Key << "attention_efficiency" << YAML::Value << exact_number_text(p.attention_efficiency);
  out << YAML::Key << "memory_efficiency" << YAML::Value << exact_number_text(p.memory_efficiency);
  if (p.sustained_clock_fraction != 1.0) {
    out << YAML::Key << "sustained_clock_fraction" << YAML::Value << exact_number_text(p.sustained_clock_fraction);
  }
  out << YAML::Key << "kernel_overhead_ns" << YAML::Value << exact_time_text(p.kernel_overhead_ns);
  out << YAML::Key << "cuda_context_bytes" << YAML::Value << exact_bytes_text(p.cuda_context_bytes);
  out << YAML::Key << "cublas_workspace_bytes" << YAML::Value << exact_bytes_text(p.cublas_workspace_bytes);
  out << YAML::Key << "nccl_buffer_bytes" << YAML::Value << exact_bytes_text(p.nccl_buffer_bytes);
  out << YAML::Key << "allocator_segment_reserve_bytes" << YAML::Value
      << exact_bytes_text(p.allocator_segment_reserve_bytes);
  out << YAML::Key << "ring_sms" << YAML::Value << p.ring_sms;
  out << YAML::Key << "nvls_sms" << YAML::Value << p.nvls_sms;
  out << YAML::Key << "registered_sms" << YAML::Value << p.registered_sms;
  if (p.nvls_chunk_handshake_ns != 0) {
    out << YAML::Key << "nvls_chunk_handshake_ns" << YAML::Value << exact_time_text(p.nvls_chunk_handshake_ns);
  }
  if (p.nvls_pipeline_fill_chunks != 0) {
    out << YAML::Key << "nvls_pipeline_fill_chunks" << YAML::Value << exact_number_text(p.nvls_pipeline_fill_chunks);
  }
  out << YAML::Key << "overlap_slowdown" << YAML::Value << exact_number_text(p.overlap_slowdown);
  out << YAML::Key << "cuda_malloc_ns" << YAML::Value << exact_time_text(p.cuda_malloc_ns);
  const auto scale = [&](const char* key, double value) {
    if (value != 1.0) out << YAML::Key << key << YAML::Value << exact_number_text(value);
  };
  scale("busbw_scale_all_gather", p.busbw_scale_all_gather);
  scale("busbw_scale_reduce_scatter", p.busbw_scale_reduce_scatter);
  scale("busbw_scale_all_reduce", p.busbw_scale_all_reduce);
  if (!p.calibration.empty()) out << YAML::Key << "calibration" << YAML::Value << p.calibration;
}

}  // namespace hardware_yaml

GpuProfile parse_gpu_profile_yaml(const std::string& text, const std::string& source) {
  const YamlDocument doc = load_yaml_text(text, source);
  YamlMap map(doc.root, doc.source, "");
  return hardware_yaml::read_gpu_profile(map);
}

std::string gpu_profile_to_yaml(const GpuProfile& profile) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  hardware_yaml::emit_gpu_profile_keys(out, profile);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace fsdpsim
