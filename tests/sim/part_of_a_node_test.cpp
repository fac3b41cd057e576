// Jobs smaller than a node (issue 13, item 2): `--set gpus=N` runs on N GPUs of one node, over its NVLink.
#include <gtest/gtest.h>

#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"
#include "tests/support/job_of.h"

namespace fsdpsim {
namespace {

Job job(const std::string& topology, const std::vector<std::string>& sets) {
  return testing::job_of("llama3-8b", topology, sets);
}

TEST(PartOfANode, OneTwoAndFourGpusOfADgxH100RunOnItsNvlink) {
  for (const int32_t gpus : {1, 2, 4}) {
    const Job j = job("dgx-h100-ndr", {"gpus=" + std::to_string(gpus)});
    EXPECT_EQ(j.topology.gpus_per_node, gpus);
    EXPECT_EQ(j.topology.nvlink_domain_gpus, gpus);  // every GPU of the job on one NVLink domain
    EXPECT_EQ(j.topology.nics_per_node, gpus);       // one NDR NIC per GPU, as on the whole node
    EXPECT_EQ(j.config.nodes, 1);
    EXPECT_EQ(j.topology.nvlink_bw_bytes_per_s, 450e9);
    const Schedule s = build_job_schedule(j);
    EXPECT_EQ(s.info.world_size, gpus);
    const Report r = make_report(s, j.topology, run_schedule(s, j.topology, SimOptions{}));
    for (const CollectiveTotals& c : r.collectives) {
      EXPECT_EQ(c.domains, 1) << c.group;  // no collective leaves the NVLink domain
      EXPECT_GT(c.busbw_bytes_per_s, 300e9) << c.group << ": NVLink rates, not InfiniBand's 46 GB/s";
    }
    if (gpus > 1) {
      EXPECT_FALSE(r.collectives.empty());
    }
  }
}

TEST(PartOfANode, FourGpusOfAnH200Node) {
  const Job j = job("hgx-h200-ndr", {"gpus=4"});
  EXPECT_EQ(j.topology.gpus_per_node, 4);
  const Schedule s = build_job_schedule(j);
  EXPECT_EQ(s.info.world_size, 4);
}

TEST(PartOfANode, AMultipleOfTheNodeSetsTheNodesAndAPartialLastNodeCounts) {
  EXPECT_EQ(job("dgx-h100-ndr", {"gpus=16"}).config.nodes, 2);
  EXPECT_EQ(job("dgx-h100-ndr", {"gpus=16"}).topology.gpus_per_node, 8);
  // 12 GPUs: a full node and half of a second; the world is 12 ranks and the data-parallel group spans both nodes,
  // 8 members on the first and 4 on the second.
  const Job twelve = job("dgx-h100-ndr", {"gpus=12"});
  EXPECT_EQ(twelve.config.nodes, 2);
  EXPECT_EQ(twelve.topology.gpus_per_node, 8);
  const Schedule s = build_job_schedule(twelve);
  EXPECT_EQ(s.info.world_size, 12);
  const GroupPlacement dp = place_group(twelve.topology, 12, 12, 1);
  EXPECT_EQ(dp.domains, 2);
  EXPECT_EQ(dp.ranks_per_domain, 8);
  EXPECT_EQ(dp.fewest_ranks_per_domain, 4);
  const std::string disagree = error_of([] { (void)job("dgx-h100-ndr", {"nodes=4", "gpus=16"}); });
  EXPECT_NE(disagree.find("disagree"), std::string::npos) << disagree;
}

TEST(PartOfANode, TheTransformIsIdempotent) {
  FsdpConfig config;
  apply_override(config, "gpus=2");
  const Topology once = topology_for_gpus(topology_preset("dgx-h100-ndr"), config);
  const Topology twice = topology_for_gpus(once, config);
  EXPECT_EQ(once, twice);
}

}  // namespace
}  // namespace fsdpsim
