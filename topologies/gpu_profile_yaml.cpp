// GPU profile YAML: the keys are GpuProfile's field names; units are strings ("989TFLOPS", "80GiB", "3.35TB/s",
// "5us"), counts are integers and efficiencies are numbers in (0, 1].
#include <string>
#include <vector>

#include "common/error.h"
#include "common/key_table.h"
#include "common/text.h"
#include "topologies/hardware.h"
#include "topologies/hardware_yaml.h"

namespace fsdpsim {
namespace {

using ProfileRow = KeyRow<GpuProfile>;
using hardware_yaml::exact_bandwidth_text;
using hardware_yaml::exact_bytes_text;
using hardware_yaml::exact_flops_text;
using hardware_yaml::exact_number_text;
using hardware_yaml::exact_time_text;

// An efficiency: a fraction of a peak, in (0, 1].
double read_fraction(const YamlValue& value) {
  const double fraction = value.as_double(0.0, 1.0);
  if (fraction <= 0.0) {
    value.fail("an efficiency of 0 would make every operation take forever", "write a number in (0, 1], e.g. 0.8");
  }
  return fraction;
}

// A count of SMs a communication kernel may hold: at most every SM of the GPU (read after sm_count).
int32_t read_sms(const GpuProfile& p, const YamlValue& value, int64_t min) {
  return static_cast<int32_t>(value.as_int(min, p.sm_count));
}

// Optional calibration written by `fsdpsim calibrate`: measured over predicted busbw, per collective.
ProfileRow busbw_scale_row(const std::string& key, double GpuProfile::*field) {
  return {key, KeyPresence::optional,
          [field](GpuProfile& p, const YamlValue& v) {
            p.*field = v.as_double(0.0, 4.0);
            if (p.*field <= 0)
              v.fail("a bandwidth scale must be positive", "write measured busbw / predicted busbw, e.g. 0.95");
          },
          [field](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
            if (p.*field != 1.0) emit_key(o, k, exact_number_text(p.*field));
          }};
}

// Optional host CPU costs (sim/host_timeline.h): absent is 0, the host not modelled for that kind of work.
ProfileRow host_row(const std::string& key, TimeNs HostCosts::*field) {
  return {key, KeyPresence::optional, [field](GpuProfile& p, const YamlValue& v) { p.host.*field = v.as_time_ns(); },
          [field](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
            if (p.host.*field != 0) emit_key(o, k, exact_time_text(p.host.*field));
          }};
}

// The table's sections follow GpuProfile's (topologies/hardware.h); profile_rows() joins them in this order.

// What the GPU is: its name, architecture, peak rates and memory.
std::vector<ProfileRow> device_rows() {
  using R = KeyPresence;
  return {
      {"name", R::required,
       [](GpuProfile& p, const YamlValue& v) {
         p.name = v.as_string();
         if (p.name.empty()) v.fail("the profile name is empty", "write e.g. name: h100-sxm");
       },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.name); }},
      {"arch", R::required,
       [](GpuProfile& p, const YamlValue& v) {
         p.arch = kGpuArchNames.parse(v.as_choice(kGpuArchNames.names())).value();  // as_choice refused the rest
       },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, std::string(to_string(p.arch)));
       }},
      {"sm_count", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.sm_count = static_cast<int32_t>(v.as_int(1, 100000)); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.sm_count); }},
      {"dense_bf16_flops_per_s", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.dense_bf16_flops_per_s = v.as_flops_per_s(); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_flops_text(p.dense_bf16_flops_per_s));
       }},
      // FP8 is optional: a GPU without FP8 tensor cores (A100) leaves out both FP8 keys (check_fp8 below).
      {"dense_fp8_flops_per_s", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.dense_fp8_flops_per_s = v.as_flops_per_s(); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.dense_fp8_flops_per_s > 0) emit_key(o, k, exact_flops_text(p.dense_fp8_flops_per_s));
       }},
      {"hbm_bytes", R::required, [](GpuProfile& p, const YamlValue& v) { p.hbm_bytes = v.as_bytes(1); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_bytes_text(p.hbm_bytes));
       }},
      {"hbm_bw_bytes_per_s", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.hbm_bw_bytes_per_s = v.as_bandwidth_bytes_per_s(); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_bandwidth_text(p.hbm_bw_bytes_per_s, false));
       }},
  };
}

// The compute model's efficiencies and shapes (sim/compute_model).
std::vector<ProfileRow> compute_model_rows() {
  using R = KeyPresence;
  return {
      {"gemm_max_efficiency", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.gemm_max_efficiency = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_number_text(p.gemm_max_efficiency));
       }},
      {"fp8_gemm_max_efficiency", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.fp8_gemm_max_efficiency = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.dense_fp8_flops_per_s > 0) emit_key(o, k, exact_number_text(p.fp8_gemm_max_efficiency));
       }},
      {"fp8_rowwise_gemm_rate_fraction", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.fp8_rowwise_gemm_rate_fraction = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.dense_fp8_flops_per_s > 0 && p.fp8_rowwise_gemm_rate_fraction != 1.0)
           emit_key(o, k, exact_number_text(p.fp8_rowwise_gemm_rate_fraction));
       }},
      {"gemm_tile_m", R::required, [](GpuProfile& p, const YamlValue& v) { p.gemm_tile_m = v.as_int(1, 65536); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.gemm_tile_m); }},
      {"gemm_tile_n", R::required, [](GpuProfile& p, const YamlValue& v) { p.gemm_tile_n = v.as_int(1, 65536); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.gemm_tile_n); }},
      {"gemm_k_half", R::required, [](GpuProfile& p, const YamlValue& v) { p.gemm_k_half = v.as_int(1, INT32_MAX); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.gemm_k_half); }},
      {"attention_efficiency", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.attention_efficiency = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_number_text(p.attention_efficiency));
       }},
      {"memory_efficiency", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.memory_efficiency = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_number_text(p.memory_efficiency));
       }},
      {"unvectorized_memory_efficiency", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.unvectorized_memory_efficiency = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.unvectorized_memory_efficiency > 0) emit_key(o, k, exact_number_text(p.unvectorized_memory_efficiency));
       }},
      {"reduction_memory_efficiency", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.reduction_memory_efficiency = read_fraction(v); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.reduction_memory_efficiency > 0) emit_key(o, k, exact_number_text(p.reduction_memory_efficiency));
       }},
      // Above 1 only a little: a step cannot run much faster than the best-shape GEMM measurement allows.
      {"sustained_clock_fraction", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.sustained_clock_fraction = v.as_double(0.05, 1.25); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.sustained_clock_fraction != 1.0) emit_key(o, k, exact_number_text(p.sustained_clock_fraction));
       }},
      {"kernel_overhead_ns", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.kernel_overhead_ns = v.as_time_ns(); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_time_text(p.kernel_overhead_ns));
       }},
  };
}

// Memory held outside the PyTorch caching allocator.
std::vector<ProfileRow> memory_overhead_rows() {
  using R = KeyPresence;
  return {
      {"cuda_context_bytes", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.cuda_context_bytes = v.as_bytes(1); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_bytes_text(p.cuda_context_bytes));
       }},
      {"cublas_workspace_bytes", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.cublas_workspace_bytes = v.as_bytes(1); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_bytes_text(p.cublas_workspace_bytes));
       }},
      {"nccl_buffer_bytes", R::required, [](GpuProfile& p, const YamlValue& v) { p.nccl_buffer_bytes = v.as_bytes(1); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_bytes_text(p.nccl_buffer_bytes));
       }},
      // 0 is allowed: a profile may assume no fragmentation at all.
      {"allocator_segment_reserve_bytes", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.allocator_segment_reserve_bytes = v.as_bytes(0); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_bytes_text(p.allocator_segment_reserve_bytes));
       }},
  };
}

// How communication and side-stream kernels slow compute, and the NVLS chunk pipeline.
std::vector<ProfileRow> interference_rows() {
  using R = KeyPresence;
  return {
      // Communication kernels occupy at most every SM; NVLS / registered kernels may be absent (0).
      {"ring_sms", R::required, [](GpuProfile& p, const YamlValue& v) { p.ring_sms = read_sms(p, v, 1); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.ring_sms); }},
      {"nvls_sms", R::required, [](GpuProfile& p, const YamlValue& v) { p.nvls_sms = read_sms(p, v, 0); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.nvls_sms); }},
      {"registered_sms", R::required, [](GpuProfile& p, const YamlValue& v) { p.registered_sms = read_sms(p, v, 0); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) { emit_key(o, k, p.registered_sms); }},
      // Optional: a profile without them gets NCCL's tuning model alone for NVLS calls.
      {"nvls_chunk_handshake_ns", R::optional,
       [](GpuProfile& p, const YamlValue& v) {
         p.nvls_chunk_handshake_ns = v.as_time_ns();
         if (p.nvls_chunk_handshake_ns > 1'000'000) {
           v.fail("a handshake of more than 1 ms per chunk step would make every NVLS call crawl",
                  "write the fixed cost of one chunk step, e.g. 4.15us");
         }
       },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.nvls_chunk_handshake_ns != 0) emit_key(o, k, exact_time_text(p.nvls_chunk_handshake_ns));
       }},
      {"nvls_pipeline_fill_chunks", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.nvls_pipeline_fill_chunks = v.as_double(0.0, 64.0); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.nvls_pipeline_fill_chunks != 0) emit_key(o, k, exact_number_text(p.nvls_pipeline_fill_chunks));
       }},
      {"overlap_slowdown", R::required,
       [](GpuProfile& p, const YamlValue& v) { p.overlap_slowdown = v.as_double(0.0, 1.0); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_number_text(p.overlap_slowdown));
       }},
      {"side_stream_memory_speed", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.side_stream_memory_speed = v.as_double(0.01, 1.0); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.side_stream_memory_speed != 1.0) emit_key(o, k, exact_number_text(p.side_stream_memory_speed));
       }},
  };
}

// What the allocator's cudaMalloc and the host CPU cost.
std::vector<ProfileRow> host_cost_rows() {
  return {
      {"cuda_malloc_ns", KeyPresence::required,
       [](GpuProfile& p, const YamlValue& v) { p.cuda_malloc_ns = v.as_time_ns(); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         emit_key(o, k, exact_time_text(p.cuda_malloc_ns));
       }},
      host_row("host_eager_kernel_ns", &HostCosts::eager_kernel_ns),
      host_row("host_compiled_kernel_ns", &HostCosts::compiled_kernel_ns),
      host_row("host_graph_kernel_ns", &HostCosts::graph_kernel_ns),
      host_row("host_fsdp2_collective_ns", &HostCosts::fsdp2_collective_ns),
      host_row("host_fsdp2_optimizer_unit_ns", &HostCosts::fsdp2_optimizer_unit_ns),
  };
}

// What `fsdpsim calibrate` measured, and what the user pays for the GPU.
std::vector<ProfileRow> calibration_and_price_rows() {
  using R = KeyPresence;
  return {
      busbw_scale_row("busbw_scale_all_gather", &GpuProfile::busbw_scale_all_gather),
      busbw_scale_row("busbw_scale_reduce_scatter", &GpuProfile::busbw_scale_reduce_scatter),
      busbw_scale_row("busbw_scale_all_reduce", &GpuProfile::busbw_scale_all_reduce),
      {"calibration", R::optional, [](GpuProfile& p, const YamlValue& v) { p.calibration = v.as_string(); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (!p.calibration.empty()) emit_key(o, k, p.calibration);
       }},
      {"price_per_gpu_hour", R::optional,
       [](GpuProfile& p, const YamlValue& v) { p.price_per_gpu_hour = v.as_double(0.0, 1e6); },
       [](YAML::Emitter& o, const std::string& k, const GpuProfile& p) {
         if (p.price_per_gpu_hour != 0) emit_key(o, k, exact_number_text(p.price_per_gpu_hour));
       }},
  };
}

// Every key a profile may hold, once: the allowed keys, the reader (in this order) and the writer (the same order).
const std::vector<ProfileRow>& profile_rows() {
  static const std::vector<ProfileRow> rows = [] {
    std::vector<ProfileRow> all;
    for (const std::vector<ProfileRow>& section :
         {device_rows(), compute_model_rows(), memory_overhead_rows(), interference_rows(), host_cost_rows(),
          calibration_and_price_rows()}) {
      all.insert(all.end(), section.begin(), section.end());
    }
    return all;
  }();
  return rows;
}

// FP8 keys come together: an efficiency needs a peak, and a peak needs an efficiency.
void check_fp8(YamlMap& map) {
  const bool has_fp8 = map.has("dense_fp8_flops_per_s");
  if (!has_fp8 && map.has("fp8_gemm_max_efficiency")) {
    map.get("fp8_gemm_max_efficiency")
        .fail("an FP8 efficiency is given but no FP8 peak", "add dense_fp8_flops_per_s, or remove this key");
  }
  if (has_fp8 && !map.has("fp8_gemm_max_efficiency")) (void)map.get("fp8_gemm_max_efficiency");  // "missing" error
  if (!has_fp8 && map.has("fp8_rowwise_gemm_rate_fraction")) {
    map.get("fp8_rowwise_gemm_rate_fraction")
        .fail("an FP8 rowwise rate is given but no FP8 peak", "add dense_fp8_flops_per_s, or remove this key");
  }
}

void check_fixed_overheads(YamlMap& map, const GpuProfile& p) {
  const int64_t fixed = p.cuda_context_bytes + p.cublas_workspace_bytes + p.allocator_segment_reserve_bytes;
  if (fixed >= p.hbm_bytes) {
    map.get("cuda_context_bytes")
        .fail("the fixed overheads (" + format_bytes(fixed) + ") leave no memory of the " + format_bytes(p.hbm_bytes) +
                  " in hbm_bytes",
              "check the units of hbm_bytes and the overheads");
  }
}

}  // namespace

namespace hardware_yaml {

GpuProfile read_gpu_profile(YamlMap& map) {
  // Unknown and misspelled keys first, so a typo gets "did you mean" instead of "missing required key".
  map.allow(keys_of(profile_rows()));
  map.finish();
  GpuProfile profile;
  read_keys(map, profile_rows(), profile);
  check_fp8(map);
  check_fixed_overheads(map, profile);
  return profile;
}

void emit_gpu_profile_keys(YAML::Emitter& out, const GpuProfile& p) {
  write_keys(out, profile_rows(), p);
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
