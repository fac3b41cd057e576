#pragma once
/// The record of one run of a schedule, predicted or measured, in one shape: when each op ran in each step, the
/// memory peaks, the timeline, the first allocation that did not fit. The simulator (sim/) and the executor (exec/)
/// both produce it; the report layer (report/) renders and compares it without knowing which one did. Which one
/// did is said by the type of `origin`, not inferred from what is empty.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/units.h"
#include "memory/caching_allocator.h"
#include "memory/memory_overheads.h"
#include "memory/memory_tracker.h"

namespace fsdpsim {

/// When one op ran in one step.
struct OpTiming {
  TimeNs start_ns = -1;
  TimeNs end_ns = -1;
};

/// One step of a run.
/// One pipeline stage's memory peaks in a step.
struct StagePeaks {
  MemoryPeak allocated;
  MemoryPeak reserved;
};

struct StepRun {
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  IdVector<OpId, OpTiming> ops;  ///< by op id
  MemoryPeak peak_allocated;
  MemoryPeak peak_reserved;
  int64_t cuda_malloc_calls = 0;  ///< new allocator segments during this step
  /// Pipeline parallelism: each stage's peaks (the fields above are those of RunRecord::memory_stage); empty without.
  std::vector<StagePeaks> stage_peaks;
};

/// What the collective cost model chose for one call of a predicted run.
struct CollectiveChoice {
  std::string_view algorithm;    ///< NCCL_ALGO name ("ring", "nvls", ...); empty for ops that are not collectives
  std::string_view protocol;     ///< NCCL_PROTO name ("simple", "ll128", "ll")
  double busbw_bytes_per_s = 0;  ///< the call's standalone bus bandwidth (nccl-tests convention)
};

/// One rank slower than the others. Synchronous collectives make every rank wait for it, so a prediction with a
/// straggler simulates that rank: its compute kernels take `compute_slowdown` times as long, and its NICs run
/// `nic_slowdown` times slower (a ring runs at its slowest hop, so every collective crossing the network does).
struct Straggler {
  double compute_slowdown = 1.0;  ///< a GPU at 90% clock: 1/0.9
  double nic_slowdown = 1.0;
  [[nodiscard]] bool any() const { return compute_slowdown != 1.0 || nic_slowdown != 1.0; }
};

/// One memory event of an op: its allocations (at its start) or its releases (at its end).
struct MemoryEvent {
  OpId op;
  bool end = false;
  bool operator==(const MemoryEvent&) const = default;
};

/// A run the simulator predicted.
struct Prediction {
  IdVector<OpId, CollectiveChoice> collectives;  ///< by op id
  MemoryOverheads overheads;                     ///< from the GPU profile and the chosen algorithms
  Straggler straggler;                           ///< the simulated rank's slowdowns (none: every rank alike)
  /// By op id: when the host had issued it, from its step's start (sim/host_timeline.h); empty where the GPU
  /// profile models no host cost.
  std::vector<TimeNs> host_issue_ns;
  /// Stage 0's host walk of a whole step and the kernels it issues (0 without a host model).
  TimeNs host_step_ns = 0;
  int64_t host_kernels_per_step = 0;
  /// The last step's memory events in the order the simulator performed them: the start of every op that allocates
  /// and the end of every op that frees (SimOptions::record_memory_order; empty when not recorded). The host
  /// backend performs its allocations and releases in this order, so its measured peak equals the predicted one.
  std::vector<MemoryEvent> memory_order;
};

/// Device memory a GPU run measured beyond the IR's buffers.
struct MeasuredDeviceMemory {
  int64_t device_total_bytes = 0;      ///< what CUDA lets a process use on the GPU
  MemoryOverheads overheads;           ///< CUDA context, cuBLAS, NCCL as measured
  int64_t executor_scratch_bytes = 0;  ///< GEMM operands and collective staging outside the IR's buffers
};

/// A run the executor measured.
struct Measurement {
  std::string backend;  ///< "host" or "cuda"
  std::string device;   ///< "host (8 threads as ranks)", "NVIDIA H100 80GB HBM3", ...
  /// GPU runs: the overheads rank 0 measured (cudaMemGetInfo), its executor's scratch and the memory CUDA lets it
  /// use; absent for the host backend, whose memory is not a GPU's.
  std::optional<MeasuredDeviceMemory> device_memory;
  bool collectives_emulated = false;  ///< every collective ran as a device copy of its bytes (--emulate-world)
};

/// Everything a run produced.
struct RunRecord {
  std::vector<StepRun> steps;
  std::vector<MemorySample> timeline;  ///< across all steps (predicted runs that record it)
  std::optional<OomEvent> oom;
  AllocatorStats allocator;
  uint64_t events = 0;  ///< events the simulator processed (its speed); 0 for a measured run
  /// Micro-batch windows the simulator wrote as copies of an identical one instead of simulating
  /// (sim/micro_batch_replay.h); their events count in `events`.
  uint64_t replayed_windows = 0;
  /// The pipeline stage whose memory the peaks, timeline, OOM and allocator figures describe: the one out of memory,
  /// else the highest reserved peak (0 without pipeline parallelism).
  int32_t memory_stage = 0;
  std::variant<Prediction, Measurement> origin;

  [[nodiscard]] const Prediction* prediction() const { return std::get_if<Prediction>(&origin); }
  [[nodiscard]] const Measurement* measurement() const { return std::get_if<Measurement>(&origin); }
};

}  // namespace fsdpsim
