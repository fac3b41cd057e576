// The executor's CI check: the same IR the simulator predicts, run by the host backend on threads as ranks. For every
// sharding strategy of Megatron-FSDP and FSDP2, with and without HSDP, and for MoE (its all-to-alls on the compute
// stream, or fused beside the layer as DistMoE runs them), a Llama-3-8B-shaped model
// scaled down to run in seconds: no data problem on any rank, and with the predicted memory order the measured
// steady-step peak allocated EQUALS the predicted one, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>

#include "builders/builder.h"
#include "exec/host/host_runner.h"
#include "model/model.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

#include "tests/support/shaped_schedule.h"

namespace fsdpsim {
namespace {

// The simulator's options with the memory order recorded: the host backend follows it.
SimOptions recording_memory_order() {
  SimOptions o;
  o.record_memory_order = true;
  return o;
}

// llama_shaped_yaml() with every layer MoE: 8 experts of the dense FFN width, 2 per token (Mixtral's routing).
constexpr const char* kMoeShaped = R"(name: moe-shaped
num_layers: 32
hidden_size: 256
ffn_hidden_size: 896
num_attention_heads: 8
num_kv_heads: 2
vocab_size: 2048
moe:
  num_experts: 8
  top_k: 2
  expert_ffn_hidden_size: 896
)";

// One real byte per 16 KiB of IR bytes keeps the data checks real (a layer's gathered weights are 1,705,984 B →
// 105 B → 27 words) and the run short.
constexpr int64_t kBytesScale = 16384;

struct Case {
  std::string name;
  std::vector<std::string> sets;
  bool moe = false;
  std::string topology = "dgx-h100-ndr";
};

Schedule build(const Case& c) {
  return build_shaped_schedule(c.sets, c.moe ? std::string(kMoeShaped) : llama_shaped_yaml());
}

// One node of 8 GPUs with global batch 16 is 2 micro-batches per rank; HSDP (2 optimizer instances) needs 2 nodes,
// 16 ranks, and global batch 32 for the same 2 micro-batches.
std::vector<Case> cases() {
  std::vector<Case> list;
  for (const char* strategy : {"no_shard", "optim", "optim_grads", "optim_grads_params"}) {
    const std::string s = std::string("data_parallel_sharding_strategy=") + strategy;
    list.push_back({std::string("megatron_") + strategy, {s, "global_batch_size=16"}});
    list.push_back({std::string("megatron_") + strategy + "_hsdp",
                    {s, "global_batch_size=32", "nodes=2", "num_distributed_optimizer_instances=2"}});
  }
  for (const char* reshard : {"true", "false"}) {
    const std::string r = std::string("reshard_after_forward=") + reshard;
    const std::string name = std::string("fsdp2_reshard_") + reshard;
    list.push_back({name, {"implementation=fsdp2", r, "global_batch_size=16"}});
    list.push_back(
        {name + "_hsdp",
         {"implementation=fsdp2", r, "global_batch_size=32", "nodes=2", "num_distributed_optimizer_instances=2"}});
  }
  list.push_back({"megatron_moe_ep8", {"ep=8", "global_batch_size=16"}, true});
  // Every rank runs the busiest expert-parallel rank's schedule: its all-to-alls carry 1.5× the bytes on all ranks.
  list.push_back({"megatron_moe_ep8_skewed", {"ep=8", "global_batch_size=16", "moe_routing_skew=1.5"}, true});
  // 12 GPUs of 8-GPU nodes: a partial last node, 12 ranks.
  list.push_back({"megatron_partial_last_node", {"gpus=12", "global_batch_size=24"}});
  list.push_back({"megatron_offload", {"cpu_offloading_activations=true", "global_batch_size=16"}});
  // DistMoE's fused exchange (ep_dispatch: fused): the all-to-alls beside each layer's compute on their own stream,
  // on Blackwell GPUs, which the simulator requires of it.
  for (const char* implementation : {"fsdp2", "megatron_fsdp"}) {
    list.push_back(
        {std::string(implementation) + "_moe_ep8_fused",
         {std::string("implementation=") + implementation, "ep=8", "ep_dispatch=fused", "global_batch_size=16"},
         true,
         "hgx-b200-ndr"});
  }
  return list;
}

class HostMatchesSimulator : public ::testing::TestWithParam<Case> {};

TEST_P(HostMatchesSimulator, SameIrSamePeakNoProblems) {
  const Schedule s = build(GetParam());
  ASSERT_EQ(s.info.micro_batches, 2);
  const RunRecord predicted = run_schedule(s, topology_preset(GetParam().topology), recording_memory_order());
  ASSERT_FALSE(predicted.oom.has_value());  // the equality is about a job that fits
  const StepRun& steady = predicted.steps.back();

  HostOptions ordered;
  ordered.bytes_scale = kBytesScale;
  ordered.memory_order = predicted_memory_order(s, predicted);
  const ExecResult measured = run_host(s, ordered);
  EXPECT_TRUE(measured.problems.empty()) << ::testing::PrintToString(measured.problems);
  // The expectation is the simulator's number itself: the host performs the same allocations and frees in the same
  // order through the same allocator model, so nothing but a broken executor (or order) can make them differ.
  EXPECT_EQ(measured.run.steps.back().peak_allocated.bytes, steady.peak_allocated.bytes) << GetParam().name;
  EXPECT_EQ(measured.run.steps.back().peak_allocated.op, steady.peak_allocated.op);
  EXPECT_EQ(measured.run.steps.back().peak_allocated.breakdown, steady.peak_allocated.breakdown);

  HostOptions free_running;
  free_running.bytes_scale = kBytesScale;
  const ExecResult unordered = run_host(s, free_running);
  EXPECT_TRUE(unordered.problems.empty()) << ::testing::PrintToString(unordered.problems);
}

INSTANTIATE_TEST_SUITE_P(Strategies, HostMatchesSimulator, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(HostLlama, MissingAllGatherDependencyOfAForwardIsCaught) {
  Schedule s = build({"zero3", {"global_batch_size=16"}});
  const auto fwd = std::find_if(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.name == "fwd.layer.3.mb0"; });
  ASSERT_NE(fwd, s.ops.end());
  // Its all-gather, and the gathered-parameter buffer the all-gather writes and the forward reads.
  const auto ag =
      std::find_if(fwd->deps.begin(), fwd->deps.end(), [&](OpId d) { return s.ops[d].kind == OpKind::all_gather; });
  ASSERT_NE(ag, fwd->deps.end());
  const BufferId gathered = s.ops[*ag].writes.at(0);
  fwd->deps.erase(ag);  // validate() would reject this schedule; the executor must catch it by itself
  HostOptions o;
  o.bytes_scale = kBytesScale;
  o.steps = 1;
  o.collective_delay_ns = 10'000'000;  // each all-gather writes 10 ms late: the forward reads first
  const ExecResult r = run_host(s, o);
  const std::string op = "op " + to_string(fwd->id) + " 'fwd.layer.3.mb0' read buffer " + to_string(gathered) + " '" +
                         s.buffers[gathered].name + "'";
  const bool found = std::any_of(r.problems.begin(), r.problems.end(), [&](const std::string& p) {
    return p.find(op) != std::string::npos && p.find("a missing dependency") != std::string::npos;
  });
  EXPECT_TRUE(found) << op << "\n" << ::testing::PrintToString(r.problems);
}

TEST(HostLlama, EmulatedRankOfA1024GpuJobMatchesThePrediction) {
  // 128 nodes × 8 GPUs; rank 0 alone stands in for every rank of every collective.
  const Schedule s = build({"emulated", {"nodes=128", "global_batch_size=2048"}});
  ASSERT_EQ(s.info.world_size, 1024);
  const RunRecord predicted = run_schedule(s, topology_preset("dgx-h100-ndr"), recording_memory_order());
  HostOptions o;
  o.bytes_scale = kBytesScale;
  o.emulate = true;
  o.memory_order = predicted_memory_order(s, predicted);
  const ExecResult r = run_host(s, o);
  EXPECT_TRUE(r.problems.empty()) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.run.steps.back().peak_allocated.bytes, predicted.steps.back().peak_allocated.bytes);
}

}  // namespace
}  // namespace fsdpsim
