// Pipeline parallelism (issue 14): the schedule holds one rank per stage joined by sends and receives; the
// simulator runs the stages as separate GPUs. With every op free but the decoder layers' forward (f ns) and
// backward (b ns) computes, the step and the bubble follow from the schedule alone, and the first stage's
// activations from the number of micro-batches it holds in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "builders/builder.h"
#include "memory/caching_allocator.h"
#include "report/report.h"
#include "schedule/ir_yaml.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "sim/op_costs.h"
#include "tests/schedule/tiny_llama.h"
#include "tests/sim/decoder_layers_only.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

constexpr TimeNs kForwardNs = 1'000'000;   // per decoder layer and micro-batch
constexpr TimeNs kBackwardNs = 2'000'000;  // per decoder layer and micro-batch

Schedule pipeline(int32_t layers, int32_t pp, int32_t chunks, int32_t micro_batches, const std::string& kind) {
  FsdpConfig c;
  c.nodes = 1;
  c.pp = pp;
  c.virtual_pipeline_stages = chunks;
  c.origin["virtual_pipeline_stages"] = SourceLocation{"test", 0, 0};
  apply_override(c, "pipeline_schedule=" + kind);
  c.global_batch_size = int64_t{micro_batches} * (8 / pp);  // dp = 8 / pp on one 8-GPU node
  Schedule s = build_schedule(testing::tiny_llama(layers), c, 8);
  validate_or_throw(s, "the pipeline schedule");
  return s;
}

// Only decoder-layer forward and backward computes take time.
RunRecord run_layers_only(const Schedule& s) {
  return testing::run_decoder_layers_only(
      s, [](const Op& op) { return op.phase == Phase::fwd ? kForwardNs : kBackwardNs; });
}

double step_ns(const RunRecord& r) {
  return static_cast<double>(r.steps.back().end_ns - r.steps.back().start_ns);
}

TEST(Pipeline, EverySendHasItsReceiveOnTheNextStage) {
  const Schedule s = pipeline(8, 4, 1, 8, "1f1b");
  int sends = 0;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::send) continue;
    ++sends;
    const Op& recv = s.ops[op.peer];
    EXPECT_EQ(recv.kind, OpKind::recv);
    EXPECT_EQ(recv.peer, op.id);
    EXPECT_EQ(std::abs(s.stage_of(recv) - s.stage_of(op)), 1) << op.name;
    // A micro-batch of tiny's hidden states: 4096 tokens × 256 × 2 B.
    EXPECT_EQ(op.send_bytes, int64_t{4096} * 256 * 2);
  }
  // Forward: 3 stage boundaries × 8 micro-batches; backward the same.
  EXPECT_EQ(sends, 2 * 3 * 8);
}

// A send crosses the network only where its two GPUs sit in different NVLink domains: 16 stages over 256 GPUs on
// 72-GPU racks (stage k of rank 0's pipeline at rank 16k) cross a rack between stages 4 and 5 (ranks 64, 80),
// 8 and 9 (128, 144) and 13 and 14 (208, 224), and stay on NVLink at the other twelve hops.
TEST(Pipeline, ASendTakesTheNetworkOnlyWhereItsTwoStagesSitInDifferentRacks) {
  const Topology topology = topology_preset("gb200-nvl72");
  FsdpConfig c;
  for (const char* set : {"gpus=256", "tp=4", "pp=16", "pipeline_schedule=1f1b", "global_batch_size=64"}) {
    apply_override(c, set);
  }
  const Schedule s = build_schedule(testing::tiny_llama(32), c, topology.gpus_per_node);
  const OpCostTable costs = compute_op_costs(s, topology);
  std::set<std::pair<int32_t, int32_t>> network_hops, nvlink_hops;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::send) continue;
    const int32_t from = s.stage_of(op), to = s.stage_of(s.ops[op.peer]);
    const auto hop = std::minmax(from, to);
    bool network = false;
    for (const LinkLoad& load : costs[op.id].loads.view()) {
      network = network || load.first % kLinkCount == static_cast<int32_t>(LinkId::network);
    }
    (network ? network_hops : nvlink_hops).insert(hop);
  }
  EXPECT_EQ(network_hops, (std::set<std::pair<int32_t, int32_t>>{{4, 5}, {8, 9}, {13, 14}}));
  EXPECT_EQ(nvlink_hops.size(), 12u);
}

TEST(Pipeline, SendsAndReceivesAreListedWhereTheFrameworksPostThem) {
  // Program order: a receive just before the first op that reads it (only other receives between), a send just after
  // the op it waits on (only other sends between), under Megatron's 1F1B, interleaved 1F1B and GPipe.
  for (const auto& [pp, chunks, kind] : std::vector<std::tuple<int32_t, int32_t, std::string>>{
           {4, 1, "1f1b"}, {2, 2, "interleaved_1f1b"}, {4, 1, "gpipe"}}) {
    const Schedule s = pipeline(8, pp, chunks, 2 * pp, kind);
    int32_t receives = 0, sends = 0;
    for (const Op& op : s.ops) {
      if (op.kind == OpKind::recv) {
        const auto reader = std::find_if(s.ops.begin(), s.ops.end(), [&](const Op& o) {
          return !is_p2p(o.kind) && std::find(o.deps.begin(), o.deps.end(), op.id) != o.deps.end();
        });
        if (reader == s.ops.end()) continue;
        ASSERT_GT(reader->id, op.id) << kind << ": " << op.name;
        for (int32_t i = op.id.value() + 1; i < reader->id.value(); ++i) {
          EXPECT_EQ(s.ops[OpId(i)].kind, OpKind::recv)
              << kind << ": " << s.ops[OpId(i)].name << " between " << op.name << " and " << reader->name;
        }
        ++receives;
      }
      if (op.kind == OpKind::send) {
        OpId anchor;
        for (const OpId d : op.deps) {
          if (!is_p2p(s.ops[d].kind) && (!anchor.valid() || d > anchor)) anchor = d;
        }
        ASSERT_TRUE(anchor.valid()) << op.name;
        for (int32_t i = anchor.value() + 1; i < op.id.value(); ++i) {
          EXPECT_EQ(s.ops[OpId(i)].kind, OpKind::send)
              << kind << ": " << s.ops[OpId(i)].name << " between " << s.ops[anchor].name << " and " << op.name;
        }
        ++sends;
      }
    }
    EXPECT_GT(receives, 0) << kind;
    EXPECT_EQ(sends, receives) << kind;
  }
}

TEST(Pipeline, StagesAndPeersSurviveTheYamlRoundTrip) {
  const Schedule s = pipeline(8, 4, 2, 8, "interleaved_1f1b");
  EXPECT_EQ(s.info.pipeline_stages, 4);
  EXPECT_EQ(s.info.virtual_stages, 2);
  EXPECT_EQ(s.info.pipeline_schedule, "interleaved_1f1b");
  EXPECT_EQ(s.streams[s.compute_stream(3)].name, "stage3.compute");
  EXPECT_EQ(schedule_from_yaml(schedule_to_yaml(s), "pp.yaml"), s);
}

TEST(Pipeline, OneFOneBStepAndBubbleAsDerivedByHand) {
  // pp 4, 8 layers (2 per stage), 8 micro-batches: a stage's forward is F = 2f, its backward B = 2b. 1F1B runs
  // M (F + B) of work per stage plus the fill and drain, (pp − 1)(F + B): 11 × 6 ms = 66 ms; stage 0 idles
  // (pp − 1)(F + B) = 18 ms of it, a bubble fraction of (pp − 1)/(M + pp − 1) = 3/11.
  const Schedule s = pipeline(8, 4, 1, 8, "1f1b");
  const RunRecord r = run_layers_only(s);
  const double stage_work = 2.0 * (kForwardNs + kBackwardNs);
  EXPECT_DOUBLE_EQ(step_ns(r), (8 + 3) * stage_work);
  const Report report = make_report(s, topology_preset("dgx-h100-ndr"), r);
  EXPECT_NEAR(report.pipeline_bubble_s / report.step_time_s, 3.0 / 11.0, 1e-9);
}

TEST(Pipeline, GPipeTakesTheSameTimeAsOneFOneBButHoldsEveryMicroBatch) {
  const RunRecord gpipe = run_layers_only(pipeline(8, 4, 1, 8, "gpipe"));
  const RunRecord one_f_one_b = run_layers_only(pipeline(8, 4, 1, 8, "1f1b"));
  EXPECT_DOUBLE_EQ(step_ns(gpipe), step_ns(one_f_one_b));
  const auto stage0 = [](const RunRecord& r) { return r.steps.back().stage_peaks.at(0).allocated.bytes; };
  EXPECT_GT(stage0(gpipe), stage0(one_f_one_b));
}

TEST(Pipeline, OverlappedSendsDoNotHoldUpTheNextCompute) {
  // A compute op that depends on a send is a blocking exchange: Megatron-LM's 1F1B has them, its interleaved schedule
  // (overlap_p2p_comm, the default) has none unless --no-overlap-p2p-communication.
  const auto waits_on_send = [](const Schedule& s) {
    return std::count_if(s.ops.begin(), s.ops.end(), [&](const Op& op) {
      return op.kind == OpKind::compute &&
             std::any_of(op.deps.begin(), op.deps.end(), [&](OpId d) { return s.ops[d].kind == OpKind::send; });
    });
  };
  EXPECT_GT(waits_on_send(pipeline(8, 4, 1, 8, "1f1b")), 0);
  const Schedule overlapped = pipeline(8, 4, 2, 8, "interleaved_1f1b");
  EXPECT_EQ(waits_on_send(overlapped), 0);
  EXPECT_EQ(validate(overlapped).size(), 0u);  // still deadlock-free
}

TEST(Pipeline, InterleavingDividesTheBubbleByTheChunks) {
  // pp 4 × 2 chunks of 1 layer each, 8 micro-batches: the fill and drain shrink to (pp − 1)(F + B)/v, so the step is
  // M (F + B) + (pp − 1)(F + B)/2 = 48 + 9 = 57 ms against 1F1B's 66 ms.
  const Schedule s = pipeline(8, 4, 2, 8, "interleaved_1f1b");
  const RunRecord r = run_layers_only(s);
  const double stage_work = 2.0 * (kForwardNs + kBackwardNs);
  EXPECT_DOUBLE_EQ(step_ns(r), 8 * stage_work + 3 * stage_work / 2);
}

// The activations one micro-batch leaves on stage 0 (its forward ops' saved buffers), as the allocator rounds them.
int64_t stage0_activation_bytes_per_micro_batch(const Schedule& s) {
  int64_t bytes = 0;
  for (const Op& op : s.ops) {
    if (op.micro_batch != 0 || op.phase != Phase::fwd || s.stage_of(op) != 0 || op.kind != OpKind::compute) continue;
    for (const BufferId b : op.allocs) {
      if (s.buffers[b].category == BufferCategory::activation)
        bytes += CachingAllocator::round_size(s.buffers[b].size_bytes);
    }
  }
  return bytes;
}

int64_t stage0_activation_peak(const RunRecord& r) {
  int64_t peak = 0;
  for (const MemorySample& m : r.timeline)
    peak = std::max(peak, m.bytes[static_cast<size_t>(BufferCategory::activation)]);
  return peak;
}

TEST(Pipeline, FirstStageHoldsPpMicroBatchesUnderOneFOneB) {
  // Stage 0 runs pp forwards before its first backward frees anything: pp micro-batches of activations at once. The
  // embedding stage is the fullest, so the run's timeline is stage 0's.
  const Schedule s = pipeline(8, 4, 1, 8, "1f1b");
  const RunRecord r = run_layers_only(s);
  ASSERT_EQ(r.memory_stage, 0);
  EXPECT_EQ(stage0_activation_peak(r), 4 * stage0_activation_bytes_per_micro_batch(s));
}

TEST(Pipeline, FirstStageHoldsMoreUnderInterleaving) {
  // Interleaved, pp 4 × 2 chunks: stage 0 warms up with (pp − 1)·2 + (v − 1)·pp = 10 chunk forwards and runs one
  // more before its first backward: 11 chunk forwards = micro-batches 0-3 of both chunks and 4-6 of chunk 0, i.e.
  // 5.5 micro-batches' worth of the stage's (two equal chunks') activations, against 4 under 1F1B.
  const Schedule s = pipeline(8, 4, 2, 8, "interleaved_1f1b");
  const RunRecord r = run_layers_only(s);
  ASSERT_EQ(r.memory_stage, 0);
  // Chunk 0 also holds the embedding's activations: count each chunk's forwards by what its computes save.
  int64_t chunk0 = 0, chunk1 = 0;
  for (const Op& op : s.ops) {
    if (op.micro_batch != 0 || op.phase != Phase::fwd || s.stage_of(op) != 0 || op.kind != OpKind::compute) continue;
    for (const BufferId b : op.allocs) {
      if (s.buffers[b].category != BufferCategory::activation) continue;
      (op.unit <= 1 ? chunk0 : chunk1) += CachingAllocator::round_size(s.buffers[b].size_bytes);
    }
  }
  const int64_t held = 7 * chunk0 + 4 * chunk1;
  // Chunk 1's inputs arrive from stage 3 as received tensors; those received ahead of their forward are held too
  // (build_pipeline.cpp receives eagerly): at most the pp − 1 micro-batches stage 3 can run ahead.
  const int64_t received = CachingAllocator::round_size(int64_t{4096} * 256 * 2);
  EXPECT_GE(stage0_activation_peak(r), held);
  EXPECT_LE(stage0_activation_peak(r), held + 3 * received);
}

TEST(Pipeline, Fsdp2KeepsEachStageUnshardedUntilTheLastMicroBatch) {
  // torch.distributed.pipelining: every backward but the last runs with set_reshard_after_backward(False) and
  // set_requires_gradient_sync(False), so a stage gathers each FSDP group once per step, not once per micro-batch,
  // and reduce-scatters only after the last micro-batch.
  FsdpConfig c;
  c.nodes = 1;
  for (const char* set : {"implementation=fsdp2", "pp=4", "pipeline_schedule=1f1b", "reshard_after_forward=false",
                          "global_batch_size=16"}) {
    apply_override(c, set);
  }
  const Schedule s = build_schedule(testing::tiny_llama(8), c, 8);
  validate_or_throw(s, "the FSDP2 pipeline schedule");
  int64_t gathers = 0, reduce_scatters = 0;
  for (const Op& op : s.ops) {
    if (s.stage_of(op) != 1 || op.kind == OpKind::compute) continue;
    gathers += op.kind == OpKind::all_gather && op.group == s.group_index(GroupRole::dp_shard);
    reduce_scatters += op.kind == OpKind::reduce_scatter && op.group == s.group_index(GroupRole::dp_shard);
    if (op.kind == OpKind::reduce_scatter) {
      EXPECT_EQ(op.micro_batch, 7) << op.name;
    }
  }
  // Stage 1 holds 2 decoder layers, each its own group: gathered once, reduced once.
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(reduce_scatters, 2);
}

TEST(Pipeline, ValidationFindsAnUnpairedSendAndADeadlock) {
  Schedule s = pipeline(8, 2, 1, 2, "1f1b");
  Schedule unpaired = s;
  const auto send =
      std::find_if(unpaired.ops.begin(), unpaired.ops.end(), [](const Op& op) { return op.kind == OpKind::send; });
  ASSERT_NE(send, unpaired.ops.end());
  send->peer = OpId::none();
  const std::vector<std::string> problems = validate(unpaired);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().find("p2p-pairs"), std::string::npos) << problems.front();

  // Stage 0 holding its first activation send until the gradient of that micro-batch comes back: the gradient needs
  // stage 1's backward, which needs the activation — a cycle through two rendezvous, every edge within a stage.
  Schedule deadlock = s;
  const auto first_send = std::find_if(deadlock.ops.begin(), deadlock.ops.end(),
                                       [](const Op& op) { return op.kind == OpKind::send && op.phase == Phase::fwd; });
  ASSERT_NE(first_send, deadlock.ops.end());
  const auto gradient = std::find_if(deadlock.ops.begin(), deadlock.ops.end(), [&](const Op& op) {
    return op.kind == OpKind::recv && op.phase == Phase::bwd && op.micro_batch == first_send->micro_batch &&
           deadlock.stage_of(op) == deadlock.stage_of(*first_send);
  });
  ASSERT_NE(gradient, deadlock.ops.end());
  first_send->deps.push_back(gradient->id);
  const std::vector<std::string> cycle = validate(deadlock);
  ASSERT_FALSE(cycle.empty());
  EXPECT_NE(cycle.front().find("deadlock"), std::string::npos) << cycle.front();
}

TEST(Pipeline, ValidationRefusesADependencyOnAnotherStagesOp) {
  // A stage's GPU can wait only for its own ops: another GPU is reached through a send and its receive (the
  // executor runs each stage in its own process).
  Schedule s = pipeline(8, 2, 1, 2, "1f1b");
  const auto recv = std::find_if(s.ops.begin(), s.ops.end(),
                                 [](const Op& op) { return op.kind == OpKind::recv && op.phase == Phase::fwd; });
  ASSERT_NE(recv, s.ops.end());
  const Op& send = s.ops[recv->peer];
  const OpId producer = send.deps.front();  // the stage-0 op whose output the send carries
  recv->deps.push_back(producer);
  const std::vector<std::string> problems = validate(s);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  EXPECT_NE(problems.front().find("stages: op " + std::to_string(recv->id.value())), std::string::npos)
      << problems.front();
  EXPECT_NE(problems.front().find("of stage 0"), std::string::npos) << problems.front();
}

}  // namespace
}  // namespace fsdpsim
