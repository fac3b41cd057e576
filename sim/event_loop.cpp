#include "sim/event_loop.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "sim/id_range.h"

namespace fsdpsim {

EventLoop::EventLoop(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                     const OpCostTable& costs, FlatOps flat, const MemoryOverheads& overheads, const HostTimeline& host,
                     std::span<const double> link_capacities_bytes_per_s)
    : s_(schedule),
      o_(options),
      flat_(std::move(flat)),
      host_(host),
      stages_(schedule),
      memories_(schedule, topology, options, overheads, flat_, stages_),
      rates_(flat_, costs, topology.gpu, stages_, link_capacities_bytes_per_s, state_),
      replay_(schedule, flat_, costs, host, options, state_, rates_, memories_) {
  state_.acts.resize(schedule.streams.size());
  state_.queue = EventQueue(schedule.streams.size());
}

RunRecord EventLoop::run() {
  RunRecord result;
  memories_.allocate_persistent();
  TimeNs now = 0;
  for (int32_t step = 0; step < o_.steps; ++step) {
    memories_.begin_step(now, step);
    StepRun run = run_step(step, now);
    memories_.end_step(run);
    now = run.end_ns;
    result.steps.push_back(std::move(run));
  }
  Prediction prediction;
  memories_.finish_record(result, prediction.memory_order);
  result.origin = std::move(prediction);
  result.events = state_.events;
  result.replayed_windows = replay_.replayed_windows();
  return result;
}

// Every stream idle at its first op, every op waiting for all its dependencies.
void EventLoop::begin_step(int32_t step, TimeNs start, StepRun& run) {
  state_.step = step;
  state_.step_start_ns = start;
  run.start_ns = start;
  run.ops.assign(s_.ops.size(), OpTiming{});
  state_.timings = &run.ops;
  state_.head.assign(s_.streams.size(), 0);
  state_.pending.resize(flat_.ops.size());
  for (const OpId op : ids_of(flat_.ops)) state_.pending[op] = flat_.ops[op].deps();
  state_.posted.assign(flat_.ops.size(), 0);
  for (Activity& a : state_.acts) a = Activity{};
  rates_.begin_step();
  to_check_.clear();
  for (const StreamId st : ids_of(flat_.streams)) to_check_.push_back(st);
  replay_.begin_step();
}

StepRun EventLoop::run_step(int32_t step, TimeNs start) {
  StepRun run;
  begin_step(step, start, run);
  TimeNs now = start;
  advance(now);
  while (!state_.queue.empty()) {
    const Event e = state_.queue.pop();
    Activity& a = state_.acts[e.stream];
    if (!a.active || e.version != a.version) continue;
    ++state_.events;
    now = e.time_ns;
    if (a.host_wait) {
      a = Activity{.version = a.version + 1};  // issued: the op starts as its stream's head (advance)
      to_check_.push_back(e.stream);
    } else if (a.in_latency && a.remaining > 0) {
      a.in_latency = false;  // the latency part is over: the bytes start to flow
      a.rate = 0;
      a.since = now;
      rates_.comm_changed_for(a.op, true);
    } else {
      finish(a.op, now);
    }
    advance(now);
    // A micro-batch's first op started and every event of this instant is done: a boundary between windows.
    if (replay_.boundary_due(now)) now = replay_.at_boundary(now);
  }
  check_finished();
  run.end_ns = now;
  for (const OpTiming& t : run.ops) run.end_ns = std::max(run.end_ns, t.end_ns);
  return run;
}

// The op heading stream `st` is ready on the GPU before the host has issued it: the stream waits (an activity with
// no work, which ends at the issue time and no rate touches).
inline bool EventLoop::waits_for_host(StreamId st, OpId op, TimeNs now) {
  if (host_.issue_ns.empty()) return false;
  const TimeNs issued = state_.step_start_ns + host_.issue_ns[op];
  if (now >= issued) return false;
  Activity& a = state_.acts[st];
  a = Activity{.op = op, .active = true, .host_wait = true, .since = now, .version = a.version + 1};
  state_.queue.set(st, issued, a.version);
  replay_.host_waited();
  return true;
}

// Starts every op that heads its stream with its deps done (sync and empty ops finish at once and may unblock
// others), then re-rates what runs. Only streams whose head or whose head's deps changed are looked at.
void EventLoop::advance(TimeNs now) {
  while (!to_check_.empty()) {
    const StreamId st = to_check_.back();
    to_check_.pop_back();
    if (state_.acts[st].active || state_.head[st] >= flat_.streams[st].size()) continue;
    const OpId op = flat_.streams[st][state_.head[st]];
    if (state_.pending[op] > 0) continue;
    if (waits_for_host(st, op, now)) continue;
    const OpId peer = flat_.ops[op].peer;
    if (peer.valid()) {
      // A send/recv pair starts once both ends are posted: the first waits for the other.
      if (!state_.posted[peer]) {
        state_.posted[op] = 1;
        continue;
      }
      start_rendezvous(op, peer, now);
      continue;
    }
    start(op, now);
  }
  rates_.rerate(now);
}

// The send carries the transfer; the recv waits on its stream until the send ends (finish()).
void EventLoop::start_rendezvous(OpId op, OpId peer, TimeNs now) {
  const bool op_sends = flat_.ops[op].kind == OpKind::send;
  const OpId send = op_sends ? op : peer, recv = op_sends ? peer : op;
  const FlatOp& r = flat_.ops[recv];
  (*state_.timings)[recv].start_ns = now;
  replay_.op_started(recv, now);
  memories_.allocate_at_rendezvous(recv, r, now, state_.step);
  Activity& a = state_.acts[r.stream];
  a = Activity{.op = recv, .active = true, .rendezvous = true, .since = now, .version = a.version + 1};
  rates_.mark_running(r.stream);
  start(send, now);
}

void EventLoop::start(OpId op_id, TimeNs now) {
  const FlatOp& op = flat_.ops[op_id];
  (*state_.timings)[op_id].start_ns = now;
  replay_.op_started(op_id, now);
  const TimeNs malloc_ns = memories_.allocate_at_start(op_id, op, now, state_.step);
  const FlatCost& cost = flat_.costs[op.cost];
  const StreamId stream = op.stream;
  Activity& a = state_.acts[stream];
  a.op = op_id;
  switch (cost.model) {
    case CostModel::instant:
      if (malloc_ns == 0) {
        finish(op_id, now);
        return;
      }
      // It waits for its cudaMalloc: a timed wait at full speed.
      a = Activity{.op = op_id,
                   .active = true,
                   .remaining = static_cast<double>(malloc_ns),
                   .since = now,
                   .version = a.version + 1};
      rates_.mark_running(stream);
      rates_.compute_started(stream);
      return;
    case CostModel::compute:
      a = Activity{.op = op_id,
                   .active = true,
                   .remaining = static_cast<double>(cost.compute_ns + malloc_ns),
                   .since = now,
                   .version = a.version + 1};
      rates_.mark_running(stream);
      rates_.compute_started(stream);
      rates_.compute_stream_changed(stream);
      return;
    case CostModel::transfer: {
      const TimeNs latency = cost.latency_ns + malloc_ns;
      a = Activity{.op = op_id,
                   .active = true,
                   .transfer = true,
                   .in_latency = latency > 0,
                   .remaining = cost.bytes,
                   .since = now,
                   .version = a.version + 1};
      rates_.comm_changed_for(op_id, !a.in_latency);
      rates_.mark_running(stream);
      if (a.in_latency) state_.queue.set(op.stream, now + latency, a.version);
      if (!a.in_latency && cost.bytes <= 0) finish(op_id, now);
      return;
    }
  }
}

void EventLoop::finish(OpId op_id, TimeNs now) {
  const FlatOp& op = flat_.ops[op_id];
  (*state_.timings)[op_id].end_ns = now;
  replay_.op_finished(op_id, now);
  memories_.release_at_end(op_id, op, now);
  const StreamId stream = op.stream;
  Activity& a = state_.acts[stream];
  if (a.transfer) rates_.comm_changed_for(op_id, !a.in_latency);
  if (a.active) rates_.mark_idle(stream);
  const bool was_kernel = rates_.runs_kernel(a);
  a.active = false;
  a.transfer = false;
  a.rendezvous = false;
  ++a.version;
  if (was_kernel) rates_.compute_stream_changed(stream);
  ++state_.head[stream];
  to_check_.push_back(stream);
  for (int32_t i = op.dependents_begin; i < op.dependents_end; ++i) {
    const OpId d = flat_.op_at(i);
    if (--state_.pending[d] == 0) to_check_.push_back(flat_.ops[d].stream);
  }
  // A send's bytes have arrived: its recv ends with it.
  if (op.peer.valid()) {
    const Activity& peer = state_.acts[flat_.ops[op.peer].stream];
    if (peer.rendezvous && peer.op == op.peer) finish(op.peer, now);
  }
}

void EventLoop::check_finished() const {
  for (const StreamId st : ids_of(flat_.streams)) {
    if (state_.head[st] >= flat_.streams[st].size()) continue;
    const OpId op = flat_.streams[st][state_.head[st]];
    throw ScheduleError(
        "the simulation cannot finish the step",
        {"stream '" + s_.streams[st].name + "' is stuck at op " + to_string(op) + " '" + s_.ops[op].name +
         "', whose dependencies never finish (run 'fsdpsim schedule' validation on it)"});
  }
}

}  // namespace fsdpsim
