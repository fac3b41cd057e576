// Groups that fill NVLink domains unevenly (issue 13, item 1): 128 and 256 GPUs on 72-GPU NVL72 racks, a partial
// last node. Every domain of a ring carries the same bytes, so the ring runs at the rate of its slowest hop.
#include <gtest/gtest.h>

#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"
#include "sim/nccl/collective_model.h"
#include "tests/support/job_of.h"

namespace fsdpsim {
namespace {

Job job(const std::string& model, const std::string& topology, const std::vector<std::string>& sets) {
  return testing::job_of(model, topology, sets);
}

// The bus bandwidth of a 1 GiB all-gather forced onto ring/simple (the rate of the transfer, without the latency that
// grows with the member count).
double ring_busbw(const Topology& t, int32_t world_size, int32_t size, int32_t stride) {
  CollectiveRequest r;
  r.kind = OpKind::all_gather;
  r.size_bytes = kGiB;
  r.placement = place_group(t, world_size, size, stride);
  r.algo = NcclAlgo::ring;
  r.proto = NcclProto::simple;
  return collective_cost(r, t).bus_bw_bytes_per_s;
}

TEST(UnevenRacks, Llama70bOn128And256GpusOfNvl72Racks) {
  for (const int32_t gpus : {128, 256}) {
    const Job j = job("llama3-70b", "gb200-nvl72", {"gpus=" + std::to_string(gpus)});
    const Schedule s = build_job_schedule(j);
    ASSERT_EQ(s.info.world_size, gpus);
    const Report r = make_report(s, j.topology, run_schedule(s, j.topology, SimOptions{}));
    EXPECT_GT(r.step_time_s, 0);
    EXPECT_EQ(r.nodes, gpus / 4);  // 4-GPU trays
    ASSERT_FALSE(r.collectives.empty());
    for (const CollectiveTotals& c : r.collectives) {
      // ceil(gpus / 72) racks: 128 = 72 + 56, 256 = 3 × 72 + 40.
      EXPECT_EQ(c.domains, (gpus + 71) / 72) << c.group;
      EXPECT_EQ(c.ranks, gpus) << c.group;
    }
  }
}

TEST(UnevenRacks, TheRingRunsAtItsSlowestHop) {
  // 12 GPUs of 8-GPU DGX H100 nodes: 8 on node 0, 4 on node 1. Between the nodes each carries the same bytes, and
  // node 1 has only 4 of its NICs under the group: the ring runs at the rate of a group with 4 members on each node
  // (ranks 0, 2, …, 14 of 16), not at that of 8 on each.
  const Topology dgx = topology_preset("dgx-h100-ndr");
  const double uneven = ring_busbw(dgx, 12, 12, 1);
  const double four_and_four = ring_busbw(dgx, 16, 8, 2);
  const double eight_and_eight = ring_busbw(dgx, 16, 16, 1);
  EXPECT_DOUBLE_EQ(uneven, four_and_four);
  EXPECT_LT(uneven, eight_and_eight);
  // The hop out of the 4-GPU node has those 4 NDR NICs, 4 × 50 GB/s, below NVLink's rate: it is what binds.
  EXPECT_LE(four_and_four, 4 * dgx.nic_bw_bytes_per_s);
  // On NVL72 racks the scale-out hop uses at most 16 NICs (max_nics_between_domains), which 56 GPUs fill as well as
  // 72: 72 + 56 runs as fast as 64 + 64 on the 64-per-rack variant.
  const Topology nvl72 = topology_preset("gb200-nvl72");
  const Topology nvl72_64 = topology_preset("gb200-nvl72-64");
  EXPECT_DOUBLE_EQ(ring_busbw(nvl72, 128, 128, 1), ring_busbw(nvl72_64, 128, 128, 1));
}

TEST(UnevenRacks, APartialLastNodeRunsAndNamesItsNodes) {
  const Job j = job("llama3-8b", "dgx-h100-ndr", {"gpus=12"});
  const Schedule s = build_job_schedule(j);
  const Report r = make_report(s, j.topology, run_schedule(s, j.topology, SimOptions{}));
  EXPECT_EQ(r.world_size, 12);
  EXPECT_EQ(r.nodes, 2);
  // Slower collectives than 16 GPUs of two full nodes, whose inter-node hop has 8 NICs.
  const Job full = job("llama3-8b", "dgx-h100-ndr", {"gpus=16"});
  const Schedule s16 = build_job_schedule(full);
  const Report r16 = make_report(s16, full.topology, run_schedule(s16, full.topology, SimOptions{}));
  ASSERT_FALSE(r.collectives.empty());
  ASSERT_EQ(r.collectives.size(), r16.collectives.size());
  EXPECT_LE(r.collectives[0].busbw_bytes_per_s, r16.collectives[0].busbw_bytes_per_s);
}

}  // namespace
}  // namespace fsdpsim
