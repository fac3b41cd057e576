// Smaller nodes of a preset's platform (with_gpus_per_node): what `--set gpus=N` below a node and the fidelity rows
// run on 4-GPU hosts of an 8-GPU platform both use.
#include <gtest/gtest.h>

#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

TEST(NodeShape, HalfADgxH100KeepsItsNvlinkAndHalfTheNics) {
  const Topology full = topology_preset("dgx-h100-ndr");
  const Topology half = with_gpus_per_node(full, 4);
  EXPECT_EQ(half.gpus_per_node, 4);
  EXPECT_EQ(half.nvlink_domain_gpus, 4);
  EXPECT_EQ(half.nics_per_node, full.nics_per_node / 2);
  EXPECT_EQ(half.nvlink_bw_bytes_per_s, full.nvlink_bw_bytes_per_s);  // NVSwitch: every GPU keeps its links
  // One GPU keeps one NIC.
  EXPECT_EQ(with_gpus_per_node(full, 1).nics_per_node, 1);
}

TEST(NodeShape, AMultiNodeNvlinkDomainStays) {
  // GB200 NVL72: 4-GPU trays in a 72-GPU NVLink domain; 2-GPU trays would still sit in the rack's domain.
  const Topology rack = topology_preset("gb200-nvl72");
  ASSERT_GT(rack.nvlink_domain_gpus, rack.gpus_per_node);
  EXPECT_EQ(with_gpus_per_node(rack, 2).nvlink_domain_gpus, rack.nvlink_domain_gpus);
}

TEST(NodeShape, AnXgmiMeshKeepsTheLinksAmongItsGpus) {
  // MI300X: 7 links per GPU in an 8-GPU mesh; 4 GPUs reach each other over 3 of them.
  const Topology mesh = topology_preset("mi300x-roce");
  ASSERT_TRUE(mesh.xgmi_mesh);
  EXPECT_DOUBLE_EQ(with_gpus_per_node(mesh, 4).nvlink_bw_bytes_per_s, mesh.nvlink_bw_bytes_per_s * 3 / 7);
  EXPECT_DOUBLE_EQ(with_gpus_per_node(mesh, 8).nvlink_bw_bytes_per_s, mesh.nvlink_bw_bytes_per_s);
}

}  // namespace
}  // namespace fsdpsim
