// Jobs smaller than a node (issue 13, item 2): `--set gpus=N` runs on N GPUs of one node, over its NVLink.
#include <gtest/gtest.h>

#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

Job job(const std::string& topology, const std::vector<std::string>& sets) {
  JobOptions options;
  options.model = "llama3-8b";
  options.topology = topology;
  options.sets = sets;
  return resolve_job(options);
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

TEST(PartOfANode, AMultipleOfTheNodeSetsTheNodesAndAPartialNodeIsRefused) {
  EXPECT_EQ(job("dgx-h100-ndr", {"gpus=16"}).config.nodes, 2);
  EXPECT_EQ(job("dgx-h100-ndr", {"gpus=16"}).topology.gpus_per_node, 8);
  const std::string partial = error_of([] { (void)job("dgx-h100-ndr", {"gpus=12"}); });
  EXPECT_NE(partial.find("partial node of 4 GPUs"), std::string::npos) << partial;
  EXPECT_NE(partial.find("use a multiple of 8"), std::string::npos) << partial;
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
