// The one job path's cost per configuration (job/job.h): building a schedule, and checking it against every IR
// invariant (schedule/validate.h). A sweep pays both at every point, so they must stay small next to the
// simulation itself (bench_simulate).
#include <benchmark/benchmark.h>

#include <string>

#include "builders/builder.h"
#include "model/model.h"
#include "schedule/validate.h"
#include "topologies/hardware.h"

namespace {

using namespace fsdpsim;

// Llama-3-70B on 64 H100s (the sweep benchmark's model) and Llama-3-405B with TP 8, at 1 and 16 micro-batches.
struct Job {
  const char* model;
  const char* extra;
};
constexpr Job kJobs[] = {{"llama3-70b", "tp=1"}, {"llama3-405b", "tp=8"}};

Schedule build(int64_t job_index, int64_t micro_batches) {
  const Job& job = kJobs[job_index];
  const Topology topology = topology_preset("dgx-h100-ndr");
  FsdpConfig config;
  apply_override(config, "nodes=8");
  apply_override(config, job.extra);
  const int64_t tp = std::stoi(std::string(job.extra).substr(3));
  apply_override(config, "global_batch_size=" + std::to_string(micro_batches * 64 / tp));
  return build_schedule(model_preset(job.model), config, topology.gpus_per_node);
}

void BM_BuildSchedule(benchmark::State& state) {
  for (auto _ : state) {
    const Schedule s = build(state.range(0), state.range(1));
    benchmark::DoNotOptimize(s.ops.size());
  }
  state.SetLabel(std::string(kJobs[state.range(0)].model) + " " + std::to_string(state.range(1)) + " mb");
}

void BM_ValidateSchedule(benchmark::State& state) {
  const Schedule s = build(state.range(0), state.range(1));
  for (auto _ : state) {
    const std::vector<std::string> problems = validate(s);
    benchmark::DoNotOptimize(problems.size());
  }
  state.SetLabel(std::string(kJobs[state.range(0)].model) + " " + std::to_string(state.range(1)) + " mb, " +
                 std::to_string(s.ops.size()) + " ops");
}

void Jobs(benchmark::internal::Benchmark* b) {
  for (int64_t job = 0; job < 2; ++job) {
    for (const int64_t micro_batches : {1, 16}) b->Args({job, micro_batches});
  }
}

}  // namespace

BENCHMARK(BM_BuildSchedule)->Apply(Jobs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ValidateSchedule)->Apply(Jobs)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
