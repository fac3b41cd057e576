// A 10,000-configuration sweep of Llama-3-70B on DGX H100 nodes, on all cores: the planner's speed target is 10 s on
// a 2-core machine (issue 17). Its budget axis has ranges of budgets that build the same schedule, simulated once.
#include <benchmark/benchmark.h>

#include <thread>

#include "plan/sweep.h"

namespace {

using namespace fsdpsim;

SweepSpec spec_10k() {
  SweepSpec spec;
  spec.model = model_preset("llama3-70b");
  spec.topology = topology_preset("dgx-h100-ndr");
  apply_override(spec.base, "global_batch_size=1024");
  apply_override(spec.base, "seq_length=8192");
  // 5 × 4 × 5 × 4 × 5 × 5 = 10,000 points.
  spec.axes = {parse_grid_axis("nodes=8,16,32,64,128"),
               parse_grid_axis("tp=1,2,4,8"),
               parse_grid_axis("micro_batch_size=1,2,4,8,16"),
               parse_grid_axis("data_parallel_sharding_strategy=no_shard,optim,optim_grads,optim_grads_params"),
               parse_grid_axis("recompute_granularity=none,selective,full,full,none"),
               parse_grid_axis("suggested_communication_unit_size=0,200000000,500000000,1000000000,2000000000")};
  return spec;
}

void BM_Sweep10kLlama70b(benchmark::State& state) {
  const SweepSpec spec = spec_10k();
  int64_t points = 0;
  for (auto _ : state) {
    const auto results = run_sweep(spec);
    points += static_cast<int64_t>(results.size());
    benchmark::DoNotOptimize(results.data());
  }
  state.counters["configs_per_s"] = benchmark::Counter(static_cast<double>(points), benchmark::Counter::kIsRate);
  state.counters["threads"] = static_cast<double>(std::thread::hardware_concurrency());
  state.SetLabel(std::to_string(sweep_size(spec)) + " configurations");
}

BENCHMARK(BM_Sweep10kLlama70b)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
