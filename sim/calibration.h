#pragma once
/// Calibration: measured GEMM throughput, HBM bandwidth and collective bus bandwidth turned into a GPU profile that
/// `simulate --profile` uses. The measurements come from the GPUs present (`fsdpsim calibrate`, exec/cuda) or from
/// the text output of nccl-tests (all_gather_perf, reduce_scatter_perf, all_reduce_perf).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// One GEMM measurement.
struct GemmSample {
  int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::bf16;
  double flops_per_s = 0;
};

/// One collective measurement, in nccl-tests' conventions.
struct CollectiveSample {
  OpKind kind = OpKind::all_gather;
  int32_t ranks = 0;
  int32_t nodes = 1;       ///< hosts the ranks ran on
  int64_t size_bytes = 0;  ///< the size nccl-tests prints (whole gathered/scattered buffer)
  DType dtype = DType::fp32;
  double time_s = 0;
  double busbw_bytes_per_s = 0;
  int64_t wrong = 0;     ///< nccl-tests' #wrong
  SourceLocation where;  ///< the log and line it was read from (empty for a measurement)
};

/// What the GPUs present measured (`fsdpsim calibrate`).
struct GpuMeasurements {
  std::string device;  ///< cudaGetDeviceProperties name
  int32_t sm_count = 0;
  int64_t memory_bytes = 0;
  std::vector<GemmSample> gemms;
  std::vector<CollectiveSample> collectives;
  double copy_bw_bytes_per_s = 0;  ///< HBM bytes read + written per second by a device-to-device copy
};

/// Parses the output of an nccl-tests binary. `kind` names the collective when the log does not say (older
/// versions); rows with #wrong > 0 are kept and flagged. Errors name the file and line.
std::vector<CollectiveSample> parse_nccl_tests_log(const std::string& text, const std::string& source,
                                                   std::optional<OpKind> kind);

/// What calibration changed, for the report `fsdpsim calibrate` prints.
struct CalibrationSummary {
  std::vector<std::string> lines;
};

/// A copy of `base` with the measured constants: GEMM efficiencies from the best BF16/FP8 samples, memory
/// efficiency from the copy bandwidth, the memory CUDA reports (hbm_bytes), and per-collective busbw scales (measured /
/// predicted on `topology`, from the largest size of each kind). Samples that are absent leave the base values. `label`
/// says where they came from.
GpuProfile calibrate_profile(const GpuProfile& base, const Topology& topology, const GpuMeasurements& measured,
                             const std::string& label, CalibrationSummary* summary);

}  // namespace fsdpsim
