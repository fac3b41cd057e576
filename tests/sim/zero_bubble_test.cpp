// The V-shaped zero-bubble pipelines (zbv, dualpipev) built by the FSDP2 builder and simulated: the V's placement
// (both ends on rank 0, nothing sent between the two middle stages that share the last rank), the backward split into
// its input and weight halves with the FLOPs of the whole, what the weight half keeps, and the step derived by hand
// with every decoder-layer action taking the same time T.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "builders/builder.h"
#include "common/error.h"
#include "report/report.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "sim/op_costs.h"
#include "tests/schedule/tiny_llama.h"
#include "tests/sim/decoder_layers_only.h"
#include "tests/support/error_of.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

constexpr TimeNs kT = 1'000'000;  // a forward, an input half or a weight half of one decoder layer

Schedule v_pipeline(int32_t layers, int32_t pp, int32_t micro_batches, const std::string& schedule,
                    const std::string& implementation = "fsdp2") {
  FsdpConfig c;
  c.nodes = 1;
  apply_override(c, "implementation=" + implementation);
  c.pp = pp;
  apply_override(c, "pipeline_schedule=" + schedule);
  c.global_batch_size = int64_t{micro_batches} * (8 / pp);  // dp = 8 / pp on one 8-GPU node
  Schedule s = build_schedule(testing::tiny_llama(layers), c, 8);
  validate_or_throw(s, "the pipeline schedule");
  return s;
}

bool is_wgrad(const Gemm& g) {
  return g.name.ends_with(".wgrad");
}

// Only the decoder layers' computes take time: a forward T, an input half T, a weight half T, a whole backward 2T.
RunRecord run_layers_only(const Schedule& s) {
  return testing::run_decoder_layers_only(s, [](const Op& op) {
    const auto wgrads = std::count_if(op.gemms.begin(), op.gemms.end(), is_wgrad);
    const bool whole_backward = wgrads > 0 && wgrads < static_cast<std::ptrdiff_t>(op.gemms.size());
    return whole_backward ? 2 * kT : kT;
  });
}

TimeNs step_ns(const RunRecord& r) {
  return r.steps.back().end_ns - r.steps.back().start_ns;
}

double gemm_flops(const Schedule& s) {
  double flops = 0;
  for (const Op& op : s.ops) {
    for (const Gemm& g : op.gemms) flops += 2.0 * g.m * g.n * g.k * g.batch;
  }
  return flops;
}

TEST(ZeroBubble, ZbvStepDerivedByHand) {
  // pp 2, 4 layers (one per virtual stage: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2), 4 micro-batches.
  // Walking both ranks' orders (zero_bubble_order_test.cpp) with F = I = W = T: rank 1 waits 1T for its first
  // forward and its last W ends at 25T; each rank works 24T. 1F1B on the same job: (M + pp − 1)(F + B) per stage of
  // two layers = 5 × (2T + 4T) = 30T.
  EXPECT_EQ(step_ns(run_layers_only(v_pipeline(4, 2, 4, "zbv"))), 25 * kT);
  EXPECT_EQ(step_ns(run_layers_only(v_pipeline(4, 2, 4, "1f1b"))), 30 * kT);
}

TEST(ZeroBubble, DualPipeVStepDerivedByHand) {
  // The same job under DualPipeV (its overlapped F/B pairs run one after the other on the compute stream): walking
  // the orders with B = 2T also ends at 25T.
  EXPECT_EQ(step_ns(run_layers_only(v_pipeline(4, 2, 4, "dualpipev"))), 25 * kT);
}

TEST(ZeroBubble, TheVMovesTheBubbleOffRankZero) {
  // The same walk through the orders: under ZBV rank 0 never waits for the other rank (its inputs are always there
  // when it gets to them) and rank 1 waits 1T for its first input. Under 1F1B (stages of two layers: F = 2T,
  // B = 4T) stage 0 waits (pp − 1)(F + B) = 6T for gradients and stage 1 2T for its first input.
  const Topology t = topology_preset("dgx-h100-ndr");
  const auto bubbles = [&](const std::string& schedule) {
    const Schedule s = v_pipeline(4, 2, 4, schedule);
    const Report r = make_report(s, t, run_layers_only(s));
    EXPECT_EQ(r.pipeline_stage_bubble_s.at(0), r.pipeline_bubble_s) << schedule;
    return r.pipeline_stage_bubble_s;
  };
  const double T = static_cast<double>(kT) / 1e9;
  EXPECT_EQ(bubbles("zbv"), (std::vector<double>{0.0, T}));
  EXPECT_EQ(bubbles("1f1b"), (std::vector<double>{6 * T, 2 * T}));
}

TEST(ZeroBubble, BothEndsRunOnRankZeroAndTheMiddleStagesSendNothing) {
  const Schedule s = v_pipeline(4, 2, 4, "zbv");
  const auto last_unit = static_cast<int32_t>(s.units.size()) - 1;
  // The stages whose forwards compute the embedding and the output (other stages hold them empty, as no unit).
  std::set<int32_t> embedding_stages, output_stages;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::compute || op.phase != Phase::fwd) continue;
    if (op.unit == 0) embedding_stages.insert(s.stage_of(op));
    if (op.unit == last_unit) output_stages.insert(s.stage_of(op));
  }
  EXPECT_EQ(embedding_stages, std::set<int32_t>{0});
  EXPECT_EQ(output_stages, std::set<int32_t>{0});
  // Virtual stages 0→1 (rank 0 to 1) and 2→3 (rank 1 to 0) cross ranks, 1→2 stays on rank 1: 2 boundaries × 4
  // micro-batches forward, and as many input-gradient sends back.
  int32_t sends = 0;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::send) continue;
    ++sends;
    EXPECT_NE(s.stage_of(op), s.stage_of(s.ops[op.peer])) << op.name;
    EXPECT_EQ(op.name.find("vs1to2"), std::string::npos);
    EXPECT_EQ(op.name.find("vs2to1"), std::string::npos);
  }
  EXPECT_EQ(sends, 2 * 2 * 4);
}

TEST(ZeroBubble, TheSplitBackwardKeepsTheWholeBackwardsGemms) {
  // The same layers in the same virtual stages as interleaved 1F1B with two chunks per rank: the same GEMM FLOPs, and
  // every weight-gradient GEMM in a weight half.
  const Schedule zbv = v_pipeline(8, 2, 4, "zbv");
  const Schedule interleaved = v_pipeline(8, 2, 4, "interleaved_1f1b");
  EXPECT_DOUBLE_EQ(gemm_flops(zbv), gemm_flops(interleaved));
  int32_t wgrads = 0, wgrads_in_weight_halves = 0;
  for (const Op& op : zbv.ops) {
    for (const Gemm& g : op.gemms) {
      if (!is_wgrad(g)) continue;
      ++wgrads;
      if (op.name.starts_with("bwd_weight.")) ++wgrads_in_weight_halves;
    }
  }
  EXPECT_GT(wgrads, 0);
  EXPECT_EQ(wgrads_in_weight_halves, wgrads);
}

TEST(ZeroBubble, TheWeightHalfKeepsEachLinearsInputAndOutputGradient) {
  // tiny's layer, 4096 tokens: qkv 256 → 768, proj 256 → 256, fc1 256 → 2048, fc2 1024 → 256; X and dY of each:
  // 4096 × ((256 + 768) + (256 + 256) + (256 + 2048) + (1024 + 256)) = 4096 × 5120 elements × 2 B.
  const Schedule s = v_pipeline(4, 2, 4, "zbv");
  int32_t layer_buffers = 0;
  for (const Buffer& b : s.buffers) {
    if (!b.name.starts_with("act.wgrad_inputs.layer")) continue;
    ++layer_buffers;
    EXPECT_EQ(b.size_bytes, int64_t{4096} * 5120 * 2) << b.name;
    EXPECT_EQ(b.category, BufferCategory::activation);
  }
  EXPECT_EQ(layer_buffers, 4 * 4);  // per layer and micro-batch
  // Allocated by the input half, freed by the weight half of the same layer and micro-batch.
  for (const Op& op : s.ops) {
    for (const BufferId b : op.allocs) {
      if (s.buffers[b].name.starts_with("act.wgrad_inputs.")) {
        EXPECT_TRUE(op.name.starts_with("bwd_input.")) << op.name;
      }
    }
    for (const BufferId b : op.frees) {
      if (s.buffers[b].name.starts_with("act.wgrad_inputs.")) {
        EXPECT_TRUE(op.name.starts_with("bwd_weight.")) << op.name;
      }
    }
  }
}

TEST(ZeroBubble, EverySizeSimulatesToTheEnd) {
  // Each (pp, micro-batches) builds a valid schedule whose sends all meet their receives: the step finishes.
  const Topology t = topology_preset("dgx-h100-ndr");
  SimOptions options;
  options.steps = 1;
  options.record_timeline = false;
  for (const char* schedule : {"zbv", "dualpipev"}) {
    for (const int32_t pp : {2, 4}) {
      for (int32_t mb = 1; mb <= 3 * pp; ++mb) {
        if (std::string(schedule) == "dualpipev" && mb < 2 * pp) continue;
        const Schedule s = v_pipeline(2 * pp, pp, mb, schedule);
        EXPECT_GT(step_ns(run_schedule(s, t, options)), 0) << schedule << " pp " << pp << " M " << mb;
      }
    }
  }
}

TEST(ZeroBubble, MegatronFsdpHasNoZeroBubbleSchedule) {
  EXPECT_HAS(error_of([] { v_pipeline(4, 2, 4, "zbv", "megatron_fsdp"); }),
             "zbv is torch.distributed.pipelining's (torchtitan); Megatron-LM has no such schedule");
  EXPECT_HAS(error_of([] { v_pipeline(8, 2, 3, "dualpipev"); }),
             "dualpipev needs at least as many micro-batches as stages (4), the step has 3");
}

}  // namespace
}  // namespace fsdpsim
