// AMD Instinct (issue 18): the MI300X / MI325X / MI355X profiles against their cited figures, the xGMI mesh (a link
// per GPU pair, so a group of k GPUs of a node reaches only k − 1 links), RCCL's tables, and an 8B job on one MI300X
// node end to end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/units.h"
#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"
#include "sim/nccl/collective_model.h"
#include "tests/support/job_of.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

CollectiveCost cost(const Topology& topology, OpKind kind, int32_t ranks, int64_t size_bytes) {
  CollectiveRequest request;
  request.kind = kind;
  request.size_bytes = size_bytes;
  request.dtype = DType::bf16;
  request.reduce_op = kind == OpKind::all_gather ? ReduceOp::none : ReduceOp::sum;
  request.placement = place_group(topology, ranks, ranks, 1);
  return collective_cost(request, topology);
}

TEST(AmdInstinct, ProfilesCarryTheirCitedFigures) {
  const GpuProfile mi300x = gpu_profile("mi300x");
  EXPECT_EQ(mi300x.arch, GpuArch::cdna3);
  EXPECT_EQ(mi300x.sm_count, 304);                             // 8 XCDs × 38 CUs
  EXPECT_DOUBLE_EQ(mi300x.dense_bf16_flops_per_s, 1307.4e12);  // 2048 FLOPs/clock/CU × 304 × 2.1 GHz
  EXPECT_DOUBLE_EQ(mi300x.dense_fp8_flops_per_s, 2614.9e12);
  EXPECT_EQ(mi300x.hbm_bytes, int64_t{206136955371});    // PyTorch's "total capacity of 191.98 GiB"
  EXPECT_EQ(mi300x.cublas_workspace_bytes, 204 * kMiB);  // hipBLAS 128 MiB + hipBLASLt 76 MiB
  EXPECT_EQ(gpu_profile("mi325x").arch, GpuArch::cdna3);
  EXPECT_GT(gpu_profile("mi325x").hbm_bytes, mi300x.hbm_bytes);
  const GpuProfile mi355x = gpu_profile("mi355x");
  EXPECT_EQ(mi355x.arch, GpuArch::cdna4);
  EXPECT_EQ(mi355x.sm_count, 256);
  EXPECT_DOUBLE_EQ(mi355x.dense_bf16_flops_per_s, 2516.6e12);
  EXPECT_DOUBLE_EQ(mi355x.hbm_bw_bytes_per_s, 8e12);
}

TEST(AmdInstinct, TheNodeIsAMeshWithoutNvls) {
  for (const std::string name : {"mi300x-roce", "mi355x-roce"}) {
    const Topology t = topology_preset(name);
    EXPECT_TRUE(t.xgmi_mesh) << name;
    EXPECT_FALSE(t.nvls) << name;
    EXPECT_EQ(t.gpus_per_node, 8) << name;
    EXPECT_EQ(t.nics_per_node, 8) << name;
  }
  EXPECT_DOUBLE_EQ(topology_preset("mi300x-roce").nvlink_bw_bytes_per_s, 448e9);  // 7 links × 64 GB/s
}

TEST(AmdInstinct, EightGpusRingAtRcclsLinkFigure) {
  // RCCL counts an xGMI link at 48 GB/s: 7 × 48 = 336 GB/s for a ring over the whole node, on MI300X (64 GB/s links)
  // and on MI355X (76.8 GB/s links) alike.
  for (const std::string name : {"mi300x-roce", "mi355x-roce"}) {
    const CollectiveCost c = cost(topology_preset(name), OpKind::all_gather, 8, 8 * kGiB);
    EXPECT_EQ(c.algo, NcclAlgo::ring) << name;
    EXPECT_EQ(c.proto, NcclProto::simple) << name;
    EXPECT_NEAR(c.bus_bw_bytes_per_s, 336e9, 1e6) << name;
  }
}

TEST(AmdInstinct, AGroupOfKGpusReachesOnlyItsKMinusOneLinks) {
  // A switch (NVSwitch) gives 4 GPUs of a node the same per-GPU bandwidth as 8; a mesh gives them 3 of 7 links.
  const Topology mesh = topology_preset("mi300x-roce");
  const double eight = cost(mesh, OpKind::all_gather, 8, 8 * kGiB).bus_bw_bytes_per_s;
  const double four = cost(mesh, OpKind::all_gather, 4, 8 * kGiB).bus_bw_bytes_per_s;
  const double two = cost(mesh, OpKind::all_gather, 2, 8 * kGiB).bus_bw_bytes_per_s;
  EXPECT_NEAR(four / eight, 3.0 / 7.0, 1e-9);
  EXPECT_NEAR(two / eight, 1.0 / 7.0, 1e-9);
  const Topology switched = topology_preset("dgx-h100-ndr");
  EXPECT_NEAR(cost(switched, OpKind::all_gather, 4, 8 * kGiB).bus_bw_bytes_per_s,
              cost(switched, OpKind::all_gather, 8, 8 * kGiB).bus_bw_bytes_per_s, 1e6);
}

TEST(AmdInstinct, RcclSkipsTreeSimpleOnOneNode) {
  // tuning.cc: tree with Simple is never chosen when every rank of a gfx942 / gfx950 job is on one node.
  CollectiveRequest request;
  request.kind = OpKind::all_reduce;
  request.size_bytes = 1 * kGiB;
  request.dtype = DType::bf16;
  request.reduce_op = ReduceOp::sum;
  const Topology t = topology_preset("mi300x-roce");
  request.placement = place_group(t, 8, 8, 1);
  request.algo = NcclAlgo::tree;
  const CollectiveCost tree = collective_cost(request, t);
  EXPECT_NE(tree.proto, NcclProto::simple);
  request.algo.reset();
  EXPECT_EQ(collective_cost(request, t).algo, NcclAlgo::ring);
}

TEST(AmdInstinct, RcclLatencyIsItsOwnTable) {
  // A 1 KiB all-gather on 8 GPUs: RCCL's ring LL latency is 12 + 7 × 0.8 = 17.6 us; NCCL's on an H100 node
  // 6.6 + 7 × 0.6 = 10.8 us.
  EXPECT_EQ(cost(topology_preset("mi300x-roce"), OpKind::all_gather, 8, 1 * kKiB).latency_ns, 17600);
  EXPECT_EQ(cost(topology_preset("dgx-h100-ndr"), OpKind::all_gather, 8, 1 * kKiB).latency_ns, 10800);
}

Job job(const std::vector<std::string>& sets) {
  return testing::job_of("llama3-8b", "mi300x-roce", sets);
}

TEST(AmdInstinct, Llama8bRunsOnOneMi300xNode) {
  const Job j = job({"nodes=1"});
  const Schedule s = build_job_schedule(j);
  EXPECT_EQ(s.info.world_size, 8);
  const Report r = make_report(s, j.topology, run_schedule(s, j.topology, SimOptions{}));
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_GT(r.peak_allocated_bytes, 0);
  EXPECT_LT(r.peak_allocated_bytes, j.topology.gpu.hbm_bytes);
  ASSERT_FALSE(r.collectives.empty());
  for (const CollectiveTotals& c : r.collectives) {
    EXPECT_EQ(c.domains, 1) << c.group;
    EXPECT_EQ(c.algorithm.find("nvls"), std::string::npos) << c.group;
  }
}

TEST(AmdInstinct, FourGpusOfAMeshNodeKeepThreeOfSevenLinks) {
  const Job j = job({"gpus=4"});
  EXPECT_EQ(j.topology.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(j.topology.nvlink_bw_bytes_per_s, 448e9 * 3 / 7);
  const double four = cost(j.topology, OpKind::all_gather, 4, 8 * kGiB).bus_bw_bytes_per_s;
  const double in_full_node = cost(topology_preset("mi300x-roce"), OpKind::all_gather, 4, 8 * kGiB).bus_bw_bytes_per_s;
  EXPECT_NEAR(four, in_full_node, 1e6);
}

}  // namespace
}  // namespace fsdpsim
