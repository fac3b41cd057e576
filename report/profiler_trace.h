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
#include <vector>

#include "report/report.h"

namespace fsdpsim {

/// One collective kind's NCCL kernels within the step.
struct TraceCollectives {
  int64_t kernels = 0;
  double busy_s = 0;  ///< the union of their intervals
};

/// The NCCL kernels of one collective kind and group size that carry PyTorch's record_param_comms metadata ("In msg
/// nelems", "Out msg nelems", "Group size", "dtype" in the kernel's args, as PyTorch 2.2+ writes them).
struct TraceCollectiveSize {
  std::string kind;
  int32_t group_size = 0;
  int64_t kernels = 0;
  int64_t bytes = 0;    ///< Σ the larger of input and output, as nccl-tests sizes a call
  double kernel_s = 0;  ///< Σ kernel durations
  /// Σ bus bytes / Σ kernel time, nccl-tests' convention: all-gather and reduce-scatter × (n−1)/n, all-reduce
  /// × 2(n−1)/n, all-to-all × (n−1)/n of the call size over its time.
  double bus_bw_bytes_per_s = 0;
};

/// Compute kernels inside one GPU-side range (a record_function / module range, FSDP2's "FSDP::..." ranges, or
/// fsdpsim's own unit ranges), each kernel counted in its innermost range.
struct TraceRange {
  int64_t kernels = 0;
  double busy_s = 0;  ///< Σ kernel durations
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
  std::vector<TraceCollectiveSize> collective_sizes;  ///< by kind, then group size (kernels with metadata only)
  std::map<std::string, TraceRange> ranges;           ///< compute kernels by their innermost GPU range
  int64_t unranged_kernels = 0;                       ///< compute kernels in no range
  double optimizer_s = 0;  ///< the union of kernels inside "Optimizer.step#..." ranges (PyTorch's optimizer hook)
  /// Σ compute-kernel time by phase: "optim" for kernels inside "Optimizer.step#...", "bwd" for those launched by a
  /// thread other than the training loop's (the autograd engine's, which also runs FSDP's backward hooks) or inside
  /// an autograd-engine op, "fwd" for the rest (the forward, the loss, FSDP's forward copies). Only when the trace
  /// links kernels to their launches (Kineto's correlation).
  std::map<std::string, double> phase_kernel_s;
};

/// Reads a trace; ConfigError (naming `source`) when it is not JSON or has no device kernels.
TraceStep read_profiler_trace(const std::string& text, const std::string& source);

/// The prediction's counterpart of TraceStep::phase_kernel_s: its non-collective op time by phase ("fwd", "bwd",
/// "optim"; compute, copies and the optimizer, recompute counted as backward).
std::map<std::string, double> predicted_phase_kernel_s(const Report& predicted);

/// The prediction against a trace: step time and exposed communication with their errors, and the measured
/// kernels per collective kind.
std::string trace_comparison_text(const Report& predicted, const TraceStep& measured);

/// A predicted run written as a PyTorch profiler trace (Kineto's Chrome JSON): each simulated step a
/// "ProfilerStep#N" GPU range, every compute op a kernel inside a range named after its FSDP unit and phase
/// ("layers.3 forward"), every optimizer op inside "Optimizer.step#fsdpsim.step", every collective an NCCL kernel
/// ("ncclDevKernel_AllGather_RING_LL") with the record_param_comms metadata PyTorch attaches. Read back with
/// read_profiler_trace it gives the prediction's step time and exposed communication; `simulate --profiler-trace`.
std::string predicted_profiler_trace(const Schedule& schedule, const RunRecord& run);

/// The collective kind of an NCCL kernel name ("ncclDevKernel_AllGather_RING_LL(...)" → "all_gather"); empty for a
/// kernel that is not NCCL's.
std::string nccl_kernel_kind(const std::string& kernel_name);

}  // namespace fsdpsim
