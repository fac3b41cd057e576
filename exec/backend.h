#pragma once
/// What the interpreter needs from a device to run a schedule: streams, events, stream-ordered buffers and the work
/// of each op. Two implementations: the CUDA/NCCL backend (exec/cuda/) and the host backend (threads as ranks,
/// exec/host/). The interpreter (exec/interpreter.h) drives either one the same way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "memory/memory_tracker.h"
#include "run/run_record.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// What one step measured on one rank.
struct StepMeasurement {
  std::vector<TimeNs> start_ns;      ///< per op, from the start of the step
  std::vector<TimeNs> end_ns;        ///< per op, from the start of the step
  TimeNs step_ns = 0;                ///< from the step's start to the last op's end
  int64_t peak_allocated_bytes = 0;  ///< live buffer bytes at their highest (allocator-rounded, as PyTorch reports)
  int64_t peak_reserved_bytes = 0;   ///< device memory held by the allocator at its highest
  OpId peak_op;                      ///< the op whose allocation reached the allocated peak
  CategoryBytes peak_breakdown{};    ///< live bytes per buffer category at the allocated peak
  /// Pipeline parallelism: each stage's peaks (the peak fields above are those of `memory_stage`, the fullest);
  /// empty without, or where the backend runs one GPU.
  std::vector<StagePeaks> stage_peaks;
  int32_t memory_stage = 0;
};

/// What an executor run produced: rank 0's steps as a measured run record (its origin says the backend, the device
/// and, on GPUs, the memory measured beyond the IR's buffers), and every problem any rank found.
struct ExecResult {
  RunRecord run;
  std::vector<std::string> problems;
  [[nodiscard]] const Measurement& measurement() const { return std::get<Measurement>(run.origin); }
  [[nodiscard]] Measurement& measurement() { return std::get<Measurement>(run.origin); }
};

/// A device, as the interpreter sees it. Every call but end_step() only enqueues; work runs asynchronously on the
/// backend's streams in enqueue order, as CUDA streams run it.
class Backend {
 public:
  virtual ~Backend() = default;

  /// Creates one backend stream per IR stream and allocates the persistent buffers (before the first step).
  virtual void setup(const Schedule& schedule) = 0;
  /// Marks the start of a step (all streams idle).
  virtual void begin_step(int32_t step) = 0;
  /// Makes `stream` wait until op `op` (on any stream) has finished (cudaStreamWaitEvent).
  virtual void wait(StreamId stream, OpId op) = 0;
  /// Records the start of `op` on its stream.
  virtual void mark_start(const Op& op) = 0;
  /// Allocates `buffer` for use on `stream`, in stream order.
  virtual void allocate(BufferId buffer, StreamId stream) = 0;
  /// Enqueues the op's work (GEMMs, collective, copy, optimizer; nothing for sync) on its stream.
  virtual void run(const Op& op) = 0;
  /// Records the end of `op` on its stream (what `wait` waits for).
  virtual void mark_end(const Op& op) = 0;
  /// Releases `buffer` in stream order after the work enqueued so far on `stream`.
  virtual void release(BufferId buffer, StreamId stream) = 0;
  /// Waits for every stream and returns what the step measured. Throws Error on a failed check or a fault.
  virtual StepMeasurement end_step() = 0;
  /// Problems found while running (failed data checks, ops that ran before their dependencies); empty when clean.
  [[nodiscard]] virtual std::vector<std::string> problems() const = 0;
};

}  // namespace fsdpsim
