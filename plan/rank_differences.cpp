#include "plan/rank_differences.h"

namespace fsdpsim {

Straggler straggler_of(const FsdpConfig& config) {
  return Straggler{.compute_slowdown = config.straggler_compute_slowdown,
                   .nic_slowdown = config.straggler_nic_slowdown};
}

double straggler_cost_s(const Schedule& schedule, const Topology& topology, SimOptions options, double step_time_s) {
  if (!options.straggler.any()) return 0;
  options.straggler = Straggler{};
  options.record_timeline = false;
  const RunRecord without = run_schedule(schedule, topology, options);
  const StepRun& steady = without.steps.back();
  return step_time_s - static_cast<double>(steady.end_ns - steady.start_ns) / 1e9;
}

}  // namespace fsdpsim
