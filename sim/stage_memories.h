#pragma once
/// The memory side of the engine (docs/architecture.md §5.6, §5.8, §7): one caching allocator and MemoryTracker per
/// pipeline stage (each stage's rank is its own GPU), sized to the GPU's memory less the overheads outside the
/// allocator; an op's allocations at its start, with the cudaMalloc delay a new segment costs it; its releases at its
/// end; the order of those events (SimOptions::record_memory_order); and, when the run is over, the figures of the
/// worst stage: the one out of memory, else the one with the highest reserved peak.

#include <cstdint>
#include <vector>

#include "memory/memory_overheads.h"
#include "memory/memory_tracker.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "sim/engine.h"
#include "sim/flat_ops.h"
#include "sim/micro_batch_translation.h"
#include "sim/step_state.h"

namespace fsdpsim {

/// What the caching allocator can reserve: the GPU's memory less what the CUDA context, cuBLAS and NCCL hold before
/// the first tensor; at least one byte.
int64_t allocator_capacity(const Topology& t, const MemoryOverheads& overheads);

/// Every stage's memory through a run.
class StageMemories {
 public:
  /// `schedule`, `flat` and `stages` must outlive this.
  StageMemories(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                const MemoryOverheads& overheads, const FlatOps& flat, const StreamStages& stages);

  /// Allocates the persistent buffers (model, optimizer and FSDP buffers set up before the first step) at time 0.
  void allocate_persistent();
  /// A step starts at `now`: peaks restart, and the step's memory order and new segments are counted afresh.
  void begin_step(TimeNs now, int32_t step);
  /// The step is over: each stage's peaks (with pipeline stages) into `run`, and its new segments counted.
  void end_step(StepRun& run);

  /// Op `op_id` starts: allocates its buffers on its stream's stage; returns the cudaMalloc delay of the new
  /// allocator segments that took (0 when none).
  TimeNs allocate_at_start(OpId op_id, const FlatOp& op, TimeNs now, int32_t step) {
    if (op.allocs_end == op.allocs_begin) return 0;
    return allocate_buffers(op_id, op, now, step);
  }
  /// A pipeline receive starts with its send: allocates its buffers, each on its own stage.
  void allocate_at_rendezvous(OpId recv, const FlatOp& r, TimeNs now, int32_t step);
  /// Op `op_id` ends: releases the buffers it frees.
  void release_at_end(OpId op_id, const FlatOp& op, TimeNs now) {
    if (op.frees_end > op.frees_begin) release_buffers(op_id, op, now);
  }

  /// Some stage failed an allocation (its memory is counted outside the allocator from then on).
  [[nodiscard]] bool any_oom() const;
  /// Each stage's state now, into `out` (one per stage), for a replay boundary.
  void state(std::vector<MemoryState>& out) const;
  /// The memory events recorded so far this step (SimOptions::record_memory_order).
  [[nodiscard]] size_t memory_events() const { return order_.size(); }
  /// Writes `windows` windows after `cur` as moved copies of the one from `prev` to `cur` (each `period_ns` later):
  /// the memory samples and memory events repeated, the buffers live at `cur` renamed to their counterparts
  /// `windows` micro-batches on. `*_events`: memory_events() at each end.
  void replay_windows(const std::vector<MemoryState>& prev, const std::vector<MemoryState>& cur, size_t prev_events,
                      size_t cur_events, int32_t windows, TimeNs period_ns, const MicroBatchTranslation& translation);

  /// The run is over: the worst stage's peaks, segments, timeline, OOM and allocator figures into `result` (its
  /// steps are the run's), and the last step's memory order into `order`.
  void finish_record(RunRecord& result, std::vector<MemoryEvent>& order);

 private:
  // Inline below: they run at the start and end of every op that allocates or frees.
  TimeNs allocate_buffers(OpId op_id, const FlatOp& op, TimeNs now, int32_t step);
  void release_buffers(OpId op_id, const FlatOp& op, TimeNs now);
  MemoryTracker& memory_of(BufferId b) { return memories_[static_cast<size_t>(schedule_.buffers[b].stage)]; }
  void note(OpId op, bool end) {
    if (record_order_) order_.push_back(MemoryEvent{op, end});
  }
  [[nodiscard]] size_t worst_stage() const;

  const Schedule& schedule_;
  const FlatOps& flat_;
  const StreamStages& stages_;
  TimeNs cuda_malloc_ns_ = 0;
  bool record_order_ = false;
  std::vector<MemoryTracker> memories_;         // per pipeline stage
  std::vector<int64_t> mallocs_at_step_start_;  // per stage: cudaMalloc calls when the step started
  std::vector<std::vector<int64_t>> mallocs_;   // per stage, per step: new segments
  std::vector<MemoryEvent> order_;              // this step's memory events, in order (record_memory_order)
};

inline TimeNs StageMemories::allocate_buffers(OpId op_id, const FlatOp& op, TimeNs now, int32_t step) {
  MemoryTracker& memory = memories_[stages_.stage_of(op.stream)];
  const int64_t mallocs_before = memory.allocator_stats().cuda_malloc_calls;
  note(op_id, false);
  for (int32_t i = op.allocs_begin; i < op.allocs_end; ++i) {
    memory.allocate(flat_.buffer_at(i), op_id, op.stream, now, step);
  }
  // A new allocator segment is a synchronous cudaMalloc on the host before the op can be enqueued: it delays the
  // op (this is what makes a first step slower than the steady state).
  return (memory.allocator_stats().cuda_malloc_calls - mallocs_before) * cuda_malloc_ns_;
}

inline void StageMemories::release_buffers(OpId op_id, const FlatOp& op, TimeNs now) {
  note(op_id, true);
  for (int32_t i = op.frees_begin; i < op.frees_end; ++i) {
    const BufferId b = flat_.buffer_at(i);
    memory_of(b).release(b, now);
  }
}

}  // namespace fsdpsim
