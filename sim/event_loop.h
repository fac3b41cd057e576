#pragma once
/// The engine's event loop (docs/architecture.md §5.1-§5.2, §5.5): runs a schedule's steps back to back with CUDA
/// stream semantics. Each stream runs one op at a time; an op starts once it heads its stream, its dependencies are
/// done, the host has issued it and, for a send or recv, its peer is there too; it ends when its work is done at the
/// rates it was given (sim/rate_assignment.h). Starting an op allocates its buffers and ending it releases them
/// (sim/stage_memories.h); repeated micro-batch windows are written instead of simulated (sim/micro_batch_replay.h).
/// The loop owns the per-step state (sim/step_state.h) the other parts read.

#include <cstdint>
#include <span>
#include <vector>

#include "memory/memory_overheads.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "sim/engine.h"
#include "sim/flat_ops.h"
#include "sim/host_timeline.h"
#include "sim/micro_batch_replay.h"
#include "sim/op_costs.h"
#include "sim/rate_assignment.h"
#include "sim/stage_memories.h"
#include "sim/step_state.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// One run of a schedule.
class EventLoop {
 public:
  /// Everything given by reference must outlive this; `costs` and `flat` are the schedule's ops costed and flattened
  /// (the loop keeps `flat`: it reads it at every event), `overheads` the memory outside the allocator, `host` the
  /// host's issue times, `link_capacities_bytes_per_s` by link index.
  EventLoop(const Schedule& schedule, const Topology& topology, const SimOptions& options, const OpCostTable& costs,
            FlatOps flat, const MemoryOverheads& overheads, const HostTimeline& host,
            std::span<const double> link_capacities_bytes_per_s);
  /// Its parts hold references to its members: it stays where it was made.
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Runs options.steps steps: their op timings, the worst stage's memory figures and the events processed, with a
  /// Prediction that holds the last step's memory order (when recorded) for the caller to complete.
  RunRecord run();

 private:
  StepRun run_step(int32_t step, TimeNs start);
  void begin_step(int32_t step, TimeNs start, StepRun& run);
  TimeNs process(const Event& e);
  void advance(TimeNs now);
  bool waits_for_host(StreamId st, OpId op, TimeNs now);
  void start_rendezvous(OpId op, OpId peer, TimeNs now);
  void start(OpId op_id, TimeNs now);
  void finish(OpId op_id, TimeNs now);
  void check_finished() const;

  const Schedule& s_;
  const SimOptions& o_;
  const FlatOps flat_;
  const HostTimeline& host_;
  StreamStages stages_;
  StepState state_;
  StageMemories memories_;
  RateAssignment rates_;
  MicroBatchReplay replay_;
  std::vector<StreamId> to_check_;  // streams whose head may be able to start
};

}  // namespace fsdpsim
