// The CUDA backend's host-side planning, which needs no GPU: where each GEMM operand lives (gemm_plan.h), the NCCL
// count and buffers of each collective and the ncclCommSplit colour/key of each group instance (collective_plan.h).

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/units.h"
#include "exec/cuda/gemm/gemm_plan.h"
#include "exec/cuda/nccl/collective_plan.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

constexpr int64_t kBf16 = 2;

// One compute op on stream 0 reading a 64 KiB gathered-parameter buffer (0) and writing a 64 KiB gradient buffer (1).
Schedule compute_schedule(std::vector<Gemm> gemms, int64_t weights_bytes = 65536, int64_t grads_bytes = 65536) {
  Schedule s;
  s.info.world_size = 1;
  s.groups = {Group{"dp_shard", 1, 1}};
  s.streams = {Stream{"compute", 0}};
  s.buffers = {Buffer{BufferId(0), "params", BufferCategory::gathered_param, weights_bytes, true, false},
               Buffer{BufferId(1), "grads", BufferCategory::unsharded_grad, grads_bytes, true, false}};
  Op op;
  op.name = "layer";
  op.gemms = std::move(gemms);
  op.reads = {BufferId(0)};
  op.writes = {BufferId(1)};
  s.ops = {op};
  return s;
}

TEST(CudaGemmPlan, WeightsWalkTheGatheredBufferAndWrap) {
  const Schedule s =
      compute_schedule({Gemm{"qkv", 16, 64, 128, 1, false}, Gemm{"mlp_up", 16, 128, 128, 1, false},
                        Gemm{"mlp_down", 16, 128, 128, 1, false}, Gemm{"mlp_up.dgrad", 16, 128, 128, 1, false}});
  const ComputePlan plan = plan_compute(s, kBf16);
  const auto& l = plan.launches[0];
  ASSERT_EQ(l.size(), 4u);
  // qkv: W = n·k·2 = 64·128·2 = 16384 B at offset 0; the cursor moves to 16384.
  EXPECT_EQ(l[0].w, (OperandPlace{BufferId(0), 0, 64 * 128}));
  // mlp_up: W = 128·128·2 = 32768 B fits at 16384 (16384 + 32768 = 49152 ≤ 65536); cursor 49152.
  EXPECT_EQ(l[1].w, (OperandPlace{BufferId(0), 16384, 128 * 128}));
  // mlp_down: 49152 + 32768 = 81920 > 65536, so it wraps to 0; cursor 32768.
  EXPECT_EQ(l[2].w, (OperandPlace{BufferId(0), 0, 128 * 128}));
  // dgrad reads the weights too: 32768 + 32768 = 65536 ≤ 65536 fits exactly at 32768.
  EXPECT_EQ(l[3].w, (OperandPlace{BufferId(0), 32768, 128 * 128}));
  // A and C of these GEMMs are scratch; C regions: qkv 16·64·2 = 2048, the others 16·128·2 = 4096 B.
  for (const auto& launch : l) {
    EXPECT_EQ(launch.a.buffer, BufferId::none());
    EXPECT_EQ(launch.c.buffer, BufferId::none());
  }
  EXPECT_EQ(plan.scratch[0].c_bytes, 4096);
  // A: 16·128·2 = 4096 B for every GEMM; no W needed from scratch.
  EXPECT_EQ(plan.scratch[0].a_bytes, 4096);
  EXPECT_EQ(plan.scratch[0].w_bytes, 0);
}

TEST(CudaGemmPlan, WgradWritesTheGradientBufferAndTakesBothInputsFromScratch) {
  const Schedule s = compute_schedule({Gemm{"mlp_up.wgrad", 128, 128, 16, 1, false}});
  const ComputePlan plan = plan_compute(s, kBf16);
  ASSERT_EQ(plan.launches[0].size(), 1u);
  const GemmLaunch& l = plan.launches[0][0];
  // C = m·n·2 = 128·128·2 = 32768 B ≤ 65536: in the gradient buffer at 0, stride m·n = 16384 elements.
  EXPECT_EQ(l.c, (OperandPlace{BufferId(1), 0, 128 * 128}));
  // W of a wgrad GEMM is an activation: scratch, n·k·2 = 128·16·2 = 4096 B.
  EXPECT_EQ(l.w.buffer, BufferId::none());
  EXPECT_EQ(plan.scratch[0].w_bytes, 4096);
  EXPECT_EQ(plan.scratch[0].c_bytes, 0);
}

TEST(CudaGemmPlan, AttentionRunsFromScratchInChunksUnderTheRegionCap) {
  // C per entry = 4096·4096·2 = 32 MiB; the 256 MiB cap holds 8 entries, so a batch of 20 runs as 8 + 8 + 4.
  const Schedule s = compute_schedule({Gemm{"attn_scores", 4096, 4096, 128, 20, true}});
  const ComputePlan plan = plan_compute(s, kBf16);
  const auto& l = plan.launches[0];
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].batch, 8);
  EXPECT_EQ(l[1].batch, 8);
  EXPECT_EQ(l[2].batch, 4);
  for (const auto& launch : l) {
    EXPECT_EQ(launch.w.buffer, BufferId::none());  // attention reads no weights
    EXPECT_EQ(launch.c, (OperandPlace{BufferId::none(), 0, 4096 * 4096}));
  }
  // Regions: C 8·32 MiB = 256 MiB; A and W 8 entries of 4096·128·2 = 1 MiB = 8 MiB each.
  EXPECT_EQ(plan.scratch[0].c_bytes, 256 * kMiB);
  EXPECT_EQ(plan.scratch[0].a_bytes, 8 * kMiB);
  EXPECT_EQ(plan.scratch[0].w_bytes, 8 * kMiB);
}

TEST(CudaGemmPlan, ABatchLargerThanTheWeightsReadsOneMatrixAndALargeMatrixUsesScratch) {
  // 4 experts of W = 64·128·2 = 16384 B need 65536 B > 40000: every entry reads the matrix at 0 (stride 0).
  // The next GEMM's W = 256·128·2 = 65536 B > 40000 does not fit at all: scratch.
  const Schedule s = compute_schedule({Gemm{"expert_up", 16, 64, 128, 4, false}, Gemm{"big", 16, 256, 128, 1, false},
                                       Gemm{"expert_up.wgrad", 64, 128, 16, 4, false}},
                                      40000, 40000);
  const ComputePlan plan = plan_compute(s, kBf16);
  const auto& l = plan.launches[0];
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].w, (OperandPlace{BufferId(0), 0, 0}));
  EXPECT_EQ(l[1].w, (OperandPlace{BufferId::none(), 0, 256 * 128}));
  // A wgrad batch of 4 × 64·128·2 = 65536 B > 40000 would make entries overwrite each other: C goes to scratch.
  EXPECT_EQ(l[2].c, (OperandPlace{BufferId::none(), 0, 64 * 128}));
}

TEST(CudaGemmPlan, ADimensionBeyondCublasIntIsAnErrorNamingTheOpAndTheGemm) {
  const Schedule s = compute_schedule({Gemm{"huge", int64_t{1} << 31, 16, 16, 1, false}});
  try {
    (void)plan_compute(s, kBf16);
    FAIL() << "expected a ScheduleError";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'layer'"), std::string::npos) << what;
    EXPECT_NE(what.find("'huge'"), std::string::npos) << what;
    EXPECT_NE(what.find("split it"), std::string::npos) << what;
  }
}

TEST(CudaGemmPlan, MemoryBoundWorkAndHostCopiesSizeTheirRegions) {
  Schedule s = compute_schedule({});
  s.ops[0].bytes_touched = 3000;  // region: 3000 rounded up to 256 B = 3072
  Op copy;
  copy.id = OpId(1);
  copy.name = "offload";
  copy.kind = OpKind::copy;
  copy.send_bytes = int64_t{1} << 40;  // 1 TiB: both regions capped at 256 MiB
  s.ops.push_back(copy);
  const ComputePlan plan = plan_compute(s, kBf16);
  EXPECT_EQ(plan.scratch[0].memory_bytes, kScratchRegionCapBytes);
  EXPECT_EQ(plan.scratch[0].pinned_host_bytes, kScratchRegionCapBytes);
  s.ops.pop_back();
  EXPECT_EQ(plan_compute(s, kBf16).scratch[0].memory_bytes, 3072);
}

TEST(CudaCollectivePlan, GroupInstancesFollowMegatronOrder) {
  // tp: size 2, stride 1, world 8 → instances {0,1} {2,3} {4,5} {6,7}; rank 5 is the second member of instance 2.
  EXPECT_EQ(group_membership(Group{"tp", 2, 1}, 5, 8), (GroupMembership{2, 1, 2}));
  // dp: size 4, stride 2 → instances {0,2,4,6} (colour 0) and {1,3,5,7} (colour 1); rank 5 is member 2 of colour 1.
  EXPECT_EQ(group_membership(Group{"dp", 4, 2}, 5, 8), (GroupMembership{1, 2, 4}));
  // Every member of colour 1 in world order gets positions 0, 1, 2, 3 (ncclCommSplit orders by key = world rank).
  int32_t next = 0;
  for (int32_t r = 0; r < 8; ++r) {
    const GroupMembership m = group_membership(Group{"dp", 4, 2}, r, 8);
    if (m.color == 1) {
      EXPECT_EQ(m.rank, next++) << "rank " << r;
    }
  }
  EXPECT_EQ(next, 4);
}

TEST(CudaCollectivePlan, AGroupThatDoesNotTileTheWorldIsAnErrorNamingIt) {
  try {
    (void)group_membership(Group{"dp_shard", 3, 1}, 0, 8);
    FAIL() << "expected a ScheduleError";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'dp_shard'"), std::string::npos) << what;
    EXPECT_NE(what.find("rebuild the schedule"), std::string::npos) << what;
  }
}

TEST(CudaCollectivePlan, CountsAndBuffersOfTheTinySchedule) {
  const Schedule s = testing::tiny_schedule();  // dp_shard of 4, bf16
  const CommPlan plan = plan_collectives(s, false);
  // AG: send 100 B = 50 bf16 per rank; output 50·2·4 = 400 B; param shard (0) in, gathered params (1) out.
  EXPECT_EQ(plan.ops[0], (CollectivePlan{50, 2, 100, 400, BufferId(0), BufferId(1), 0}));
  // RS: recv 100 B = 50 elements; input 50·2·4 = 400 B from the grads (3), output into the grad shard (4).
  EXPECT_EQ(plan.ops[3], (CollectivePlan{50, 2, 400, 100, BufferId(3), BufferId(4), 0}));
  EXPECT_EQ(plan.ops[1].count, 0);  // compute
  for (const CommScratch& c : plan.scratch) EXPECT_EQ(c, CommScratch{});
}

TEST(CudaCollectivePlan, CheckModeKeepsPersistentBuffersPrivate) {
  const Schedule s = testing::tiny_schedule();
  const CommPlan plan = plan_collectives(s, true);
  // The persistent param shard and grad shard give way to scratch of 100 B rounded up to 256 B on the AG stream (1)
  // and the RS stream (2); the non-persistent gathered params and grads stay.
  EXPECT_EQ(plan.ops[0].input_buffer, BufferId::none());
  EXPECT_EQ(plan.ops[0].output_buffer, BufferId(1));
  EXPECT_EQ(plan.ops[3].input_buffer, BufferId(3));
  EXPECT_EQ(plan.ops[3].output_buffer, BufferId::none());
  EXPECT_EQ(plan.scratch[1], (CommScratch{256, 0}));
  EXPECT_EQ(plan.scratch[2], (CommScratch{0, 256}));
}

TEST(CudaCollectivePlan, PartialElementsAreDroppedAndAllToAllSplitsPerPeer) {
  Schedule s = testing::tiny_schedule();
  s.ops[0].send_bytes = 101;  // 50 whole bf16 elements and one byte left over
  Op a2a = s.ops[0];
  a2a.id = OpId(4);
  a2a.name = "a2a";
  a2a.kind = OpKind::all_to_all;
  a2a.send_bytes = a2a.recv_bytes = 800;  // 800 / (2 B · 4 peers) = 100 elements per peer
  a2a.reads = a2a.writes = a2a.allocs = {};
  s.ops.push_back(a2a);
  const CommPlan plan = plan_collectives(s, false);
  EXPECT_EQ(plan.ops[0].count, 50);
  EXPECT_EQ(plan.ops[0].dropped_bytes, 1);
  EXPECT_EQ(plan.ops[4].count, 100);
  EXPECT_EQ(plan.ops[4].input_bytes, 800);
  EXPECT_EQ(plan.scratch[1], (CommScratch{1024, 1024}));  // 800 B rounded up to 256 B: 1024 in, 1024 out
  // Reading and writing one 800 B buffer: the input stays, the output moves to scratch (no in-place all-to-all).
  s.buffers.push_back(Buffer{BufferId(5), "tokens", BufferCategory::activation, 800, false, false});
  s.ops[4].reads = s.ops[4].writes = {BufferId(5)};
  const CommPlan in_place = plan_collectives(s, false);
  EXPECT_EQ(in_place.ops[4].input_buffer, BufferId(5));
  EXPECT_EQ(in_place.ops[4].output_buffer, BufferId::none());
}

TEST(CudaCollectivePlan, ACollectiveWithoutAGroupIsAnErrorNamingTheOp) {
  Schedule s = testing::tiny_schedule();
  s.ops[0].group = {};
  try {
    (void)plan_collectives(s, false);
    FAIL() << "expected a ScheduleError";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'ag.layer.0'"), std::string::npos) << what;
    EXPECT_NE(what.find("names no group"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fsdpsim
