// The simulator on real schedules: deterministic output, OOM and fitting verdicts, what prefetch depth and the
// sharding strategy do to the memory peak, and the trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "builders/builder.h"
#include "model/model.h"
#include "report/report.h"
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

TEST(Simulate, ThePeakBreakdownAddsUpToTheFigureOfTheVerdict) {
  // The categories at the allocated peak plus the overheads, plus what the allocator reserved beyond that peak, are
  // the needed memory the verdict states: nothing is left out or counted twice.
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {}, {"implementation=fsdp2", "seq_length=8192"}, {"recompute_granularity=full", "nodes=2"}}) {
    const Report r = simulate("llama3-8b", sets);
    int64_t sum = 0;
    for (const auto& [category, bytes] : r.memory_breakdown) sum += bytes;
    EXPECT_EQ(sum, r.peak_allocated_bytes + r.overheads.total());
    EXPECT_EQ(sum + r.fragmentation_bytes, r.memory.needed_bytes);
    EXPECT_EQ(r.memory.needed_bytes, r.peak_reserved_bytes + r.overheads.total());
    EXPECT_EQ(r.memory.band.runs, published_error_bands().memory.runs);  // a prediction carries the band
  }
}

TEST(Simulate, MegatronReferenceJobPeakAsTheCodeImpliesIt) {
  // Llama-3-70B on 64 H100s (8 DGX nodes), optim_grads_params, TP 1, sequence 8192, GBS 128 (2 micro-batches), full
  // recompute of every layer (the builder audit's reference job). The peak is layer.78's backward of micro-batch 0:
  Report r = [] {
    FsdpConfig config;
    for (const char* s : {"nodes=8", "seq_length=8192", "global_batch_size=128", "recompute_granularity=full"}) {
      apply_override(config, s);
    }
    const Topology topology = topology_preset("dgx-h100-ndr");
    const Schedule schedule = build_schedule(model_preset("llama3-70b"), config, topology.gpus_per_node);
    return make_report(schedule, topology, run_schedule(schedule, topology, SimOptions{}));
  }();
  EXPECT_EQ(r.peak_op, "bwd.layer.78.mb0");
  // Buckets padded to 64 × chunk factor (the largest row): a layer's 855,670,784 parameters to a multiple of
  // 64 × 28,672 → 856,948,736 (1,713,897,472 B in BF16); [final norm, output] 1,050,681,344 to a multiple of
  // 64 × 8,192 → 1,051,197,440 (2,102,394,880 B); [embedding] 1,050,673,152 stays (2,101,346,304 B).
  constexpr int64_t kLayer = 1'713'897'472, kOutput = 2'102'394'880, kEmbedding = 2'101'346'304;
  // Megatron-LM's bucket size max(40M, 64M) splits the non-unit parameters into [embedding] and [final norm, output];
  // [final norm, output] is reduce-scattered after its backward and stays in the queue (capacity 2 × 855,670,784
  // unpadded) through layers 79 and 78: while layer.78 fills its bucket the queue holds output and layer.79.
  EXPECT_EQ(r.memory_breakdown.at("unsharded_grad"), kOutput + 2 * kLayer);
  // autograd's param.grad before the bucket copy: the largest weight, fc1 (2 × 28,672) × 8,192 in BF16.
  EXPECT_EQ(r.memory_breakdown.at("weight_grad"), 57'344LL * 8'192 * 2);
  // Both non-unit buckets stay gathered; layer.78 (in use) and layer.77 (prefetched, S_AG = 855,670,784 stops after
  // one unit).
  EXPECT_EQ(r.memory_breakdown.at("gathered_param"), kEmbedding + kOutput + 2 * kLayer);
  // 2 + 2 + 4 + 8 B (BF16 weights and grads, FP32 main weights, Adam) per shard element:
  // (2,101,870,592 + 80 × 856,948,736) / 64 = 1,104,027,648.
  EXPECT_EQ(r.memory_breakdown.at("param_shard") + r.memory_breakdown.at("grad_shard") +
                r.memory_breakdown.at("main_weight") + r.memory_breakdown.at("optimizer_state"),
            16 * 1'104'027'648LL);
  // With the activations (79 checkpointed layer inputs, layer.78's recomputed activations) and the backward
  // workspace: 43.0 GiB, where the unchanged builder predicted 45.1 GiB (one more queued layer bucket, the output
  // gradient held to the end, no param.grad).
  EXPECT_NEAR(static_cast<double>(r.peak_allocated_bytes) / (1LL << 30), 43.0, 0.05);
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
