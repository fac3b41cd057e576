#pragma once
/// What hardware measured, in one shape for the GPU executor that measures it (`fsdpsim calibrate`, exec/cuda/) and
/// the calibration that turns it into a GPU profile (sim/calibration.h): GEMM throughput, collective bus bandwidth
/// in nccl-tests' conventions, device-to-device copy bandwidth.

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"

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

}  // namespace fsdpsim
