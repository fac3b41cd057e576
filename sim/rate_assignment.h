#pragma once
/// Rates of what runs (docs/architecture.md §5.3-§5.4, §5.8): transfers share the links max-min fairly
/// (sim/flow_rate_cache.h); compute runs at the fraction of SMs that communication kernels leave free, less the
/// profile's extra overlap slowdown; a side-stream kernel runs at side_stream_memory_speed of that while the compute
/// stream runs one. Only a change in the running communication changes any link rate or compute speed, so the full
/// re-rating runs only then, and only for the pipeline stages it touches: a stage's transfers load its own GPU's
/// links, and only sends couple two stages, so the max-min solution splits by stage (joined along running sends).
/// Otherwise only the ops that started get their stage's speed. A new rate books the work done at the old one and
/// reschedules the activity's end.
///
/// The event loop tells it what changed (mark_running, mark_idle, comm_changed_for, compute_started,
/// compute_stream_changed) and calls rerate() once per instant; these run per event and are inline.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/flat_ops.h"
#include "sim/flow_rate_cache.h"
#include "sim/op_costs.h"
#include "sim/step_state.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The rates as a replay boundary compares them (sim/micro_batch_replay.h): equal snapshots, equal rates from then.
struct RateSnapshot {
  std::vector<double> flow_rates_bytes_per_s;  ///< the last solve's, by flow
  IdVector<StreamId, int32_t> flow_of_stream;  ///< per stream: its flow in the last solve, -1 for none
  std::vector<double> compute_speed;           ///< per stage
  std::vector<int32_t> comm_sms;               ///< per stage: SMs communication kernels hold
  std::vector<char> comm_running;              ///< per stage
  bool operator==(const RateSnapshot&) const = default;
};

/// Gives running activities their rates as communication starts and ends.
class RateAssignment {
 public:
  /// `flat`, `costs`, `gpu` and `state` must outlive this (`stages` is copied); `link_capacities_bytes_per_s` by link
  /// index (LinkId + stage × kLinkCount).
  RateAssignment(const FlatOps& flat, const OpCostTable& costs, const GpuProfile& gpu, const StreamStages& stages,
                 std::span<const double> link_capacities_bytes_per_s, StepState& state);

  /// A step starts: nothing runs, and the first re-rating looks at every stage.
  void begin_step();

  /// Stream `stream` started an op (its activity is set): it joins its stage's running streams, and a send joins the
  /// running sends that couple two stages.
  void mark_running(StreamId stream) {
    auto& running = running_of_stage_[stages_.stage_of(stream)];
    const auto at = std::lower_bound(running.begin(), running.end(), stream);
    if (at == running.end() || *at != stream) running.insert(at, stream);
    const Activity& a = state_.acts[stream];
    const OpId peer = flat_.ops[a.op].peer;
    const auto same_stream = [&](const RunningSend& send) { return send.stream == stream; };
    if (a.transfer && peer.valid() && std::none_of(running_sends_.begin(), running_sends_.end(), same_stream)) {
      const size_t there = stages_.stage_of(flat_.ops[peer].stream);
      running_sends_.push_back(RunningSend{.stream = stream, .here = stages_.stage_of(stream), .there = there});
    }
  }
  /// Stream `stream`'s op ended.
  void mark_idle(StreamId stream) {
    auto& running = running_of_stage_[stages_.stage_of(stream)];
    const auto at = std::lower_bound(running.begin(), running.end(), stream);
    if (at != running.end() && *at == stream) running.erase(at);
    std::erase_if(running_sends_, [&](const RunningSend& send) { return send.stream == stream; });
  }
  /// The running communication of `op`'s stage changed (a send: of both its stages); `flows` when the change adds or
  /// removes a transfer whose bytes flow (not one in its latency part).
  void comm_changed_for(OpId op, bool flows) {
    comm_changed_ = true;
    flows_changed_ = flows_changed_ || flows;
    const FlatOp& r = flat_.ops[op];
    stage_changed_[stages_.stage_of(r.stream)] = 1;
    if (r.peer.valid()) stage_changed_[stages_.stage_of(flat_.ops[r.peer].stream)] = 1;
  }
  /// Stream `stream` started a kernel or a timed wait (not a transfer): it gets its speed at the next rerate().
  void compute_started(StreamId stream) { fresh_.push_back(stream); }
  /// Stream `stream` started or ended a kernel: when it is its stage's compute stream, the stage's side-stream
  /// kernels are re-rated (they run slower beside it).
  void compute_stream_changed(StreamId stream) {
    if (gpu_.side_stream_memory_speed >= 1.0 || !is_compute_stream(stream)) return;
    for (const StreamId st : running_of_stage_[stages_.stage_of(stream)]) {
      if (st != stream && runs_kernel(state_.acts[st])) fresh_.push_back(st);
    }
  }
  /// Re-rates what the changes since the last call touched.
  [[gnu::always_inline]] void rerate(TimeNs now) {
    if (comm_changed_) rerate_changed_stages(now);
    for (const StreamId st : fresh_) set_rate(st, speed_of(st), now);  // no-op where the re-rating already set it
    fresh_.clear();
  }

  /// `a` runs a kernel: a compute op, not a transfer, a rendezvous or a wait for the host.
  [[nodiscard]] bool runs_kernel(const Activity& a) const {
    return a.active && !a.transfer && !a.rendezvous && !a.host_wait && flat_.cost_of(a.op).model == CostModel::compute;
  }
  /// A change waits to be rated (rerate() has not run since it).
  [[nodiscard]] bool change_pending() const { return comm_changed_ || flows_changed_; }
  /// The rates now, for a replay boundary.
  [[nodiscard]] RateSnapshot snapshot() const;

 private:
  // The running sends (a transfer with a peer): their stream and the stages of their two ends.
  struct RunningSend {
    StreamId stream = StreamId::none();
    size_t here = 0, there = 0;
  };

  // The slowest compute runs while communication kernels hold SMs. A guard, not a measurement: when the collectives
  // running at once hold as many SMs as the GPU has (several concurrent calls of a what-if profile), the hardware
  // still schedules compute CTAs as communication CTAs wait on their peers, so compute slows but never stops; 5% keeps
  // such a step finite. The shipped profiles never come near it (an FSDP step's concurrent all-gather and
  // reduce-scatter hold a few dozen of an H100's 132 SMs, docs/architecture.md §5.4), so no reported figure depends
  // on its value.
  static constexpr double kMinComputeSpeed = 0.05;

  // Inline below: they run at every change of the running communication, from the event loop's advance(), into
  // which the whole re-rating is inlined (one call site; a call there cost a pipeline step 1.3% more instructions).
  [[gnu::always_inline]] void rerate_changed_stages(TimeNs now);
  [[gnu::always_inline]] const std::vector<StreamId>& running_streams_to_rerate();

  [[nodiscard]] bool is_compute_stream(StreamId stream) const {
    return stages_.compute_stream_of_stage[stages_.stage_of(stream)] == stream;
  }
  // A memory-bound kernel on a side stream shares the SMs and HBM with whatever kernel the compute stream runs: it
  // runs at the profile's side_stream_memory_speed while the compute stream runs one. FSDP2's copy-in kernels took
  // 2.8 times as long beside the compute stream's kernels as alone on the H100 recording (bench/results/
  // 2026-11-26-h100-frameworks.md); the compute stream's own slowdown is in the kernel rates it was measured with.
  [[nodiscard]] double speed_of(StreamId stream) const {
    const size_t stage = stages_.stage_of(stream);
    const StreamId compute = stages_.compute_stream_of_stage[stage];
    if (stream != compute && gpu_.side_stream_memory_speed < 1.0 && runs_kernel(state_.acts[stream]) &&
        runs_kernel(state_.acts[compute])) {
      return compute_speed_[stage] * gpu_.side_stream_memory_speed;
    }
    return compute_speed_[stage];
  }
  // Gives a running activity a new rate: what it did at the old rate is booked, and its end is rescheduled.
  void set_rate(StreamId st, double rate, TimeNs now) {
    Activity& a = state_.acts[st];
    if (!a.active || a.in_latency || a.rendezvous || a.host_wait || rate == a.rate) return;
    a.remaining = std::max(0.0, a.remaining - a.rate * static_cast<double>(now - a.since));
    a.since = now;
    a.rate = rate;
    ++a.version;
    const double left = rate > 0 ? a.remaining / rate : 1e18;
    state_.queue.set(st, now + static_cast<TimeNs>(std::ceil(left - 1e-6)), a.version);
  }

  const FlatOps& flat_;
  const OpCostTable& costs_;
  const GpuProfile& gpu_;
  const StreamStages stages_;  // a copy: read at every event, one load nearer
  StepState& state_;
  FlowRateCache flow_rates_;
  std::vector<Flow> flows_;                              // the flowing transfers of the changed stages
  std::vector<int32_t> flow_classes_;                    // per flow: its OpCost::flow_class
  IdVector<StreamId, int32_t> flow_of_stream_;           // per stream: its flow, -1 for none
  std::vector<std::vector<StreamId>> running_of_stage_;  // per stage: streams whose activity is active, ascending
  std::vector<RunningSend> running_sends_;
  std::vector<StreamId> changed_;      // rerate_changed_stages: the running streams it re-rates
  std::vector<StreamId> fresh_;        // streams whose compute op started since the last re-rating
  bool comm_changed_ = true;           // the set of running communication changed since the last re-rating
  bool flows_changed_ = true;          // ... and with it the set of flowing transfers (what the solver sees)
  std::vector<double> compute_speed_;  // per stage
  std::vector<int32_t> comm_sms_;      // per stage: SMs communication kernels hold
  std::vector<char> stage_changed_;    // per stage: its running communication changed since the last re-rating
  std::vector<char> comm_running_;     // per stage
};

// Re-rates every running stream of the stages whose communication changed: their SMs held, compute speeds and flows.
inline void RateAssignment::rerate_changed_stages(TimeNs now) {
  comm_changed_ = false;
  const std::vector<StreamId>& changed = running_streams_to_rerate();
  flows_.clear();
  flow_classes_.clear();
  for (const StreamId st : changed) {
    const Activity& a = state_.acts[st];
    flow_of_stream_[st] = -1;
    const FlatCost& cost = flat_.cost_of(a.op);
    if (cost.holds_sms) {
      const size_t stage = stages_.stage_of(st);
      comm_sms_[stage] += cost.sms;
      comm_running_[stage] = 1;
    }
    if (a.transfer && !a.in_latency) {
      flow_of_stream_[st] = static_cast<int32_t>(flows_.size());
      flows_.push_back(Flow{cost.cap_bytes_per_s, costs_[a.op].loads.view()});
      flow_classes_.push_back(cost.flow_class);
    }
  }
  const double sms = std::max(1, gpu_.sm_count);
  for (size_t stage = 0; stage < compute_speed_.size(); ++stage) {
    if (!stage_changed_[stage]) continue;
    compute_speed_[stage] = std::max(kMinComputeSpeed, (sms - comm_sms_[stage]) / sms);
    if (comm_running_[stage]) compute_speed_[stage] *= (1.0 - gpu_.overlap_slowdown);
  }
  // A change that only started or ended a collective's latency part leaves the flows as the last solve saw them
  // (the same streams' transfers, in the same order): their rates stand, and only compute speeds change. With
  // several stages the last solve may have covered other stages, so every change is solved.
  if (flows_changed_ || stage_changed_.size() > 1) flow_rates_.solve(flows_, flow_classes_);
  flows_changed_ = false;
  const std::vector<double>& rates = flow_rates_.rates();
  for (const StreamId st : changed) {
    const Activity& a = state_.acts[st];
    if (a.in_latency || a.rendezvous) continue;
    const int32_t f = flow_of_stream_[st];
    set_rate(st, a.transfer ? rates[static_cast<size_t>(f)] / 1e9 : speed_of(st), now);  // bytes per ns
  }
  std::fill(stage_changed_.begin(), stage_changed_.end(), 0);
}

// The running streams of the changed stages, in stream order (the order the flows are solved in), with their stages'
// SM counts reset. One stage: its own list, already in order.
inline const std::vector<StreamId>& RateAssignment::running_streams_to_rerate() {
  if (stage_changed_.size() == 1) {
    comm_sms_[0] = 0;
    comm_running_[0] = 0;
    return running_of_stage_[0];
  }
  // A running send loads both its stages' links: a change on either end re-rates both.
  for (bool grew = true; grew;) {
    grew = false;
    for (const RunningSend& send : running_sends_) {
      if (stage_changed_[send.here] != stage_changed_[send.there]) {
        stage_changed_[send.here] = stage_changed_[send.there] = 1;
        grew = true;
      }
    }
  }
  changed_.clear();
  for (size_t stage = 0; stage < stage_changed_.size(); ++stage) {
    if (!stage_changed_[stage]) continue;
    comm_sms_[stage] = 0;
    comm_running_[stage] = 0;
    changed_.insert(changed_.end(), running_of_stage_[stage].begin(), running_of_stage_[stage].end());
  }
  std::sort(changed_.begin(), changed_.end());
  return changed_;
}

}  // namespace fsdpsim
