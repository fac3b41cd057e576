#include "sim/rate_assignment.h"

namespace fsdpsim {

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

RateSnapshot RateAssignment::snapshot() const {
  return RateSnapshot{.flow_rates_bytes_per_s = flow_rates_.rates(),
                      .flow_of_stream = flow_of_stream_,
                      .compute_speed = compute_speed_,
                      .comm_sms = comm_sms_,
                      .comm_running = comm_running_};
}

}  // namespace fsdpsim
