// Transformer Engine's TP communication overlap (tp_comm_overlap, Megatron-LM's --tp-comm-overlap): each decoder
// layer's TP collectives, forward and backward, leave the compute stream for a side stream beside the layer's GEMMs,
// on the streams and with the SMs of TE's default Userbuffers methods, and the step gets faster by at most what they
// took on the compute stream.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "builders/builder.h"
#include "frontends/megatron_args.h"
#include "model/model.h"
#include "report/report.h"
#include "sim/engine.h"
#include "sim/op_costs.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

struct SimulatedRun {
  Schedule schedule;
  Report report;
};

FsdpConfig config_of(bool overlap) {
  FsdpConfig config;
  for (const char* set : {"tp=4", "nodes=1", "global_batch_size=4"}) apply_override(config, set);
  config.tp_comm_overlap = overlap;
  return config;
}

SimulatedRun simulate(bool overlap) {
  const Topology topology = topology_preset("dgx-h100-ndr");
  SimulatedRun r;
  r.schedule = build_schedule(model_preset("llama3-8b"), config_of(overlap), topology.gpus_per_node);
  const RunRecord record = run_schedule(r.schedule, topology, SimOptions{});
  r.report = make_report(r.schedule, topology, record);
  return r;
}

bool on_tp_group(const Schedule& s, const Op& op) {
  return is_collective(op.kind) && s.groups[op.group].name == "tp";
}

// Layer 3, micro-batch 0: where each of its TP collectives runs, and how many bytes each rank receives there.
std::map<std::string, std::pair<std::string, int64_t>> layer_collectives(const Schedule& s) {
  std::map<std::string, std::pair<std::string, int64_t>> out;
  for (const Op& op : s.ops) {
    if (!on_tp_group(s, op) || op.micro_batch != 0 || op.name.find(".layer.3.") == std::string::npos) continue;
    out[op.name] = {s.streams[op.stream].name, op.recv_bytes};
  }
  return out;
}

TEST(TpCommOverlap, EachLayerCollectiveRunsWhereTransformerEnginesDefaultMethodRunsIt) {
  const Schedule plain = build_schedule(model_preset("llama3-8b"), config_of(false), 8);
  const Schedule overlapped = build_schedule(model_preset("llama3-8b"), config_of(true), 8);
  const auto before = layer_collectives(plain);
  const auto after = layer_collectives(overlapped);
  ASSERT_EQ(before.at("tp_ag_attn.layer.3.mb0").first, "compute");
  // Forward all-gathers (qkv_fprop, fc1_fprop) and the backward's gradient gathers (proj_dgrad, fc2_dgrad): ring
  // exchange over copy engines, whole.
  for (const char* name : {"tp_ag_attn", "tp_ag_mlp", "tp_ag_attn_grad", "tp_ag_mlp_grad"}) {
    const std::string plain_name = std::string(name) + ".layer.3.mb0";
    const std::string side_name = std::string(name) + ".async.layer.3.mb0";
    ASSERT_TRUE(after.contains(side_name)) << side_name;
    EXPECT_EQ(after.at(side_name).first, "tp_async");
    EXPECT_EQ(after.at(side_name).second, before.at(plain_name).second);
    EXPECT_FALSE(after.contains(plain_name));
  }
  // The backward's input re-gathers (qkv_dgrad, fc1_dgrad) and data-gradient reduce-scatters (qkv_wgrad, fc1_wgrad):
  // the bulk method's SM kernels, whole.
  for (const char* name : {"tp_ag_attn_input", "tp_ag_mlp_input", "tp_rs_attn_grad", "tp_rs_mlp_grad"}) {
    const std::string side_name = std::string(name) + ".async.layer.3.mb0";
    ASSERT_TRUE(after.contains(side_name)) << side_name;
    EXPECT_EQ(after.at(side_name).first, "tp_overlap");
    EXPECT_EQ(after.at(side_name).second, before.at(std::string(name) + ".layer.3.mb0").second);
  }
  // Forward reduce-scatters (proj_fprop, fc2_fprop): the pipeline method's 4 splits, the last on the compute stream.
  for (const char* name : {"tp_rs_attn", "tp_rs_mlp"}) {
    const int64_t whole = before.at(std::string(name) + ".layer.3.mb0").second;
    const auto& last = after.at(std::string(name) + ".layer.3.mb0");
    const auto& rest = after.at(std::string(name) + ".async.layer.3.mb0");
    EXPECT_EQ(last.first, "compute");
    EXPECT_EQ(last.second, whole / 4);
    EXPECT_EQ(rest.first, "tp_overlap");
    EXPECT_EQ(rest.second, whole - whole / 4);
  }
  // The embedding and the output layer are Megatron's own layers: their TP collectives stay on the compute stream.
  for (const Op& op : overlapped.ops) {
    if (!on_tp_group(overlapped, op) || op.unit < 0) continue;
    const bool layer = op.unit >= 1 && op.unit <= static_cast<int32_t>(overlapped.units.size()) - 2;
    if (!layer) {
      EXPECT_EQ(overlapped.streams[op.stream].name, "compute") << op.name;
    }
  }
}

// Megatron-Bridge's tuned FP8 configurations (comm_overlap.py: proj_fprop and fc2_fprop RingExchangeOverlapCfg) send
// the forward reduce-scatters by ring exchange: tp chunks over copy engines as the GEMM makes them, the last exposed.
TEST(TpCommOverlap, RingExchangeReduceScattersLeaveOneChunkOfTpOnTheComputeStream) {
  FsdpConfig ring = config_of(true);
  ring.tp_comm_overlap_ring_exchange_rs = true;
  const auto before = layer_collectives(build_schedule(model_preset("llama3-8b"), config_of(false), 8));
  const Schedule s = build_schedule(model_preset("llama3-8b"), ring, 8);
  const auto after = layer_collectives(s);
  for (const char* name : {"tp_rs_attn", "tp_rs_mlp"}) {
    const int64_t whole = before.at(std::string(name) + ".layer.3.mb0").second;
    const auto& last = after.at(std::string(name) + ".layer.3.mb0");
    const auto& rest = after.at(std::string(name) + ".async.layer.3.mb0");
    EXPECT_EQ(last.first, "compute");
    EXPECT_EQ(last.second, whole / 4);  // tp = 4 chunks
    EXPECT_EQ(rest.first, "tp_async");  // copy engines: no SMs
    EXPECT_EQ(rest.second, whole - whole / 4);
  }
  // The backward's reduce-scatters keep the bulk method.
  EXPECT_EQ(after.at("tp_rs_attn_grad.async.layer.3.mb0").first, "tp_overlap");
  FsdpConfig alone;
  apply_override(alone, "tp=4");
  alone.tp_comm_overlap_ring_exchange_rs = true;
  EXPECT_HAS(error_of([&] { (void)build_schedule(model_preset("llama3-8b"), alone, 8); }), "set tp_comm_overlap=true");
}

TEST(TpCommOverlap, RingExchangesTakeNoSmsAndTheOtherMethodsSixteen) {
  const SimulatedRun run = simulate(true);
  const OpCostTable costs = compute_op_costs(run.schedule, topology_preset("dgx-h100-ndr"));
  int copy_engine = 0, sm_kernels = 0;
  for (const Op& op : run.schedule.ops) {
    if (!is_collective(op.kind)) continue;
    const std::string& stream = run.schedule.streams[op.stream].name;
    if (stream == "tp_async") {
      ++copy_engine;
      EXPECT_EQ(costs[op.id].sms, 0) << op.name;
    } else if (stream == "tp_overlap") {
      ++sm_kernels;
      EXPECT_EQ(costs[op.id].sms, 16) << op.name;  // TE's num_sm for pipeline and bulk
    }
  }
  EXPECT_GT(copy_engine, 0);
  EXPECT_GT(sm_kernels, 0);
}

TEST(TpCommOverlap, HidesTheLayersTpCollectivesForwardAndBackward) {
  const SimulatedRun plain = simulate(false);
  const SimulatedRun overlapped = simulate(true);
  // What the layers' TP collectives took on the compute stream without the overlap: the most it can save.
  const double saved = plain.report.step_time_s - overlapped.report.step_time_s;
  EXPECT_GT(saved, 0);
  EXPECT_LT(overlapped.report.exposed_comm_by_phase_s.at("bwd"), plain.report.exposed_comm_by_phase_s.at("bwd") / 2);
  EXPECT_LT(overlapped.report.exposed_comm_by_phase_s.at("fwd"), plain.report.exposed_comm_by_phase_s.at("fwd") / 2);
  EXPECT_LE(saved, plain.report.exposed_comm_s);
}

TEST(TpCommOverlap, UserbuffersAreAllocatedOnce) {
  // Twelve buffers of sequence × micro-batch × hidden: 12 × 4096 × 4096 × 2 B (bf16) = 384 MiB.
  const Schedule s = build_schedule(model_preset("llama3-8b"), config_of(true), 8);
  int64_t bytes = -1;
  for (const Buffer& b : s.buffers) {
    if (b.name == "userbuffers") bytes = b.persistent ? b.size_bytes : -2;
  }
  EXPECT_EQ(bytes, int64_t{12} * 4096 * 4096 * 2);
  for (const Buffer& b : build_schedule(model_preset("llama3-8b"), config_of(false), 8).buffers) {
    EXPECT_NE(b.name, "userbuffers");
  }
}

TEST(TpCommOverlap, IsMegatronsFlagAndNotFsdp2s) {
  FsdpConfig c;
  std::optional<ModelSpec> model;
  (void)apply_megatron_args("--tensor-model-parallel-size 4 --sequence-parallel --tp-comm-overlap", c, model);
  EXPECT_TRUE(c.tp_comm_overlap);
  FsdpConfig fsdp2 = config_of(true);
  apply_override(fsdp2, "implementation=fsdp2");
  EXPECT_NE(error_of([&] { (void)build_schedule(model_preset("llama3-8b"), fsdp2, 8); }).find("use async_tp"),
            std::string::npos);
  FsdpConfig both = config_of(true);
  apply_override(both, "async_tp=true");
  EXPECT_NE(error_of([&] { (void)build_schedule(model_preset("llama3-8b"), both, 8); }).find("set one of them"),
            std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
