// NCCL all-gather, reduce-scatter and all-reduce (bf16, sum) on every visible GPU, over power-of-two sizes from 1 MiB
// to 4 GiB as nccl-tests prints them (AG: the whole output, RS: the whole input, AR: the buffer), with nccl-tests'
// algbw = size / time and busbw = algbw·(n−1)/n (AG, RS) or ·2(n−1)/n (AR) (NVIDIA/nccl-tests doc/PERFORMANCE.md;
// docs/architecture.md §6.2). Times come from CUDA events around each call (manual time). Run it from the
// build tree: build/bench/fsdpsim_bench_collectives_gpu --benchmark_filter=all_reduce
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "common/units.h"
#include "exec/cuda/cuda_runner.h"

namespace {

using namespace fsdpsim;

// One timer (communicators and buffers) for the whole program; null, with the reason, when it cannot run here.
CollectiveTimer* shared_timer(std::string* why) {
  static std::string reason;
  static const std::unique_ptr<CollectiveTimer> timer = []() -> std::unique_ptr<CollectiveTimer> {
    if (!cuda_device_available(&reason)) return nullptr;
    try {
      auto t = std::make_unique<CollectiveTimer>(std::vector<int32_t>{});
      if (t->ranks() < 2) {
        reason = "collectives need 2 or more GPUs; " + std::to_string(t->ranks()) + " visible";
        return nullptr;
      }
      return t;
    } catch (const Error& e) {
      reason = e.what();
      return nullptr;
    }
  }();
  *why = reason;
  return timer.get();
}

void BM_Collective(benchmark::State& state, OpKind kind) {
  std::string why;
  CollectiveTimer* timer = shared_timer(&why);
  if (timer == nullptr) {
    state.SkipWithError(why.c_str());
    return;
  }
  const int64_t size = state.range(0);
  // Footprint per GPU: input plus output (AR 2·size; AG and RS size + size/n); leave a tenth free.
  const int64_t footprint = kind == OpKind::all_reduce ? 2 * size : size + size / timer->ranks();
  if (footprint > timer->free_bytes() * 9 / 10) {
    state.SkipWithError(("needs " + format_bytes(footprint) + " per GPU").c_str());
    return;
  }
  CollectiveSample last = timer->time(kind, size, 5, 1);  // nccl-tests' default of 5 warm-up calls
  double seconds = 0;
  int64_t wrong = last.wrong;
  for (auto _ : state) {
    last = timer->time(kind, size, 0, 1);
    state.SetIterationTime(last.time_s);
    seconds += last.time_s;
    wrong += last.wrong;
  }
  const double calls = static_cast<double>(state.iterations());
  const double algbw = seconds > 0 ? static_cast<double>(last.size_bytes) * calls / seconds : 0.0;
  const double n = timer->ranks();
  state.counters["ranks"] = n;
  state.counters["algbw_bytes_per_s"] = algbw;
  state.counters["busbw_bytes_per_s"] = algbw * (kind == OpKind::all_reduce ? 2.0 : 1.0) * (n - 1) / n;
  state.counters["wrong"] = static_cast<double>(wrong);
  if (wrong > 0) state.SkipWithError((std::to_string(wrong) + " wrong elements").c_str());
}

constexpr int64_t kMinBytes = kMiB;
constexpr int64_t kMaxBytes = 4 * kGiB;

BENCHMARK_CAPTURE(BM_Collective, all_gather, OpKind::all_gather)
    ->RangeMultiplier(2)
    ->Range(kMinBytes, kMaxBytes)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Collective, reduce_scatter, OpKind::reduce_scatter)
    ->RangeMultiplier(2)
    ->Range(kMinBytes, kMaxBytes)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Collective, all_reduce, OpKind::all_reduce)
    ->RangeMultiplier(2)
    ->Range(kMinBytes, kMaxBytes)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
