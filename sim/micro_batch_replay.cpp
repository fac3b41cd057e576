#include "sim/micro_batch_replay.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "sim/id_range.h"

namespace fsdpsim {

MicroBatchReplay::MicroBatchReplay(const Schedule& schedule, const FlatOps& flat, const OpCostTable& costs,
                                   const HostTimeline& host, const SimOptions& options, StepState& state,
                                   const RateAssignment& rates, StageMemories& memories)
    : schedule_(schedule), flat_(flat), costs_(costs), host_(host), state_(state), rates_(rates), memories_(memories) {
  // Replaying pays off from four micro-batches on: two are simulated to see the state repeat.
  if (!options.replay_repeats || schedule.info.micro_batches < 4) return;
  // The translation is worked out at the first boundary: a run that fails an allocation before it never needs it.
  for (const OpId op : ids_of(flat.ops)) {
    if (flat.ops[op].micro_batch != 1) continue;
    second_micro_batch_op_ = op;
    break;
  }
  enabled_ = second_micro_batch_op_.valid();
}

void MicroBatchReplay::begin_step() {
  last_boundary_.reset();
  recording_ = false;
  boundary_pending_ = false;
  arm_boundary(enabled_ ? 1 : -1);  // from the second micro-batch's start
}

// The next boundary comes when `micro_batch`'s first op starts (none when -1 or past the last micro-batch).
void MicroBatchReplay::arm_boundary(int32_t micro_batch) {
  boundary_op_ = micro_batch == 1   ? second_micro_batch_op_
                 : micro_batch >= 0 ? translation_.first_op(micro_batch)
                                    : OpId::none();
  boundary_mb_ = boundary_op_.valid() ? micro_batch : -1;
}

// A new window starts at the boundary just passed: what happens in it is recorded afresh.
void MicroBatchReplay::start_window() {
  started_.clear();
  finished_.clear();
  host_waited_ = false;
}

TimeNs MicroBatchReplay::at_boundary(TimeNs now) {
  boundary_pending_ = false;
  // After an allocation failure the memory is counted outside the allocator: nothing is replayed from then on.
  enabled_ = enabled_ && !memories_.any_oom();
  if (enabled_ && !translation_built_) {
    translation_ = MicroBatchTranslation(schedule_, flat_, costs_);
    translation_built_ = true;
    // A schedule whose micro-batches never repeat (a pipeline's, whose stages interleave them) takes no snapshots.
    enabled_ = translation_.any_repeats();
  }
  if (!enabled_) {
    arm_boundary(-1);
    return now;
  }
  FSDPSIM_CHECK(!rates_.change_pending(), "a boundary follows a re-rating: no change waits to be rated");
  Boundary here = capture_boundary(boundary_mb_, now, state_, flat_, rates_, memories_);
  arm_boundary(boundary_mb_ + 1);
  if (last_boundary_ && last_boundary_->micro_batch + 1 == here.micro_batch) {
    const int32_t windows = repeatable_windows(*last_boundary_, here);
    if (windows > 0) {
      const TimeNs shift = replay(*last_boundary_, here, windows);
      last_boundary_.reset();
      recording_ = false;
      start_window();
      arm_boundary(here.micro_batch + windows + 1);
      return now + shift;
    }
  }
  last_boundary_ = std::move(here);
  start_window();
  recording_ = true;
  return now;
}

// The micro-batches lo..hi whose ops the window from `prev` to `cur` touched: started, ended, ran or headed a stream
// at either end, or allocated a buffer live at either end. False when a step-level op started, ended or ran in it,
// when it touched none, or when an allocator's layout changed. What stays put is no touch: a stream headed by the same
// op at both ends (a step-level op, or a later micro-batch's op that waits on every one before it; those go to
// waiting_ops_), and a buffer in the same block under the same name at both ends (one an early op allocated for the
// whole step).
bool MicroBatchReplay::window_touches_one_span(const Boundary& prev, const Boundary& cur, int32_t& lo, int32_t& hi) {
  for (size_t stage = 0; stage < prev.memories.size(); ++stage) {
    if (prev.memories[stage].layout != cur.memories[stage].layout) return false;
  }
  lo = std::numeric_limits<int32_t>::max();
  hi = -1;
  bool step_level = false;
  const auto touch = [&](OpId op) {
    const int32_t m = translation_.micro_batch_of(op);
    step_level = step_level || m < 0;
    lo = std::min(lo, m);
    hi = std::max(hi, m);
  };
  for (const auto& [op, t] : started_) touch(op);
  for (const auto& [op, t] : finished_) touch(op);
  waiting_ops_.clear();
  for (const StreamId st : ids_of(cur.streams)) {
    const StreamState &p = prev.streams[st], &c = cur.streams[st];
    if (p.act.active) touch(p.act.op);
    if (c.act.active) touch(c.act.op);
    if (p.head.valid() && p.head == c.head) {
      waiting_ops_.push_back(p.head);
      continue;
    }
    if (p.head.valid()) touch(p.head);
    if (c.head.valid()) touch(c.head);
  }
  if (step_level) return false;
  for (size_t stage = 0; stage < prev.memories.size(); ++stage) {
    const auto &pb = prev.memories[stage].block_buffers, &cb = cur.memories[stage].block_buffers;
    for (size_t k = 0; k < pb.size(); ++k) {
      if (pb[k] == cb[k]) continue;
      for (const BufferId b : {pb[k], cb[k]}) {
        const OpId by = b.valid() ? translation_.allocating_op(b) : OpId::none();
        if (by.valid()) touch(by);
      }
    }
  }
  return hi >= 0 && !step_level;
}

// How many windows after `cur` run as the one from `prev` to `cur` did, moved: 0 when the state did not repeat.
int32_t MicroBatchReplay::repeatable_windows(const Boundary& prev, const Boundary& cur) {
  int32_t lo = 0, hi = -1;
  if (!window_touches_one_span(prev, cur, lo, hi) || !translation_.repeats_all(lo, hi - lo + 1)) return 0;
  if (!boundary_states_repeat(prev, cur, translation_)) return 0;
  // The ops the window's ends told of (their dependents) outside those micro-batches only count down: they must
  // still wait after the last replayed window, as must the ops that stay put heading a stream. Had one become ready
  // inside a replayed window, it would have started there.
  for (const auto& [op, t] : finished_) {
    const FlatOp& r = flat_.ops[op];
    for (int32_t i = r.dependents_begin; i < r.dependents_end; ++i) {
      const OpId d = flat_.op_at(i);
      const int32_t m = translation_.micro_batch_of(d);
      if (m < lo || m > hi) waiting_ops_.push_back(d);
    }
  }
  std::sort(waiting_ops_.begin(), waiting_ops_.end());
  waiting_ops_.erase(std::unique(waiting_ops_.begin(), waiting_ops_.end()), waiting_ops_.end());
  int32_t windows = 1;
  while (translation_.repeats_all(lo, hi - lo + windows + 1)) ++windows;
  windows = host_paced_windows(prev, cur, windows);
  while (windows > 0 && !waiting_ops_still_wait(prev, cur, windows)) --windows;
  return windows;
}

// A window replays only where the host paced nothing: no op waited for its issue in the recorded window, and every
// op the replay starts had been issued by the time it starts there (the host's walk per micro-batch may be longer
// than the GPU's, and then it catches up with the GPU a few windows on). Returns how many of `windows` qualify.
int32_t MicroBatchReplay::host_paced_windows(const Boundary& prev, const Boundary& cur, int32_t windows) const {
  if (host_.issue_ns.empty()) return windows;
  if (host_waited_) return 0;
  const TimeNs period = cur.time_ns - prev.time_ns;
  for (const auto& [op, t] : started_) {
    for (int32_t w = 1; w <= windows; ++w) {
      const OpId moved = translation_.op_after(op, w);
      if (state_.step_start_ns + host_.issue_ns[moved] > t + w * period) {
        windows = w - 1;
        break;
      }
    }
  }
  return windows;
}

// Where the stream's head goes after `windows` replayed windows (a head that stayed put stays).
size_t MicroBatchReplay::moved_head(const Boundary& prev, const Boundary& cur, StreamId st, int32_t windows) const {
  const OpId h = cur.streams[st].head;
  if (!h.valid()) return flat_.streams[st].size();
  if (prev.streams[st].head == h) return state_.head[st];
  return static_cast<size_t>(flat_.ops[translation_.op_after(h, windows)].position);
}

// Every op in waiting_ops_ still has an unfinished dependency once `windows` more windows have run.
bool MicroBatchReplay::waiting_ops_still_wait(const Boundary& prev, const Boundary& cur, int32_t windows) {
  moved_head_.resize(flat_.streams.size());
  for (const StreamId st : ids_of(flat_.streams)) moved_head_[st] = moved_head(prev, cur, st, windows);
  return std::all_of(waiting_ops_.begin(), waiting_ops_.end(),
                     [&](OpId op) { return unfinished_deps(flat_, op, moved_head_) > 0; });
}

// Writes `windows` windows after `cur` as moved copies of the one from `prev` to `cur`, and moves the state to the
// end of the last; returns how far it moved in time.
TimeNs MicroBatchReplay::replay(const Boundary& prev, const Boundary& cur, int32_t windows) {
  const TimeNs period = cur.time_ns - prev.time_ns;
  IdVector<OpId, OpTiming>& timings = *state_.timings;
  for (int32_t i = 1; i <= windows; ++i) {
    const TimeNs shift = i * period;
    for (const auto& [op, t] : started_) timings[translation_.op_after(op, i)].start_ns = t + shift;
    for (const auto& [op, t] : finished_) timings[translation_.op_after(op, i)].end_ns = t + shift;
  }
  const TimeNs shift = windows * period;
  state_.events += static_cast<uint64_t>(windows) * (cur.events - prev.events);
  replayed_windows_ += static_cast<uint64_t>(windows);
  memories_.replay_windows(prev.memories, cur.memories, prev.memory_events, cur.memory_events, windows, period,
                           translation_);
  for (const StreamId st : ids_of(flat_.streams)) {
    const size_t head = moved_head(prev, cur, st, windows);
    if (head != state_.head[st] && cur.streams[st].posted) state_.posted[flat_.streams[st][head]] = 1;
    state_.head[st] = head;
    Activity& a = state_.acts[st];
    if (!a.active) continue;
    const OpId running = translation_.op_after(a.op, windows);
    timings[running].start_ns = timings[a.op].start_ns + shift;
    a.op = running;
    a.since += shift;
  }
  state_.queue.shift(shift);
  // Each op not yet finished waits for its dependencies not yet finished.
  for (const StreamId st : ids_of(flat_.streams)) {
    for (size_t p = state_.head[st]; p < flat_.streams[st].size(); ++p) {
      const OpId op = flat_.streams[st][p];
      state_.pending[op] = unfinished_deps(flat_, op, state_.head);
    }
  }
  return shift;
}

}  // namespace fsdpsim
