#pragma once
/// A run's answer as one value: step time, rates per GPU, exposed communication, the memory peak with its breakdown
/// and the OOM verdict, the longest waits, the collectives. Assembled here from a run record, predicted (sim/) or
/// measured (exec/) alike, so the two compare field by field and op by op; rendered as text, JSON and a Chrome trace.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"
#include "memory/memory_overheads.h"
#include "report/memory_verdict.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "schedule/summary.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// A gap on the compute stream: the op that waited and the op it waited for.
struct ComputeWait {
  OpId op;
  OpId blocker;  ///< none: the op waited for the step's start, or for the host
  TimeNs wait_ns = 0;
  bool host = false;  ///< the host had not issued the op: most of the wait was the CPU's
};

/// Per-kind totals of the step's collectives.
struct CollectiveTotals {
  OpKind kind = OpKind::all_gather;
  std::string group;
  int32_t ranks = 0;
  int32_t domains = 0;
  int64_t count = 0;
  int64_t size_bytes = 0;        ///< of the largest call
  TimeNs busy_ns = 0;            ///< sum of durations in the steady step
  std::string algorithm;         ///< NCCL algorithm/protocol chosen for the largest call
  double busbw_bytes_per_s = 0;  ///< standalone busbw of the largest call
};

/// One op's times in the steady step (for op-by-op comparison with a measured run).
struct OpRecord {
  OpId id{0};
  std::string name;
  OpKind kind = OpKind::compute;
  Phase phase = Phase::fwd;
  std::string stream;
  TimeNs start_ns = 0;  ///< from the start of the step
  TimeNs duration_ns = 0;
};

/// Everything a user reads after a run.
struct Report {
  std::string source = "fsdpsim simulate";  ///< or "fsdpsim exec (cuda|host)"
  std::string model, implementation, strategy, topology, gpu;
  int32_t world_size = 0, nodes = 0, micro_batches = 0;
  /// The job's layout in one line (job/job.h layout_text); empty for a schedule read from a file.
  std::string layout;
  /// Settings the inputs allow but a user most likely did not mean (job/job.h), each with its fix.
  std::vector<std::string> warnings;
  ModelSize model_size;  ///< parameters and FLOPs per token (zeros when the schedule does not record them)
  /// The rank the figures are for where ranks differ: the busiest expert-parallel rank of a skewed MoE routing, a
  /// straggler (schedule info and the prediction say which); empty when every rank is alike.
  std::string simulated_rank;
  /// What the straggler costs every rank per step: this step time less the same job's without it (0: no straggler,
  /// or not computed; plan/rank_differences.h fills it).
  double straggler_cost_s = 0;
  /// Input settings read but not modelled (Megatron-LM flags such as --lr): the caller fills it from the job.
  std::vector<std::string> read_not_modelled;
  /// The measured kernel tables that timed GEMMs or attention in place of the profile's efficiencies (`simulate
  /// --gemm-table / --attention-table`), one line each, such as "attention: FILE, kernel cudnn"; empty when none.
  std::vector<std::string> measured_tables;

  /// Pipeline parallelism (pipeline_stages > 1): the schedule, the time stage 0's compute stream waits for
  /// activations and gradients from the other stages (the bubble, with the transfers it waits on), and each
  /// stage's steady-step peaks; the memory figures are those of `memory_stage`, the fullest stage.
  int32_t pipeline_stages = 1;
  int32_t virtual_stages = 1;
  std::string pipeline_schedule;
  double pipeline_bubble_s = 0;
  /// The host (sim/host_timeline.h): how long stage 0's CPU takes to issue a step's kernels (`host_kernels_per_step`,
  /// at the schedule's `host_dispatch`), and the time its compute stream waited for an op the host had not issued yet
  /// (not counted as exposed communication). All 0 where the GPU profile models no host cost.
  double host_walk_s = 0;
  double host_bound_s = 0;
  int64_t host_kernels_per_step = 0;
  std::string host_dispatch;
  /// Per stage: the time its compute stream waits for other stages (entry 0 is pipeline_bubble_s). Stage 0 is
  /// the one that waits longest under 1F1B; a V schedule moves the waiting to the last rank.
  std::vector<double> pipeline_stage_bubble_s;
  int32_t memory_stage = 0;
  std::vector<int64_t> stage_peak_allocated_bytes;
  std::vector<int64_t> stage_peak_reserved_bytes;

  double step_time_s = 0;
  double first_step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;  ///< model FLOPs per second / dense BF16 peak
  double exposed_comm_s = 0;
  std::map<std::string, double> exposed_comm_by_phase_s;
  std::map<std::string, double> exposed_comm_by_kind_s;

  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t first_step_peak_reserved_bytes = 0;
  int64_t gpu_memory_bytes = 0;
  MemoryOverheads overheads;
  /// A GPU run's overheads are what cudaMemGetInfo measured (CUDA context, cuBLAS, NCCL), not the profile's figures.
  bool overheads_measured = false;
  /// Device memory a GPU run's executor held beyond the IR's buffers and the overheads (GEMM operands and collective
  /// staging it keeps in scratch); a training framework holds no such memory, so it is reported apart.
  int64_t executor_scratch_bytes = 0;
  /// The run replaced every collective by a device copy of the same bytes (`exec --emulate-world`): its collective
  /// durations and exposed communication are not those of a real job and are not compared.
  bool collectives_emulated = false;
  bool oom = false;  ///< memory.fit == out_of_memory
  std::string oom_reason;
  /// The verdict every command prints (report/memory_verdict.h); a prediction carries the published error band, a
  /// measurement none.
  MemoryVerdict memory;
  /// tokens/s per GPU × the published throughput band's ratios (equal to the prediction for a measurement).
  double tokens_per_s_band_low = 0;
  double tokens_per_s_band_high = 0;
  double peak_time_s = 0;  ///< from the start of the steady step
  std::string peak_op;     ///< the op whose allocation reached the peak
  std::string peak_phase;
  std::map<std::string, int64_t> memory_breakdown;  ///< bytes per category at the peak, plus the overheads
  std::map<std::string, int64_t> persistent_bytes;  ///< memory that lives the whole step, per category
  int64_t persistent_total_bytes = 0;
  /// CPU offload: activations one GPU holds in host memory at once (the offloaded bytes of one micro-batch), the
  /// node's total, and what each GPU gets of its shared host link when all copy at once.
  int64_t host_offload_bytes_per_gpu = 0;
  int64_t host_offload_bytes_per_node = 0;
  int64_t host_memory_bytes = 0;  ///< the node's (topology host_memory; 0: not stated)
  double host_bw_per_gpu_bytes_per_s = 0;
  int32_t gpus_per_host_link = 1;
  int64_t cuda_malloc_calls_first_step = 0;
  int64_t fragmentation_bytes = 0;  ///< peak reserved − peak allocated

  std::vector<ComputeWait> longest_waits;
  std::vector<std::string> longest_wait_lines;
  std::vector<CollectiveTotals> collectives;
  std::vector<OpRecord> ops;
  uint64_t events = 0;
};

/// How much of the report to build: sweeps only need the headline figures.
enum class ReportDetail : uint8_t { full, summary };

/// Builds the report of a run. `summary` leaves out the per-op records and the collectives table; `memory_margin` is
/// the safety margin of the verdict.
Report make_report(const Schedule& schedule, const Topology& topology, const RunRecord& run,
                   ReportDetail detail = ReportDetail::full, double memory_margin = kDefaultMemoryMargin);

/// Human-readable report.
std::string report_text(const Report& report);
/// JSON with every field of docs/architecture.md §2.4 (and more), deterministic byte for byte.
std::string report_json(const Report& report);
/// Chrome-trace JSON (opens in Perfetto): one track per stream with every op of every step, and counter tracks of
/// memory per category.
std::string chrome_trace(const Schedule& schedule, const RunRecord& run);

}  // namespace fsdpsim
