// The memory a pipeline's point-to-point connections hold outside the caching allocator
// (sim/memory_overhead_model.cpp): the pp group's communicator, and NCCL's FIFOs to each neighbouring stage, derived
// here by hand from NCCL 2.28's rules for the DGX H100 preset (24 NCCL channels, so 32 p2p channels; one 400 Gb/s NIC
// per GPU; NCCL_BUFFSIZE 4 MiB).
#include <gtest/gtest.h>

#include "builders/builder.h"
#include "report/report.h"
#include "report/report_compare.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "sim/memory_overhead_model.h"
#include "tests/schedule/tiny_llama.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

Schedule pipeline(int32_t nodes, int32_t pp, int32_t chunks, const std::string& schedule_kind) {
  FsdpConfig c;
  c.nodes = nodes;
  c.pp = pp;
  if (pp > 1) {
    c.virtual_pipeline_stages = chunks;
    c.origin["virtual_pipeline_stages"] = SourceLocation{"test", 0, 0};
    apply_override(c, "pipeline_schedule=" + schedule_kind);
  }
  const Topology topology = topology_preset("dgx-h100-ndr");
  c.global_batch_size = int64_t{2} * pp * (nodes * topology.gpus_per_node / pp);
  Schedule s = build_schedule(testing::tiny_llama(12), c, topology.gpus_per_node);
  validate_or_throw(s, "the pipeline schedule");
  return s;
}

Report simulate(int32_t nodes, int32_t pp, int32_t chunks, const std::string& schedule_kind) {
  const Schedule s = pipeline(nodes, pp, chunks, schedule_kind);
  const Topology topology = topology_preset("dgx-h100-ndr");
  const RunRecord run = run_schedule(s, topology, SimOptions{});
  return make_report(s, topology, run);
}

TEST(PipelineP2pMemory, NoPipelineHasNoPointToPointConnections) {
  const Report r = simulate(1, 1, 1, "");
  EXPECT_EQ(r.overheads.p2p_peers, 0);
  EXPECT_EQ(r.overheads.nccl_p2p_bytes, 0);
}

TEST(PipelineP2pMemory, MiddleStagesOfOneNodeHoldFifosForTwoNvlinkPeers) {
  // PP 4 on one node: every pair of stages shares NVLink, whose 18 links give 36 channels per peer, above the
  // communicator's 32 p2p channels (24 rounded up to a power of two), so 32 per peer. A middle stage has two peers;
  // per peer and channel an LL128 and a Simple FIFO of 4 MiB: 2 × 32 × 2 × 4 MiB = 512 MiB.
  const Report four = simulate(1, 4, 1, "1f1b");
  EXPECT_EQ(four.overheads.p2p_peers, 2);
  EXPECT_EQ(four.overheads.p2p_channels_per_peer, 32);
  EXPECT_EQ(four.overheads.nccl_p2p_bytes, 512 * kMiB);
  // PP 2: each stage has one peer, half of that.
  const Report two = simulate(1, 2, 1, "1f1b");
  EXPECT_EQ(two.overheads.p2p_peers, 1);
  EXPECT_EQ(two.overheads.nccl_p2p_bytes, 256 * kMiB);
  // The pp group's communicator is one more than the schedule's collectives use, and its FIFOs are part of NCCL's.
  const Report none = simulate(1, 1, 1, "");
  EXPECT_EQ(two.overheads.communicators, none.overheads.communicators + 1);
  EXPECT_GE(two.overheads.nccl_bytes, two.overheads.nccl_p2p_bytes);
}

TEST(PipelineP2pMemory, InterleavingJoinsTheLastStageToTheFirst) {
  // Interleaved 1F1B over 3 stages: the last stage sends its chunk's output to the first stage's next chunk, so
  // every stage, the ends too, has two peers; a 3-stage 1F1B's ends have one, its middle two. The overheads count
  // the busiest stage's.
  EXPECT_EQ(pipeline_peers_per_stage(pipeline(3, 3, 2, "interleaved_1f1b")), (std::vector<int32_t>{2, 2, 2}));
  EXPECT_EQ(pipeline_peers_per_stage(pipeline(3, 3, 1, "1f1b")), (std::vector<int32_t>{1, 2, 1}));
  EXPECT_EQ(pipeline_peers_per_stage(pipeline(1, 1, 1, "")), (std::vector<int32_t>{0}));
  EXPECT_EQ(simulate(3, 3, 2, "interleaved_1f1b").overheads.p2p_peers, 2);
}

TEST(PipelineP2pMemory, StagesOnDifferentNodesShareNetworkPools) {
  // PP 2 with a node per stage: the peer is over the network. One 50 GB/s NIC per GPU gives ⌈50 / 14⌉ = 4 channels
  // (already a power of two; one round of peers needs no halving). The Simple FIFOs go to two shared pools of
  // 32 p2p channels × 16 steps × 128 KiB = 64 MiB each; an LL128 FIFO per channel stays: 1 × 4 × 4 MiB + 2 × 64 MiB.
  const Report r = simulate(2, 2, 1, "1f1b");
  EXPECT_EQ(r.overheads.p2p_peers, 1);
  EXPECT_EQ(r.overheads.p2p_channels_per_peer, 4);
  EXPECT_EQ(r.overheads.nccl_p2p_bytes, 16 * kMiB + 128 * kMiB);
}

TEST(PipelineP2pMemory, TheJsonReportCarriesThemAndReadsThemBack) {
  const Report r = simulate(1, 4, 1, "1f1b");
  const Report back = report_from_json(report_json(r), "test");
  EXPECT_EQ(back.overheads.nccl_p2p_bytes, r.overheads.nccl_p2p_bytes);
  EXPECT_EQ(back.overheads.p2p_peers, 2);
  EXPECT_EQ(back.overheads.p2p_channels_per_peer, 32);
}

}  // namespace
}  // namespace fsdpsim
