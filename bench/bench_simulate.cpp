// Wall time per simulated step and events per second, for Llama-3-8B/70B/405B and DeepSeek-V3 on 8 to 16,384 GPUs
// with 1 to 16 micro-batches. One rank is simulated, so a step should cost the same at any GPU count.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "builders/builder.h"
#include "model/model.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

namespace {

using namespace fsdpsim;

struct Job {
  const char* model;
  const char* extra;  // model-specific settings
};

constexpr Job kJobs[] = {{"llama3-8b", ""}, {"llama3-70b", ""}, {"llama3-405b", "tp=8"}, {"deepseek-v3", "ep=64"}};

void BM_SimulateStep(benchmark::State& state) {
  const Job& job = kJobs[state.range(0)];
  const auto gpus = static_cast<int32_t>(state.range(1));
  const auto micro_batches = static_cast<int32_t>(state.range(2));
  const Topology topology = topology_preset("dgx-h100-ndr");
  FsdpConfig config;
  apply_override(config, "nodes=" + std::to_string(gpus / topology.gpus_per_node));
  std::string extra = job.extra;
  int32_t model_parallel = 1;
  if (!extra.empty()) {
    apply_override(config, extra);
    model_parallel = extra.rfind("tp=", 0) == 0 ? std::stoi(extra.substr(3)) : 1;
  }
  apply_override(config, "global_batch_size=" + std::to_string(int64_t{micro_batches} * gpus / model_parallel));
  const Schedule schedule = build_schedule(model_preset(job.model), config, topology.gpus_per_node);
  SimOptions options;
  options.steps = 2;
  options.record_timeline = false;
  uint64_t events = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const RunRecord run = run_schedule(schedule, topology, options);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    events += run.events;
    benchmark::DoNotOptimize(run.steps.back().end_ns);
  }
  // Two steps per iteration: step_ms is the wall time of one simulated step.
  state.SetLabel(std::string(job.model) + " " + std::to_string(gpus) + " GPUs " + std::to_string(micro_batches) +
                 " mb, " + std::to_string(schedule.ops.size()) + " ops");
  state.counters["step_ms"] = seconds * 1e3 / (2.0 * static_cast<double>(state.iterations()));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

void Jobs(benchmark::internal::Benchmark* b) {
  for (int64_t job = 0; job < 4; ++job) {
    for (const int64_t gpus : {8, 64, 512, 4096, 16384}) {
      if (job == 2 && gpus < 64) continue;  // 405B: tp 8 needs whole data-parallel groups
      if (job == 3 && gpus < 64) continue;  // DeepSeek-V3: ep 64
      for (const int64_t mb : {1, 4, 16}) b->Args({job, gpus, mb});
    }
  }
}

BENCHMARK(BM_SimulateStep)->Apply(Jobs)->Unit(benchmark::kMillisecond);

// Simulates two steps per iteration (as BM_SimulateStep does) and returns the wall time of one simulated step.
double time_two_steps_ms(benchmark::State& state, const Schedule& schedule, const Topology& topology) {
  SimOptions options;
  options.steps = 2;
  options.record_timeline = false;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const RunRecord run = run_schedule(schedule, topology, options);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(run.steps.back().end_ns);
  }
  return seconds * 1e3 / (2.0 * static_cast<double>(state.iterations()));
}

// Ranks that differ cost no more than ranks alike: DeepSeek-V3 with ep=64 on 256 GB200 GPUs, as 4 × 64 GPUs of
// gb200-nvl72-64 with balanced routing (0), and as 72 + 72 + 72 + 40 GPUs of gb200-nvl72 with the busiest
// expert-parallel rank at 1.5× the mean (1). One schedule is simulated either way.
void BM_RanksThatDiffer(benchmark::State& state) {
  const bool uneven = state.range(0) == 1;
  const Topology topology = topology_preset(uneven ? "gb200-nvl72" : "gb200-nvl72-64");
  FsdpConfig config;
  for (const char* set : {"gpus=256", "ep=64", "global_batch_size=1024"}) apply_override(config, set);
  if (uneven) apply_override(config, "moe_routing_skew=1.5");
  config.nodes = 256 / topology.gpus_per_node;
  const Schedule schedule = build_schedule(model_preset("deepseek-v3"), config, topology.gpus_per_node);
  const double step_ms = time_two_steps_ms(state, schedule, topology);
  state.SetLabel(uneven ? "256 GPUs on 72-GPU racks, routing skew 1.5" : "256 GPUs on 64-GPU racks, balanced");
  state.counters["step_ms"] = step_ms;
}

BENCHMARK(BM_RanksThatDiffer)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Pipeline parallelism: Llama-3-405B, TP 8, PP 8 with two interleaved chunks per rank, 16 micro-batches, at 16,384
// GPUs. The schedule holds one rank of each of the 8 stages, so a step simulates 8 GPUs and their sends.
void BM_PipelineStep(benchmark::State& state) {
  const Topology topology = topology_preset("dgx-h100-ndr");
  FsdpConfig config;
  for (const char* set : {"gpus=16384", "tp=8", "pp=8", "pipeline_schedule=interleaved_1f1b"}) {
    apply_override(config, set);
  }
  apply_override(config, "global_batch_size=" + std::to_string(16 * 16384 / 64));  // dp = 16384 / (8 · 8)
  const Schedule schedule = build_schedule(model_preset("llama3-405b"), config, topology.gpus_per_node);
  const double step_ms = time_two_steps_ms(state, schedule, topology);
  state.SetLabel("llama3-405b tp 8 pp 8 interleaved, 16,384 GPUs, 16 mb, " + std::to_string(schedule.ops.size()) +
                 " ops");
  state.counters["step_ms"] = step_ms;
}

BENCHMARK(BM_PipelineStep)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
