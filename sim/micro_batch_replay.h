#pragma once
/// Replaying repeated micro-batches (docs/architecture.md §5.1a). A step of many micro-batches runs the same ops over
/// and over (sim/micro_batch_translation.h). The run is cut into windows at boundaries: the first instant with no
/// event left after micro-batch m's first op started. When the engine's whole state at boundary m is its state at
/// boundary m − 1 moved by one micro-batch (sim/replay_boundary.h), the engine, being deterministic, runs the next
/// window as it ran the last one, moved; and so every later window whose ops keep repeating. Those windows are
/// written from the recorded one (op starts and ends, memory samples and events, event counts), the state jumps to
/// the end of the last of them, and the engine simulates the rest. Reports are byte-identical to simulating every
/// window (tests/sim/replay_test.cpp checks it on every kind of schedule the builders make).
///
/// The event loop tells it of each op's start and end (op_started, op_finished: inline, they run per op) and asks
/// after each instant whether a boundary is due.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "schedule/ir.h"
#include "sim/engine.h"
#include "sim/flat_ops.h"
#include "sim/host_timeline.h"
#include "sim/micro_batch_translation.h"
#include "sim/op_costs.h"
#include "sim/rate_assignment.h"
#include "sim/replay_boundary.h"
#include "sim/stage_memories.h"
#include "sim/step_state.h"

namespace fsdpsim {

/// Finds windows that repeat and writes them instead of simulating them.
class MicroBatchReplay {
 public:
  /// Everything given must outlive this. Off unless `options.replay_repeats` and the schedule has four or more
  /// micro-batches (two are simulated to see the state repeat).
  MicroBatchReplay(const Schedule& schedule, const FlatOps& flat, const OpCostTable& costs, const HostTimeline& host,
                   const SimOptions& options, StepState& state, const RateAssignment& rates, StageMemories& memories);

  /// A step starts: the first boundary is the second micro-batch's start.
  void begin_step();
  /// Op `op` started at `now`.
  void op_started(OpId op, TimeNs now) {
    if (recording_) started_.emplace_back(op, now);
    if (op == boundary_op_) boundary_pending_ = true;
  }
  /// Op `op` ended at `now`.
  void op_finished(OpId op, TimeNs now) {
    if (recording_) finished_.emplace_back(op, now);
  }
  /// An op waited for the host to issue it: the host, not the GPU, paces the window.
  void host_waited() { host_waited_ = true; }
  /// Every event of the instant `now` is done and a micro-batch's first op started in it: a boundary.
  [[nodiscard]] bool boundary_due(TimeNs now) const {
    return boundary_pending_ && (state_.queue.empty() || state_.queue.next_time() > now);
  }
  /// At a boundary: compares with the last one and replays what repeats; returns the time the run goes on from.
  TimeNs at_boundary(TimeNs now);
  /// Windows written as copies so far.
  [[nodiscard]] uint64_t replayed_windows() const { return replayed_windows_; }

 private:
  void arm_boundary(int32_t micro_batch);
  void start_window();
  [[nodiscard]] int32_t repeatable_windows(const Boundary& prev, const Boundary& cur);
  [[nodiscard]] bool window_touches_one_span(const Boundary& prev, const Boundary& cur, int32_t& lo, int32_t& hi);
  [[nodiscard]] int32_t host_paced_windows(const Boundary& prev, const Boundary& cur, int32_t windows) const;
  [[nodiscard]] size_t moved_head(const Boundary& prev, const Boundary& cur, StreamId st, int32_t windows) const;
  [[nodiscard]] bool waiting_ops_still_wait(const Boundary& prev, const Boundary& cur, int32_t windows);
  TimeNs replay(const Boundary& prev, const Boundary& cur, int32_t windows);

  const Schedule& schedule_;
  const FlatOps& flat_;
  const OpCostTable& costs_;
  const HostTimeline& host_;  // when the host has issued each op (no issue times: no host model)
  StepState& state_;
  const RateAssignment& rates_;
  StageMemories& memories_;
  MicroBatchTranslation translation_;
  bool enabled_ = false;
  bool translation_built_ = false;
  OpId second_micro_batch_op_;  // the first op of micro-batch 1: the first boundary
  uint64_t replayed_windows_ = 0;
  OpId boundary_op_;               // the op whose start makes the next boundary
  int32_t boundary_mb_ = -1;       // its micro-batch
  bool boundary_pending_ = false;  // it started; the boundary is the first instant with no event left
  bool recording_ = false;         // record starts and ends since the last boundary
  bool host_waited_ = false;       // an op waited for the host since the last boundary
  std::vector<std::pair<OpId, TimeNs>> started_, finished_;
  std::optional<Boundary> last_boundary_;
  std::vector<OpId> waiting_ops_;          // repeatable_windows: ops that must still wait after the replayed windows
  IdVector<StreamId, size_t> moved_head_;  // waiting_ops_still_wait: each stream's head after the replayed windows
};

}  // namespace fsdpsim
