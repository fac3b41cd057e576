#include "plan/sweep.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "builders/builder.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/units.h"
#include "config/parallel_layout.h"
#include "job/job.h"
#include "plan/rank_differences.h"
#include "report/report.h"
#include "sim/engine.h"

namespace fsdpsim {
namespace {

std::vector<std::string> config_key_names() {
  std::vector<std::string> names;
  for (const auto& k : config_keys()) names.push_back(k.name);
  return names;
}

bool is_hardware_assignment(const std::string& assignment) {
  return assignment.starts_with(std::string(kTopologyAxis) + "=") ||
         assignment.starts_with(std::string(kProfileAxis) + "=");
}

// The assignments of grid point `index` (mixed radix over the axes, the last axis fastest).
std::vector<std::string> point_assignments(const std::vector<GridAxis>& axes, int64_t index) {
  std::vector<std::string> out(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    const auto n = static_cast<int64_t>(axes[a].values.size());
    out[a] = axes[a].key + "=" + axes[a].values[static_cast<size_t>(index % n)];
    index /= n;
  }
  return out;
}

}  // namespace

GridAxis parse_grid_axis(const std::string& text) {
  const SourceLocation where{"<--grid " + text + ">", 0, 0};
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw ConfigError(where, "", "expected key=value1,value2,...", "write e.g. --grid micro_batch_size=1,2,4");
  }
  GridAxis axis;
  axis.key = trim_copy(text.substr(0, eq));
  std::vector<std::string> names = config_key_names();
  names.insert(names.end(), {kTopologyAxis, kProfileAxis});
  if (std::find(names.begin(), names.end(), axis.key) == names.end()) {
    throw ConfigError(where, axis.key, "unknown configuration key" + did_you_mean(axis.key, names),
                      "run 'fsdpsim presets --keys' for the keys; 'topology' and 'profile' sweep the hardware");
  }
  for (const std::string& v : split(text.substr(eq + 1), ',')) {
    const std::string value = trim_copy(v);
    if (value.empty())
      throw ConfigError(where, axis.key, "an empty value in the list", "write values separated by commas");
    // Reject a bad value now, not after thousands of simulations.
    if (axis.key == kTopologyAxis) {
      axis.topologies.push_back(load_topology(value));
    } else if (axis.key == kProfileAxis) {
      axis.profiles.push_back(load_gpu_profile(value));
    } else {
      FsdpConfig probe;
      apply_override(probe, axis.key + "=" + value, "--grid");
    }
    axis.values.push_back(value);
  }
  return axis;
}

Topology point_topology(const SweepSpec& spec, int64_t index) {
  Topology topology = spec.topology;
  std::vector<size_t> picked(spec.axes.size());
  for (size_t a = spec.axes.size(); a-- > 0;) {
    const auto n = static_cast<int64_t>(spec.axes[a].values.size());
    picked[a] = static_cast<size_t>(index % n);
    index /= n;
  }
  // The topology first, then the profile, whatever the axes' order: a profile axis re-equips every topology.
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    if (spec.axes[a].key == kTopologyAxis) topology = spec.axes[a].topologies[picked[a]];
  }
  for (size_t a = 0; a < spec.axes.size(); ++a) {
    if (spec.axes[a].key != kProfileAxis) continue;
    topology.gpu = spec.axes[a].profiles[picked[a]];
    topology.mixed_gpus.clear();  // every node now carries the swept GPU
  }
  return topology;
}

std::vector<Topology> swept_hardware(const SweepSpec& spec) {
  SweepSpec hardware;
  hardware.topology = spec.topology;
  for (const GridAxis& axis : spec.axes) {
    if (axis.key == kTopologyAxis || axis.key == kProfileAxis) hardware.axes.push_back(axis);
  }
  int64_t combinations = 1;
  for (const GridAxis& axis : hardware.axes) combinations *= static_cast<int64_t>(axis.values.size());
  std::vector<Topology> out;
  for (int64_t i = 0; i < combinations; ++i) out.push_back(point_topology(hardware, i));
  return out;
}

double point_price_per_gpu_hour(const SweepSpec& spec, const Topology& topology) {
  for (const std::string& name : {topology.name, topology.gpu.name}) {
    for (const auto& [priced, price] : spec.prices) {
      if (priced == name) return price;
    }
  }
  if (spec.run.price_per_gpu_hour > 0) return spec.run.price_per_gpu_hour;
  return topology.gpu.price_per_gpu_hour;
}

int64_t sweep_size(const SweepSpec& spec) {
  // Multiplied in long double and refused past the limit: a grid of 10^12 points would overflow nothing but would
  // allocate a result per point and run for months (common/limits.h).
  long double n = spec.points.empty() ? 1 : static_cast<long double>(spec.points.size());
  std::string axes = spec.points.empty() ? "" : std::to_string(spec.points.size()) + " plans";
  for (const auto& a : spec.axes) {
    n *= static_cast<long double>(a.values.size());
    axes += (axes.empty() ? "" : " × ") + std::to_string(a.values.size()) + " " + a.key;
  }
  if (n > static_cast<long double>(limits::kMaxGridPoints)) {
    const std::string points = format_huge_count(n);
    throw ConfigError(SourceLocation{"<--grid>", 0, 0}, "",
                      "a grid of " + points + " points (" + axes + ") is beyond what fsdpsim models",
                      "sweep at most " + std::to_string(limits::kMaxGridPoints) +
                          " points (each is one simulation; 10,000 take about 10 s on 2 cores): drop values or axes");
  }
  return static_cast<int64_t>(n);
}

std::vector<std::vector<std::string>> pipeline_plans(const ModelSpec& model, const FsdpConfig& base, int64_t world) {
  std::vector<std::vector<std::string>> plans{{"pp=1"}};
  const int64_t tp_cp = int64_t{std::max(base.tp, 1)} * std::max(base.cp, 1);
  if (world % tp_cp != 0) return plans;  // the FSDP-only point names the problem
  const int64_t rest = world / tp_cp;
  const int64_t deepest = std::min<int64_t>({limits::kMaxPipelineStages, rest, std::max(model.num_layers, 1)});
  for (int64_t pp = 2; pp <= deepest; ++pp) {
    if (rest % pp != 0) continue;
    for (const char* schedule : {"1f1b", "interleaved_1f1b"}) {
      plans.push_back({"pp=" + std::to_string(pp), std::string("pipeline_schedule=") + schedule});
    }
    // torchtitan's V-shaped zero-bubble schedule (FSDP2 only: Megatron-LM has none).
    if (base.implementation == Implementation::fsdp2)
      plans.push_back({"pp=" + std::to_string(pp), "pipeline_schedule=zbv"});
  }
  return plans;
}

int64_t compared_global_batch(const FsdpConfig& base, int64_t world) {
  if (base.global_batch_size > 0) return base.global_batch_size;
  const int64_t tp_cp = int64_t{std::max(base.tp, 1)} * std::max(base.cp, 1);
  return base.micro_batch_size * std::max<int64_t>(1, world / tp_cp);
}

// No budget: what a point reports until its schedule is built (an empty range, min above max).
constexpr BudgetRange kNoBudget{.min_elems = 1, .max_elems = 0};

SweepResult evaluate_config(const ModelSpec& model, const Topology& base_topology, FsdpConfig config,
                            const EvaluateOptions& evaluation, BudgetRange* budgets) {
  SweepResult r;
  if (budgets) *budgets = kNoBudget;
  Schedule schedule;
  Topology topology;
  try {
    topology = topology_for_gpus(base_topology, config);  // `gpus` may be a grid axis
    // The one job path, without re-checking every IR invariant at every point: the builders' output is validated by
    // every `schedule`, `simulate` and `exec` run, by the builder tests over every strategy and implementation, and by
    // the fuzz target on random configurations; checking again here made the 10,000-point sweep benchmark 27% slower
    // (40.0 s to 50.8 s on 2 cores, bench_sweep) for no point that could differ.
    schedule = build_job_schedule(model, config, topology, ScheduleCheck::trust_builder, budgets);
  } catch (const ConfigError& e) {
    if (budgets) *budgets = kNoBudget;
    r.invalid_reason = e.problem().empty() ? e.what() : e.key() + ": " + e.problem();
    return r;
  }
  r.valid = true;
  SimOptions options;
  options.steps = evaluation.steps;
  options.expandable_segments = evaluation.expandable_segments;
  options.record_timeline = false;
  options.straggler = straggler_of(config);
  Report report;
  try {
    // One run per GPU kind of a mixed pool (one for a pool of one kind).
    report = pool_report(schedule, topology, options, ReportDetail::summary, evaluation.memory_margin);
  } catch (const ConfigError& e) {
    // A step the simulator refuses (common/limits.h) is an invalid point, not an exception escaping a sweep thread.
    r.valid = false;
    r.invalid_reason = e.what();
    return r;
  }
  r.gpus = schedule.info.world_size;
  r.topology = topology.name;
  r.gpu = topology.gpu.name;
  r.checkpoint_bytes = checkpoint_bytes(config, schedule.info.model_params);
  r.micro_batches = schedule.info.micro_batches;
  r.params_per_rank = report.model_size.params_per_rank;
  r.step_time_s = report.step_time_s;
  r.tokens_per_s_per_gpu = report.tokens_per_s_per_gpu;
  r.tflops_per_gpu = report.tflops_per_gpu;
  r.mfu = report.mfu;
  r.exposed_comm_s = report.exposed_comm_s;
  r.peak_allocated_bytes = report.peak_allocated_bytes;
  r.memory = report.memory;
  r.needed_bytes = report.memory.needed_bytes;
  r.gpu_memory_bytes = report.gpu_memory_bytes;
  if (schedule.info.global_tokens_per_step > 0) {
    r.gpu_seconds_per_million_tokens =
        r.gpus * r.step_time_s / static_cast<double>(schedule.info.global_tokens_per_step) * 1e6;
  }
  return r;
}

namespace {

// One point of the grid. Whatever it throws (a schedule the builder got wrong, an internal check) is that point's
// error: the other points still run, and the table shows which one failed and why.
// `budgets` receives the communication budgets that give this same result (none for a custom evaluator or an error).
SweepResult evaluate_point(const SweepSpec& spec, const std::vector<std::string>& assignments, int64_t grid_index,
                           BudgetRange* budgets) {
  SweepResult r;
  *budgets = kNoBudget;
  try {
    FsdpConfig config = spec.base;
    for (const auto& a : assignments) {
      if (!is_hardware_assignment(a)) apply_override(config, a, "--grid");
    }
    const Topology topology = point_topology(spec, grid_index);
    r = spec.evaluate ? spec.evaluate(config) : evaluate_config(spec.model, topology, config, spec.evaluation, budgets);
    if (r.valid) {
      TrainingRun run = spec.run;
      run.price_per_gpu_hour = point_price_per_gpu_hour(spec, topology);
      r.priced = run.price_per_gpu_hour > 0;
      r.cost = training_cost(r.gpus, r.tokens_per_s_per_gpu, r.checkpoint_bytes, run);
      r.over_budget = spec.max_gpus > 0 && r.gpus > spec.max_gpus;
    }
  } catch (const std::exception& e) {
    *budgets = kNoBudget;
    r = SweepResult{};
    r.invalid_reason = std::string("error: ") + e.what();
  }
  r.assignments = assignments;
  return r;
}

constexpr std::string_view kBudgetKey = "suggested_communication_unit_size";

bool is_budget_assignment(const std::string& assignment) {
  return assignment.size() > kBudgetKey.size() && assignment.starts_with(kBudgetKey) &&
         assignment[kBudgetKey.size()] == '=';
}

// The points to simulate, in groups that differ only in the communication budget: each group runs on one thread,
// and a point whose budget lies in the range of one simulated before it (BudgetRange) takes that point's result.
// The default budget (0) is resolved by the builder, so those points go first: an explicit budget equal to what it
// resolved to then reuses it. A custom evaluator reports no range: every point is its own group.
std::vector<std::vector<size_t>> budget_groups(const SweepSpec& spec,
                                               const std::vector<std::vector<std::string>>& assignments,
                                               const std::vector<size_t>& unique, std::vector<int64_t>* budget_of) {
  budget_of->assign(assignments.size(), 0);
  std::vector<std::vector<size_t>> groups;
  std::map<std::vector<std::string>, size_t> group_of;
  for (const size_t k : unique) {
    std::vector<std::string> others;
    FsdpConfig budget = spec.base;
    bool readable = true;
    for (const std::string& a : assignments[k]) {
      if (!is_budget_assignment(a)) {
        others.push_back(a);
        continue;
      }
      try {
        apply_override(budget, a, "--grid");
      } catch (const ConfigError&) {
        readable = false;  // the point's own evaluation reports the value
      }
    }
    (*budget_of)[k] = readable ? budget.suggested_communication_unit_size : 0;
    if (spec.evaluate || !readable) {
      groups.push_back({k});
      continue;
    }
    const auto [it, added] = group_of.emplace(std::move(others), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(k);
  }
  for (auto& g : groups) {
    std::stable_partition(g.begin(), g.end(), [&](size_t k) { return (*budget_of)[k] == 0; });
  }
  return groups;
}

}  // namespace

std::vector<SweepResult> run_sweep(const SweepSpec& spec, const SweepProgress& progress) {
  std::vector<int64_t> all(static_cast<size_t>(sweep_size(spec)));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return run_sweep_points(spec, all, progress);
}

std::vector<SweepResult> run_sweep_points(const SweepSpec& spec, const std::vector<int64_t>& indices,
                                          const SweepProgress& progress) {
  const int64_t total = sweep_size(spec);
  if (spec.evaluate) {
    for (const GridAxis& axis : spec.axes) {
      if (axis.key == kTopologyAxis || axis.key == kProfileAxis) {
        throw std::logic_error("a sweep with its own evaluator cannot sweep the hardware (" + axis.key + ")");
      }
    }
  }
  for (const int64_t i : indices) {
    if (i < 0 || i >= total) throw std::logic_error("sweep point " + std::to_string(i) + " is outside the grid");
  }
  // Every point's assignments first: a grid that lists a value twice (recompute_granularity=none,full,none) gives
  // points that are the same configuration, simulated once and copied.
  std::vector<std::vector<std::string>> assignments(indices.size());
  std::vector<int64_t> grid_index(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t i = indices[k];
    grid_index[k] = i;
    if (!spec.points.empty()) {
      const int64_t per_point = total / static_cast<int64_t>(spec.points.size());
      assignments[k] = spec.points[static_cast<size_t>(i / per_point)];
      grid_index[k] = i % per_point;
    }
    for (std::string& a : point_assignments(spec.axes, grid_index[k])) assignments[k].push_back(std::move(a));
  }
  std::vector<size_t> first_of(indices.size());  // the point each one copies (itself when it is the first)
  std::vector<size_t> unique;
  {
    std::map<std::vector<std::string>, size_t> seen;
    for (size_t k = 0; k < indices.size(); ++k) {
      const auto [it, inserted] = seen.emplace(assignments[k], k);
      first_of[k] = it->second;
      if (inserted) unique.push_back(k);
    }
  }
  const auto count = static_cast<int64_t>(unique.size());
  std::vector<int64_t> budget_of;
  const std::vector<std::vector<size_t>> groups = budget_groups(spec, assignments, unique, &budget_of);
  std::vector<SweepResult> results(indices.size());
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex progress_mutex;
  const auto group_count = static_cast<int64_t>(groups.size());
  const auto worker = [&] {
    for (int64_t n = next++; n < group_count; n = next++) {
      std::vector<std::pair<BudgetRange, size_t>> simulated;  // this group's ranges and the point that set each
      for (const size_t k : groups[static_cast<size_t>(n)]) {
        const int64_t budget = budget_of[k];
        const auto same = std::find_if(simulated.begin(), simulated.end(),
                                       [&](const auto& s) { return budget != 0 && s.first.contains(budget); });
        if (same != simulated.end()) {
          results[k] = results[same->second];
          results[k].assignments = assignments[k];
        } else {
          BudgetRange range;
          results[k] = evaluate_point(spec, assignments[k], grid_index[k], &range);
          simulated.emplace_back(range, k);
        }
        const int64_t d = ++done;
        if (progress) {
          const std::lock_guard<std::mutex> lock(progress_mutex);
          progress(d, count);
        }
      }
    }
  };
  const int32_t threads =
      spec.threads > 0 ? spec.threads : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int32_t t = 1; t < std::min<int64_t>(threads, group_count); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (size_t k = 0; k < results.size(); ++k) {
    if (first_of[k] != k) results[k] = results[first_of[k]];
  }
  return results;
}

std::vector<size_t> rank_results(const std::vector<SweepResult>& results, RankBy by) {
  std::vector<size_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // 0 fits, 1 at risk, 2 over the GPU budget, 3 out of memory, 4 invalid.
  const auto group = [&](size_t i) {
    const SweepResult& r = results[i];
    if (!r.valid) return 4;
    if (r.memory.fit == MemoryFit::out_of_memory) return 3;
    return r.over_budget ? 2 : static_cast<int>(r.memory.fit);
  };
  const auto key = [&](size_t i) {
    const SweepResult& r = results[i];
    switch (by) {
      case RankBy::throughput:
        return -r.tokens_per_s_per_gpu;
      case RankBy::cost:
        if (r.priced) return r.cost.price_per_million_tokens;
        return r.cost.goodput > 0 ? r.gpu_seconds_per_million_tokens / r.cost.goodput : 0.0;
      case RankBy::memory:
        return static_cast<double>(r.needed_bytes);
      case RankBy::time:
        return -r.tokens_per_s_per_gpu * r.gpus * r.cost.goodput;
    }
    return 0.0;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (group(a) != group(b)) return group(a) < group(b);
    if (group(a) >= 3) return a < b;
    return key(a) < key(b);
  });
  return order;
}

}  // namespace fsdpsim
