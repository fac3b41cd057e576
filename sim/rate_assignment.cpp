#include "sim/rate_assignment.h"

namespace fsdpsim {
namespace {

// The slowest compute runs while communication kernels hold SMs. A guard, not a measurement: when the collectives
// running at once hold as many SMs as the GPU has (several concurrent calls of a what-if profile), the hardware still
// schedules compute CTAs as communication CTAs wait on their peers, so compute slows but never stops; 5% keeps such a
// step finite. The shipped profiles never come near it (an FSDP step's concurrent all-gather and reduce-scatter hold a
// few dozen of an H100's 132 SMs, docs/architecture.md §5.4), so no reported figure depends on its value.
constexpr double kMinComputeSpeed = 0.05;

}  // namespace

RateAssignment::RateAssignment(const FlatOps& flat, const OpCostTable& costs, const GpuProfile& gpu,
                               const StreamStages& stages, std::span<const double> link_capacities_bytes_per_s,
                               StepState& state)
    : flat_(flat), costs_(costs), gpu_(gpu), stages_(stages), state_(state), flow_rates_(link_capacities_bytes_per_s) {
  const size_t stage_count = stages.stages();
  compute_speed_.assign(stage_count, 1.0);
  comm_sms_.assign(stage_count, 0);
  comm_running_.assign(stage_count, 0);
  running_of_stage_.assign(stage_count, {});
  stage_changed_.assign(stage_count, 1);
  flow_of_stream_.assign(stages.stage_of_stream.size(), -1);
}

void RateAssignment::begin_step() {
  for (auto& stage : running_of_stage_) stage.clear();
  running_sends_.clear();
  std::fill(stage_changed_.begin(), stage_changed_.end(), 1);
  comm_changed_ = true;
  flows_changed_ = true;
  fresh_.clear();
}

void RateAssignment::rerate_changed_stages(TimeNs now) {
  comm_changed_ = false;
  const std::vector<size_t>& changed = running_streams_to_rerate();
  flows_.clear();
  flow_classes_.clear();
  for (const size_t st : changed) {
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
      flows_.push_back(Flow{cost.cap_bytes_per_s, costs_[static_cast<size_t>(a.op)].loads.view()});
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
  for (const size_t st : changed) {
    const Activity& a = state_.acts[st];
    if (a.in_latency || a.rendezvous) continue;
    const int32_t f = flow_of_stream_[st];
    set_rate(st, a.transfer ? rates[static_cast<size_t>(f)] / 1e9 : speed_of(st), now);  // bytes per ns
  }
  std::fill(stage_changed_.begin(), stage_changed_.end(), 0);
}

// The running streams of the changed stages, in stream order (the order the flows are solved in), with their stages'
// SM counts reset. One stage: its own list, already in order.
const std::vector<size_t>& RateAssignment::running_streams_to_rerate() {
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

RateSnapshot RateAssignment::snapshot() const {
  return RateSnapshot{.flow_rates_bytes_per_s = flow_rates_.rates(),
                      .flow_of_stream = flow_of_stream_,
                      .compute_speed = compute_speed_,
                      .comm_sms = comm_sms_,
                      .comm_running = comm_running_};
}

}  // namespace fsdpsim
