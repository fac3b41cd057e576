// The host backend (threads as ranks): ops per second running a Llama-3-8B-shaped schedule on 8 ranks, and the
// bandwidth of its shared-memory collectives on 8 ranks, reported with nccl-tests' algbw/busbw formulas.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "builders/builder.h"
#include "exec/host/host_runner.h"
#include "model/model.h"
#include "topologies/hardware.h"

#include "tests/support/llama_shaped.h"

namespace {

using namespace fsdpsim;

// Wall time of run_host on 8 ranks (ZeRO-3, 2 micro-batches, 2 steps); ops_per_s counts the ops every rank ran.
void BM_RunHostLlamaShaped(benchmark::State& state) {
  FsdpConfig config;
  apply_override(config, "global_batch_size=16");
  const Schedule schedule = build_schedule(parse_model_yaml(llama_shaped_yaml(), "<bench>"), config,
                                           topology_preset("dgx-h100-ndr").gpus_per_node);
  HostOptions options;
  options.bytes_scale = state.range(0);
  int64_t ops = 0;
  for (auto _ : state) {
    const ExecResult r = run_host(schedule, options);
    if (!r.problems.empty()) state.SkipWithError(r.problems.front().c_str());
    ops += static_cast<int64_t>(schedule.ops.size()) * options.steps * schedule.info.world_size;
  }
  state.SetLabel(std::to_string(schedule.ops.size()) + " ops × 8 ranks × 2 steps, 1 real byte per " +
                 std::to_string(options.bytes_scale) + " B");
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}

constexpr int32_t kRanks = 8;
constexpr int32_t kOpsPerStep = 8;

// A schedule of kOpsPerStep back-to-back collectives of one kind on one stream over 8 ranks, between persistent
// buffers, at real size (bytes_scale 1). `size_bytes` is nccl-tests' size column S.
Schedule collective_schedule(OpKind kind, int64_t size_bytes) {
  Schedule s;
  s.info.world_size = kRanks;
  s.groups = {Group{"dp", kRanks, 1}};
  s.streams = {Stream{"comm", 0}};
  // nccl-tests' S: AG the total output, RS the total input, AR the buffer (docs/architecture.md §6.2).
  const int64_t per_rank = kind == OpKind::all_reduce ? size_bytes : size_bytes / kRanks;
  const int64_t in = kind == OpKind::all_gather ? per_rank : size_bytes;
  const int64_t out = kind == OpKind::reduce_scatter ? per_rank : size_bytes;
  s.buffers = {Buffer{BufferId(0), "in", BufferCategory::comm_staging, in, true, false},
               Buffer{BufferId(1), "out", BufferCategory::comm_staging, out, true, false}};
  for (int32_t i = 0; i < kOpsPerStep; ++i) {
    Op op;
    op.id = OpId(i);
    op.name = std::string(to_string(kind)) + "." + std::to_string(i);
    op.kind = kind;
    op.group = GroupId(0);
    op.reduce_op = kind == OpKind::all_gather ? ReduceOp::none : ReduceOp::sum;
    op.send_bytes = in;
    op.recv_bytes = out;
    op.reads = {BufferId(0)};
    op.writes = {BufferId(1)};
    s.ops.push_back(op);
  }
  return s;
}

// busbw factor of nccl-tests' *GetBw (doc/PERFORMANCE.md; docs/architecture.md §6.2): (n−1)/n for all-gather and
// reduce-scatter, 2(n−1)/n for all-reduce.
double busbw_factor(OpKind kind) {
  const double n = kRanks;
  return kind == OpKind::all_reduce ? 2.0 * (n - 1) / n : (n - 1) / n;
}

void BM_HostCollective(benchmark::State& state) {
  const auto kind = static_cast<OpKind>(state.range(0));
  const int64_t size_bytes = state.range(1);
  const Schedule schedule = collective_schedule(kind, size_bytes);
  HostOptions options;
  options.bytes_scale = 1;
  double op_seconds = 0;
  int64_t ops = 0;
  for (auto _ : state) {
    const ExecResult r = run_host(schedule, options);
    if (!r.problems.empty()) state.SkipWithError(r.problems.front().c_str());
    // Rank 0's steady step: each op's own time, rendezvous included (the collective's latency as a rank sees it).
    TimeNs total_ns = 0;
    for (const OpTiming& t : r.run.steps.back().ops) total_ns += t.end_ns - t.start_ns;
    state.SetIterationTime(static_cast<double>(total_ns) / 1e9);
    op_seconds += static_cast<double>(total_ns) / 1e9;
    ops += kOpsPerStep;
  }
  const double t = op_seconds / static_cast<double>(ops);  // seconds per collective
  const double algbw = static_cast<double>(size_bytes) / t;
  state.SetLabel(std::string(to_string(kind)) + " on 8 ranks, S = " + std::to_string(size_bytes) + " B");
  state.counters["time_us"] = t * 1e6;
  state.counters["algbw_GBps"] = algbw / 1e9;
  state.counters["busbw_GBps"] = algbw * busbw_factor(kind) / 1e9;
}

void CollectiveSizes(benchmark::internal::Benchmark* b) {
  for (const OpKind kind : {OpKind::all_gather, OpKind::reduce_scatter, OpKind::all_reduce}) {
    for (int64_t size = int64_t{1} << 16; size <= (int64_t{1} << 24); size *= 16) {
      b->Args({static_cast<int64_t>(kind), size});
    }
  }
}

}  // namespace

BENCHMARK(BM_RunHostLlamaShaped)->Arg(16384)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostCollective)->Apply(CollectiveSizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
