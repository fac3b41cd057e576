// The simulator on real schedules: deterministic output, OOM and fitting verdicts, what prefetch depth and the
// sharding strategy do to the memory peak, and the trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/report.h"
#include "schedule/build/builder.h"
#include "schedule/model/model.h"
#include "sim/engine.h"

namespace fsdpsim {
namespace {

Report simulate(const std::string& model, const std::vector<std::string>& sets, RunRecord* out = nullptr,
                Schedule* schedule_out = nullptr) {
  FsdpConfig config;
  for (const auto& s : sets) apply_override(config, s);
  const Topology topology = topology_preset("dgx-h100-ndr");
  Schedule schedule = build_schedule(model_preset(model), config, topology.gpus_per_node);
  RunRecord run = run_schedule(schedule, topology, SimOptions{});
  Report report = make_report(schedule, topology, run);
  if (out) *out = std::move(run);
  if (schedule_out) *schedule_out = std::move(schedule);
  return report;
}

TEST(Simulate, SameInputsGiveByteIdenticalJson) {
  const std::string a = report_json(simulate("mixtral-8x7b", {"ep=8", "global_batch_size=16"}));
  const std::string b = report_json(simulate("mixtral-8x7b", {"ep=8", "global_batch_size=16"}));
  EXPECT_EQ(a, b);
  const nlohmann::json j = nlohmann::json::parse(a);
  for (const char* field :
       {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "exposed_comm_s", "peak_allocated_bytes",
        "peak_reserved_bytes", "gpu_memory_bytes", "oom", "memory_breakdown"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
}

TEST(Simulate, Llama70bOnOneNodeDoesNotFit) {
  // ZeRO-3 over 8 GPUs keeps 16 B per sharded parameter: 16 × 70.55e9 / 8 = 141 GB > the H100's 85.5 GB.
  const Report r = simulate("llama3-70b", {});
  EXPECT_TRUE(r.oom);
  EXPECT_FALSE(r.oom_reason.empty());
}

TEST(Simulate, Llama8bOnOneNodeFits) {
  // 16 × 8.03e9 / 8 = 16.1 GB persistent + 2.1 GB of unsharded non-unit weights, and activations of 32 layers at
  // 4,096 tokens (about 0.57 GB each, 18 GB): well under 85.5 GB.
  const Report r = simulate("llama3-8b", {});
  EXPECT_FALSE(r.oom) << r.oom_reason;
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_GE(r.first_step_time_s, r.step_time_s);  // the first step also pays for new allocator segments
}

// Llama-3-8B's padded layer on 8 GPUs: 218,112,000 parameters, largest row 14,336 → quantum 8 × 14,336 = 114,688;
// ceil(218,112,000 / 114,688) = 1,902 → 218,136,576 elements, 436,273,152 B in BF16.
constexpr int64_t kLlama8bLayerBytes = 436'273'152;

TEST(Simulate, MegatronPrefetchDepthRaisesThePeakByOneGatheredUnitPerStep) {
  // Budget X = 2U, 4U, 6U (U = 218,136,576 elements) gives S_AG = U, 2U, 3U and prefetch depth 1, 2, 3. The peak is
  // in the output layer's backward, where the k layers its pre-forward prefetched are still resident: each extra
  // unit of depth adds one gathered layer.
  const int64_t u = kLlama8bLayerBytes / 2;
  const Report k1 = simulate("llama3-8b", {"suggested_communication_unit_size=" + std::to_string(2 * u)});
  const Report k2 = simulate("llama3-8b", {"suggested_communication_unit_size=" + std::to_string(4 * u)});
  const Report k3 = simulate("llama3-8b", {"suggested_communication_unit_size=" + std::to_string(6 * u)});
  EXPECT_EQ(k2.peak_allocated_bytes - k1.peak_allocated_bytes, kLlama8bLayerBytes);
  EXPECT_EQ(k3.peak_allocated_bytes - k2.peak_allocated_bytes, kLlama8bLayerBytes);
}

TEST(Simulate, Fsdp2BackwardPrefetchRaisesThePeakByOneFlatAllGatherOutput) {
  // Each extra group of backward prefetch keeps one more flat all-gather output (one layer, BF16) alive.
  const Report k1 = simulate("llama3-8b", {"implementation=fsdp2", "backward_prefetch=1"});
  const Report k2 = simulate("llama3-8b", {"implementation=fsdp2", "backward_prefetch=2"});
  EXPECT_EQ(k2.peak_allocated_bytes - k1.peak_allocated_bytes, kLlama8bLayerBytes);
}

TEST(Simulate, Zero1HoldsFullWeightsAndGradsWhereZero3HoldsShards) {
  // Llama-3-8B on 8 GPUs. ZeRO-1 keeps the full BF16 weights and the full BF16 grads; ZeRO-3 keeps their BF16
  // shards, 1/8 of the same padded buckets. The FP32 main weights (4 B) and the FP32 Adam moments (8 B) are sharded
  // alike in both, i.e. 2× and 4× the BF16 shard.
  const Report z3 = simulate("llama3-8b", {});
  const Report z1 = simulate("llama3-8b", {"data_parallel_sharding_strategy=optim"});
  const auto at = [](const Report& r, const char* c) { return r.memory_breakdown.at(c); };
  EXPECT_EQ(at(z1, "main_weight"), at(z3, "main_weight"));
  EXPECT_EQ(at(z1, "optimizer_state"), at(z3, "optimizer_state"));
  EXPECT_EQ(at(z1, "gathered_param"), 8 * at(z3, "param_shard"));  // full weights = 8 shards
  EXPECT_EQ(at(z1, "unsharded_grad"), 8 * at(z3, "grad_shard"));   // full grads = 8 shards
  EXPECT_EQ(at(z1, "param_shard"), 0);
  EXPECT_EQ(at(z3, "main_weight"), 2 * at(z3, "param_shard"));      // FP32 vs BF16 per shard element
  EXPECT_EQ(at(z3, "optimizer_state"), 4 * at(z3, "param_shard"));  // 8 B vs 2 B
}

TEST(Simulate, TraceHasATrackPerStreamAndMemoryCounters) {
  RunRecord run;
  Schedule schedule;
  simulate("llama3-8b", {}, &run, &schedule);
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(schedule, run));
  size_t spans = 0, counters = 0, thread_names = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    spans += ph == "X";
    counters += ph == "C";
    thread_names += ph == "M" && e["name"] == "thread_name";
  }
  EXPECT_EQ(thread_names, schedule.streams.size());
  EXPECT_EQ(spans, 2 * schedule.ops.size());  // every op of both simulated steps
  EXPECT_GT(counters, 0u);
}

}  // namespace
}  // namespace fsdpsim
