#pragma once
/// PyTorch profiler traces (`torch.profiler` with `on_trace_ready=tensorboard_trace_handler` or
/// `prof.export_chrome_trace`: Kineto's Chrome-trace JSON) reduced to what fsdpsim predicts for one step: the GPU
/// step time, the compute kernels' busy time, the NCCL kernels' busy time per collective kind, and the
/// communication no compute kernel overlaps (exposed). Only device kernels count ("cat": "kernel"); the step is the
/// last complete `ProfilerStep#N` range on the GPU ("gpu_user_annotation"), or the span of every kernel when the
/// trace has none.

#include <cstdint>
#include <map>
#include <string>

#include "report/report.h"

namespace fsdpsim {

/// One collective kind's NCCL kernels within the step.
struct TraceCollectives {
  int64_t kernels = 0;
  double busy_s = 0;  ///< the union of their intervals
};

/// What a profiler trace says about one step.
struct TraceStep {
  std::string step_name;  ///< "ProfilerStep#3", or "whole trace"
  double step_time_s = 0;
  double compute_busy_s = 0;                            ///< the union of non-NCCL kernels
  double comm_busy_s = 0;                               ///< the union of NCCL kernels
  double exposed_comm_s = 0;                            ///< NCCL kernel time with no compute kernel running
  std::map<std::string, TraceCollectives> collectives;  ///< by kind: all_gather, reduce_scatter, all_reduce, ...
  int64_t kernels = 0;
};

/// Reads a trace; ConfigError (naming `source`) when it is not JSON or has no device kernels.
TraceStep read_profiler_trace(const std::string& text, const std::string& source);

/// The prediction against a trace: step time and exposed communication with their errors, and the measured
/// kernels per collective kind.
std::string trace_comparison_text(const Report& predicted, const TraceStep& measured);

/// The collective kind of an NCCL kernel name ("ncclDevKernel_AllGather_RING_LL(...)" → "all_gather"); empty for a
/// kernel that is not NCCL's.
std::string nccl_kernel_kind(const std::string& kernel_name);

}  // namespace fsdpsim
