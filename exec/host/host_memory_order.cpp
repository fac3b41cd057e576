// predicted_memory_order: the order in which the simulator performed the memory events of one predicted step,
// rebuilt from the step's op timings by replaying the engine's own processing loop (sim/engine.cpp) with every op's
// duration fixed to its predicted one.
//
// What the replay copies from the engine, and why each matters for the order:
//  - at the step's start every stream is put on a stack of streams to look at, in index order, and the stack is
//    worked from its top (Engine::run_step + advance): the highest stream index is looked at first;
//  - starting an op allocates its buffers; an op whose predicted end equals its start is instant (a sync op, or an
//    op that costs nothing): the engine finishes it inside start(), so its frees come before any other start of the
//    same cascade, and the streams it unblocks are pushed on top of the stack (Engine::start/finish);
//  - finishing an op releases its buffers, then pushes its own stream and the streams of the dependents whose last
//    dependency it was (in the order of their op ids), and only then are those looked at (Engine::finish, advance);
//  - ops that take time finish from the event queue in (time, insertion) order; the replay inserts them when they
//    start, which is the engine's order for ops that finish at the same time unless a re-rating re-inserted one of
//    them later (a tie of two timed ends at the same nanosecond, which the tests check does not change the peak);
//  - an op the host had not issued when it could start (sim/host_timeline.h) waits on its stream for its issue time,
//    then its stream is looked at again (Engine::waits_for_host and the host-wait event);
//  - a pipeline send and its receive start together once both head their streams (the first to get there waits):
//    the receive allocates first, then the send starts, and the receive finishes right after its send
//    (Engine::advance, start_rendezvous, finish).
#include <queue>
#include <string>
#include <tuple>

#include "common/error.h"
#include "exec/host/host_runner.h"

namespace fsdpsim {
namespace {

class MemoryOrderReplay {
 public:
  MemoryOrderReplay(const Schedule& s, const StepRun& step, const std::vector<TimeNs>& host_issue_ns)
      : s_(s), step_(step), issue_ns_(host_issue_ns) {
    if (step.ops.size() != s.ops.size()) {
      throw ScheduleError(
          "cannot derive the memory order of a predicted step",
          {"the step has timings for " + std::to_string(step.ops.size()) + " ops but the schedule has " +
           std::to_string(s.ops.size()) + " (simulate this schedule and pass one of its steps)"});
    }
    if (!issue_ns_.empty() && issue_ns_.size() != s.ops.size()) {
      throw ScheduleError("cannot derive the memory order of a predicted step",
                          {"the prediction has host issue times for " + std::to_string(issue_ns_.size()) +
                           " ops but the schedule has " + std::to_string(s.ops.size())});
    }
    stream_ops_.resize(s.streams.size());
    dependents_.resize(s.ops.size());
    for (const Op& op : s.ops) {
      stream_ops_[op.stream.index()].push_back(op.id);
      for (const OpId d : op.deps) dependents_[d.index()].push_back(op.id);
      pending_.push_back(static_cast<int32_t>(op.deps.size()));
    }
    head_.assign(s.streams.size(), 0);
    active_.assign(s.streams.size(), false);
    waiting_recv_.assign(s.streams.size(), OpId::none());
    posted_.assign(s.ops.size(), false);
  }

  std::vector<MemoryEvent> run() {
    for (size_t st = 0; st < stream_ops_.size(); ++st) to_check_.push_back(st);
    advance(step_.start_ns);
    while (!queue_.empty()) {
      const auto [time_ns, sequence, op, issued] = queue_.top();
      queue_.pop();
      if (issued) {
        const auto st = s_.ops[op].stream.index();
        active_[st] = false;
        to_check_.push_back(st);
      } else {
        finish(op);
      }
      advance(time_ns);
    }
    for (size_t st = 0; st < stream_ops_.size(); ++st) {
      if (head_[st] < stream_ops_[st].size()) {
        const Op& stuck = s_.ops[stream_ops_[st][head_[st]]];
        throw ScheduleError("cannot derive the memory order of a predicted step",
                            {"op " + std::to_string(stuck.id.value()) + " '" + stuck.name +
                             "' never starts in the replay (the step's timings do not belong to this schedule)"});
      }
    }
    return std::move(events_);
  }

 private:
  void advance(TimeNs now) {
    while (!to_check_.empty()) {
      const size_t st = to_check_.back();
      to_check_.pop_back();
      if (active_[st] || head_[st] >= stream_ops_[st].size()) continue;
      const OpId op = stream_ops_[st][head_[st]];
      if (pending_[op.index()] > 0) continue;
      if (!issue_ns_.empty() && now < step_.start_ns + issue_ns_[op.index()]) {
        active_[st] = true;  // waiting for the host
        queue_.emplace(step_.start_ns + issue_ns_[op.index()], sequence_++, op, true);
        continue;
      }
      const OpId peer = s_.ops[op].peer;
      if (peer.valid()) {
        if (!posted_[peer.index()]) {
          posted_[op.index()] = true;
          continue;
        }
        start_rendezvous(op, peer, now);
        continue;
      }
      start(op, now);
    }
  }

  void start_rendezvous(OpId op, OpId peer, TimeNs now) {
    const bool sends = s_.ops[op].kind == OpKind::send;
    const OpId send = sends ? op : peer, recv = sends ? peer : op;
    check_start(recv, now);
    if (!s_.ops[recv].allocs.empty()) events_.push_back(MemoryEvent{recv, false});
    const auto st = s_.ops[recv].stream.index();
    active_[st] = true;
    waiting_recv_[st] = recv;
    start(send, now);
  }

  void check_start(OpId op_id, TimeNs now) const {
    const OpTiming& t = step_.ops[op_id];
    if (t.start_ns != now || t.end_ns < t.start_ns) {
      throw ScheduleError("cannot derive the memory order of a predicted step",
                          {"op " + to_string(op_id) + " '" + s_.ops[op_id].name + "' can start at " +
                           std::to_string(now) + " ns in the replay but the step says " + std::to_string(t.start_ns) +
                           " ns (the step's timings do not belong to this schedule)"});
    }
  }

  void start(OpId op_id, TimeNs now) {
    const Op& op = s_.ops[op_id];
    const OpTiming& t = step_.ops[op_id];
    check_start(op_id, now);
    if (!op.allocs.empty()) events_.push_back(MemoryEvent{op_id, false});
    if (t.end_ns == t.start_ns) {
      finish(op_id);  // instant: the engine finishes it inside start()
      return;
    }
    active_[op.stream.index()] = true;
    queue_.emplace(t.end_ns, sequence_++, op_id, false);
  }

  void finish(OpId op_id) {
    const Op& op = s_.ops[op_id];
    if (!op.frees.empty()) events_.push_back(MemoryEvent{op_id, true});
    const auto st = op.stream.index();
    active_[st] = false;
    ++head_[st];
    to_check_.push_back(st);
    for (const OpId d : dependents_[op_id]) {
      if (--pending_[d.index()] == 0) to_check_.push_back(s_.ops[d].stream.index());
    }
    // A send's bytes have arrived: its receive ends with it.
    if (op.peer.valid() && op.kind == OpKind::send) {
      const auto peer_stream = s_.ops[op.peer].stream.index();
      if (waiting_recv_[peer_stream] == op.peer) {
        waiting_recv_[peer_stream] = OpId::none();
        finish(op.peer);
      }
    }
  }

  // (end time, insertion sequence, op, the host's issue of a waiting op rather than the op's end)
  using Entry = std::tuple<TimeNs, uint64_t, OpId, bool>;
  const Schedule& s_;
  const StepRun& step_;
  const std::vector<TimeNs>& issue_ns_;
  std::vector<std::vector<OpId>> stream_ops_;
  IdVector<OpId, std::vector<OpId>> dependents_;
  std::vector<int32_t> pending_;
  std::vector<size_t> head_;
  std::vector<bool> active_;
  std::vector<OpId> waiting_recv_;  // per stream: the receive waiting for its send's bytes
  std::vector<bool> posted_;        // per op: a send or receive waiting for its peer to head its stream
  std::vector<size_t> to_check_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;
  uint64_t sequence_ = 0;
  std::vector<MemoryEvent> events_;
};

}  // namespace

std::vector<MemoryEvent> predicted_memory_order(const Schedule& schedule, const StepRun& predicted_step,
                                                const std::vector<TimeNs>& host_issue_ns) {
  return MemoryOrderReplay(schedule, predicted_step, host_issue_ns).run();
}

std::vector<MemoryEvent> predicted_memory_order(const Schedule& schedule, const RunRecord& predicted) {
  const Prediction* p = predicted.prediction();
  static const std::vector<TimeNs> kNone;
  return predicted_memory_order(schedule, predicted.steps.back(), p != nullptr ? p->host_issue_ns : kNone);
}

std::vector<std::string> memory_order_problems(const Schedule& schedule, const std::vector<MemoryEvent>& order) {
  std::vector<std::string> problems;
  std::vector<int32_t> seen(schedule.ops.size() * 2, 0);  // per (op, end)
  for (size_t i = 0; i < order.size(); ++i) {
    const MemoryEvent& e = order[i];
    const std::string where = "memory_order[" + std::to_string(i) + "]";
    if (!schedule.ops.contains(e.op)) {
      problems.push_back(where + " names op " + to_string(e.op) + ", which the schedule does not have (ids 0-" +
                         std::to_string(static_cast<int64_t>(schedule.ops.size()) - 1) + ")");
      continue;
    }
    const Op& op = schedule.ops[e.op];
    if ((e.end ? op.frees : op.allocs).empty()) {
      problems.push_back(where + " is the " + (e.end ? "end" : "start") + " of op " + std::to_string(op.id.value()) +
                         " '" + op.name + "', which " + (e.end ? "frees" : "allocates") + " nothing");
    }
    if (++seen[e.op.index() * 2 + (e.end ? 1 : 0)] == 2) {
      problems.push_back(where + " lists the " + std::string(e.end ? "end" : "start") + " of op " +
                         std::to_string(op.id.value()) + " '" + op.name + "' a second time");
    }
  }
  for (const Op& op : schedule.ops) {
    for (const bool end : {false, true}) {
      if ((end ? op.frees : op.allocs).empty() || seen[op.id.index() * 2 + (end ? 1 : 0)] > 0) continue;
      problems.push_back("the memory order lacks the " + std::string(end ? "end" : "start") + " of op " +
                         std::to_string(op.id.value()) + " '" + op.name + "' (use predicted_memory_order)");
    }
  }
  return problems;
}

}  // namespace fsdpsim
