#include "sim/stage_memories.h"

#include <algorithm>

namespace fsdpsim {

// Measured on an H100: the pool failed at the device's total less the CUDA context, cuBLAS, NCCL and the executor's
// scratch (bench/results/2026-11-23-h100.md).
int64_t allocator_capacity(const Topology& t, const MemoryOverheads& overheads) {
  // Overheads that fill the whole GPU leave one byte: the first allocation then fails and the run is reported out
  // of memory, which is the answer.
  return std::max<int64_t>(1, t.gpu.hbm_bytes - overheads.total());
}

StageMemories::StageMemories(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                             const MemoryOverheads& overheads, const FlatOps& flat, const StreamStages& stages)
    : schedule_(schedule),
      flat_(flat),
      stages_(stages),
      cuda_malloc_ns_(topology.gpu.cuda_malloc_ns),
      record_order_(options.record_memory_order) {
  const AllocatorConfig allocator{.capacity_bytes = options.allocator_capacity_bytes > 0
                                                        ? options.allocator_capacity_bytes
                                                        : allocator_capacity(topology, overheads),
                                  .expandable_segments = options.expandable_segments,
                                  .max_split_size_bytes = 0};
  memories_.reserve(stages.stages());
  for (size_t stage = 0; stage < stages.stages(); ++stage) {
    memories_.emplace_back(schedule, allocator, options.record_timeline);
  }
  mallocs_at_step_start_.assign(stages.stages(), 0);
  mallocs_.assign(stages.stages(), {});
}

void StageMemories::allocate_persistent() {
  for (const Buffer& b : schedule_.buffers) {
    if (!b.persistent) continue;
    const StreamId compute = stages_.compute_stream_of_stage[static_cast<size_t>(b.stage)];
    memory_of(b.id).allocate(b.id, OpId::none(), compute, 0, 0);
  }
}

void StageMemories::begin_step(TimeNs now, int32_t step) {
  for (size_t stage = 0; stage < memories_.size(); ++stage) {
    mallocs_at_step_start_[stage] = memories_[stage].allocator_stats().cuda_malloc_calls;
    memories_[stage].reset_peaks(now, step);
  }
  order_.clear();
}

void StageMemories::end_step(StepRun& run) {
  for (size_t stage = 0; stage < memories_.size(); ++stage) {
    const MemoryTracker& m = memories_[stage];
    if (memories_.size() > 1) run.stage_peaks.push_back(StagePeaks{m.peak_allocated(), m.peak_reserved()});
    mallocs_[stage].push_back(m.allocator_stats().cuda_malloc_calls - mallocs_at_step_start_[stage]);
  }
}

void StageMemories::allocate_at_rendezvous(OpId recv, const FlatOp& r, TimeNs now, int32_t step) {
  if (r.allocs_end > r.allocs_begin) note(recv, false);
  for (int32_t i = r.allocs_begin; i < r.allocs_end; ++i) {
    const BufferId b = flat_.buffer_at(i);
    memory_of(b).allocate(b, recv, r.stream, now, step);
  }
}

bool StageMemories::any_oom() const {
  return std::any_of(memories_.begin(), memories_.end(), [](const MemoryTracker& m) { return m.oom().has_value(); });
}

void StageMemories::state(std::vector<MemoryState>& out) const {
  out.resize(memories_.size());
  for (size_t stage = 0; stage < memories_.size(); ++stage) memories_[stage].state(out[stage]);
}

void StageMemories::replay_windows(const std::vector<MemoryState>& prev, const std::vector<MemoryState>& cur,
                                   size_t prev_events, size_t cur_events, int32_t windows, TimeNs period_ns,
                                   const MicroBatchTranslation& translation) {
  for (size_t stage = 0; stage < memories_.size(); ++stage) {
    MemoryTracker& memory = memories_[stage];
    const size_t begin = prev[stage].timeline_samples, end = cur[stage].timeline_samples;
    for (int32_t i = 1; i <= windows; ++i) memory.repeat_samples(begin, end, i * period_ns);
    std::vector<BufferId> from, to;
    const auto &pb = prev[stage].block_buffers, &cb = cur[stage].block_buffers;
    for (size_t k = 0; k < cb.size(); ++k) {
      if (!cb[k].valid() || cb[k] == pb[k]) continue;
      from.push_back(cb[k]);
      to.push_back(translation.buffer_after(cb[k], windows));
    }
    memory.rename_live(from, to);
  }
  // The window's memory events, moved window after window (the window ends where the recorded order does).
  order_.reserve(order_.size() + static_cast<size_t>(windows) * (cur_events - prev_events));
  for (int32_t i = 1; i <= windows; ++i) {
    for (size_t e = prev_events; e < cur_events; ++e) {
      const MemoryEvent event = order_[e];
      order_.push_back(MemoryEvent{translation.op_after(event.op, i), event.end});
    }
  }
}

// The one out of memory, else the highest steady-step reserved peak (the first of equals).
size_t StageMemories::worst_stage() const {
  size_t worst = 0;
  for (size_t stage = 0; stage < memories_.size(); ++stage) {
    const bool oom = memories_[stage].oom().has_value(), worst_oom = memories_[worst].oom().has_value();
    if (oom != worst_oom) {
      if (oom) worst = stage;
      continue;
    }
    if (memories_[stage].peak_reserved().bytes > memories_[worst].peak_reserved().bytes) worst = stage;
  }
  return worst;
}

void StageMemories::finish_record(RunRecord& result, std::vector<MemoryEvent>& order) {
  const size_t worst = worst_stage();
  const MemoryTracker& memory = memories_[worst];
  for (size_t step = 0; step < result.steps.size(); ++step) {
    StepRun& run = result.steps[step];
    run.peak_allocated = run.stage_peaks.empty() ? memory.peak_allocated() : run.stage_peaks[worst].allocated;
    run.peak_reserved = run.stage_peaks.empty() ? memory.peak_reserved() : run.stage_peaks[worst].reserved;
    run.cuda_malloc_calls = mallocs_[worst][step];
  }
  result.memory_stage = static_cast<int32_t>(worst);
  result.timeline = memory.timeline();
  result.oom = memory.oom();
  result.allocator = memory.allocator_stats();
  order = std::move(order_);
}

}  // namespace fsdpsim
