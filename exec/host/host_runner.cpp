// run_host: one interpreter thread per rank, each driving its own HostBackend; the ranks meet only in the shared
// HostWorld's rendezvous.
#include "exec/host/host_runner.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <thread>

#include "common/error.h"
#include "exec/host/host_backend.h"
#include "exec/interpreter.h"
#include "schedule/schedule_graph.h"

namespace fsdpsim {
namespace {

// Threads as ranks beyond this many are better checked with `emulate` (each rank is 1 + streams threads).
constexpr int32_t kMaxRanks = 64;

const SourceLocation kOptions{"<host options>", 0, 0};

int32_t rank_count(const Schedule& schedule, const HostOptions& options) {
  if (options.emulate) return 1;
  // A pipeline schedule holds one GPU of every stage, so a host rank runs a whole pipeline: world / pp of them.
  const int32_t pipelines = schedule.info.world_size / std::max(1, schedule.info.pipeline_stages);
  const int32_t ranks = options.ranks > 0 ? options.ranks : pipelines;
  if (ranks > kMaxRanks) {
    throw ConfigError(kOptions, "ranks",
                      "is " + std::to_string(ranks) + " threads as ranks (the schedule's world is " +
                          std::to_string(schedule.info.world_size) + ")",
                      "run at most " + std::to_string(kMaxRanks) + " ranks, or set emulate to run rank 0 alone");
  }
  return std::max(1, ranks);
}

void check_options(const Schedule& schedule, const HostOptions& options) {
  if (options.steps < 1) {
    throw ConfigError(kOptions, "steps", "is " + std::to_string(options.steps), "run at least 1 step");
  }
  if (options.bytes_scale < 1) {
    throw ConfigError(kOptions, "bytes_scale", "is " + std::to_string(options.bytes_scale),
                      "use a positive scale (1 = real sizes; 1024 = one real byte per KiB)");
  }
  if (options.timeout_ns <= 0) {
    throw ConfigError(kOptions, "timeout_ns", "is " + std::to_string(options.timeout_ns),
                      "use a positive timeout (the default is 30 s)");
  }
  if (options.memory_order.empty()) return;
  const std::vector<std::string> problems = memory_order_problems(schedule, options.memory_order);
  if (!problems.empty()) throw ScheduleError("the memory order does not fit the schedule", problems);
}

}  // namespace

ExecResult run_host(const Schedule& schedule, const HostOptions& options) {
  check_options(schedule, options);
  if (issue_order(schedule).size() != schedule.ops.size()) {
    throw ScheduleError("the host backend cannot run this schedule",
                        {"its dependencies form a cycle (run 'fsdpsim schedule' validation on it)"});
  }
  const int32_t ranks = rank_count(schedule, options);
  // Faults are resolved before any thread starts: a fault that names nothing is an input error, not a run failure.
  const std::vector<std::vector<InjectedFault>> faults =
      resolve_host_faults(schedule, options.faults, ranks, options.steps);
  const HostPlan plan = make_host_plan(schedule, options.bytes_scale);
  HostWorld world(options.timeout_ns);
  PredictedPeak predicted(options.predicted_peak);
  std::vector<std::unique_ptr<HostBackend>> backends;
  for (int32_t r = 0; r < ranks; ++r) {
    backends.push_back(std::make_unique<HostBackend>(schedule, plan, options, world, r,
                                                     HostRankFaults{faults[static_cast<size_t>(r)], &predicted}));
  }
  std::vector<RunRecord> runs(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        runs[static_cast<size_t>(r)] =
            interpret(schedule, *backends[static_cast<size_t>(r)], ExecOptions{.steps = options.steps, .stage = -1});
      } catch (const std::exception& e) {
        backends[static_cast<size_t>(r)]->add_problem(std::string("the run failed: ") + e.what());
        world.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  ExecResult result;
  result.run = std::move(runs.front());
  for (const auto& b : backends) {
    for (std::string& p : b->problems()) result.problems.push_back(std::move(p));
  }
  // The reports of what went wrong first, the notes of the faults injected on purpose after them.
  std::stable_partition(result.problems.begin(), result.problems.end(),
                        [](const std::string& p) { return p.find(": injected fault: ") == std::string::npos; });
  Measurement& measured = result.measurement();
  measured.backend = "host";
  measured.device = options.emulate ? "host (rank 0 of " + std::to_string(schedule.info.world_size) + ", emulated)"
                                    : "host (" + std::to_string(ranks) + " threads as ranks)";
  return result;
}

}  // namespace fsdpsim
