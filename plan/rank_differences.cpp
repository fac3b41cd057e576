#include "plan/rank_differences.h"

#include <string>
#include <utility>

#include "common/text.h"

namespace fsdpsim {

Straggler straggler_of(const FsdpConfig& config) {
  return Straggler{.compute_slowdown = config.straggler_compute_slowdown,
                   .nic_slowdown = config.straggler_nic_slowdown};
}

double straggler_cost_s(const Schedule& schedule, const Topology& topology, SimOptions options, double step_time_s) {
  if (!options.straggler.any()) return 0;
  options.straggler = Straggler{};
  options.record_timeline = false;
  return step_time_s -
         pool_report(schedule, topology, options, ReportDetail::summary, kDefaultMemoryMargin).step_time_s;
}

std::vector<Topology> topologies_per_gpu_kind(const Topology& topology) {
  std::vector<Topology> kinds{topology};
  kinds.front().mixed_gpus.clear();
  for (const GpuProfile& gpu : topology.mixed_gpus) {
    Topology kind = kinds.front();
    kind.gpu = gpu;
    kinds.push_back(std::move(kind));
  }
  return kinds;
}

Report pool_report(const Schedule& schedule, const Topology& topology, const SimOptions& options, ReportDetail detail,
                   double memory_margin, RunRecord* pacing_run) {
  const std::vector<Topology> kinds = topologies_per_gpu_kind(topology);
  std::vector<Report> reports;
  std::vector<RunRecord> runs;
  for (const Topology& kind : kinds) {
    runs.push_back(run_schedule(schedule, kind, options));
    reports.push_back(make_report(schedule, kind, runs.back(), detail, memory_margin));
  }
  // The slowest kind paces every synchronous collective; the first of equals (the topology's own GPU) wins ties.
  size_t pacing = 0, binding = 0;
  for (size_t k = 1; k < kinds.size(); ++k) {
    if (reports[k].step_time_s > reports[pacing].step_time_s) pacing = k;
    const MemoryVerdict& m = reports[k].memory;
    const MemoryVerdict& worst = reports[binding].memory;
    if (m.fit > worst.fit || (m.fit == worst.fit && m.spare_bytes() < worst.spare_bytes())) binding = k;
  }
  if (pacing_run != nullptr) *pacing_run = std::move(runs[pacing]);
  Report r = std::move(reports[binding]);
  if (kinds.size() == 1) return r;
  const Report& pace = reports[pacing];
  r.step_time_s = pace.step_time_s;
  r.first_step_time_s = pace.first_step_time_s;
  r.tokens_per_s_per_gpu = pace.tokens_per_s_per_gpu;
  r.tflops_per_gpu = pace.tflops_per_gpu;
  r.mfu = pace.mfu;
  r.exposed_comm_s = pace.exposed_comm_s;
  r.exposed_comm_by_phase_s = pace.exposed_comm_by_phase_s;
  r.exposed_comm_by_kind_s = pace.exposed_comm_by_kind_s;
  r.host_walk_s = pace.host_walk_s;
  r.host_bound_s = pace.host_bound_s;
  r.host_kernels_per_step = pace.host_kernels_per_step;
  r.host_dispatch = pace.host_dispatch;
  r.tokens_per_s_band_low = pace.tokens_per_s_band_low;
  r.tokens_per_s_band_high = pace.tokens_per_s_band_high;
  r.longest_waits = pace.longest_waits;
  r.longest_wait_lines = pace.longest_wait_lines;
  r.collectives = pace.collectives;
  r.ops = pace.ops;
  r.events = pace.events;
  std::vector<std::string> names;
  for (const Topology& kind : kinds) names.push_back(kind.gpu.name);
  r.gpu = join(names, " + ");
  const std::string also = r.simulated_rank.empty() ? "" : ", " + r.simulated_rank;
  r.memory.rank = "the " + kinds[binding].gpu.name + " GPUs" + also;
  r.simulated_rank = "a mixed pool: the step is the " + kinds[pacing].gpu.name +
                     " GPUs' (the slowest), the memory the " + kinds[binding].gpu.name + " GPUs' (the least to spare)" +
                     also;
  return r;
}

}  // namespace fsdpsim
