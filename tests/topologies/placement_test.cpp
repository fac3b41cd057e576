// Rank placement: members 0, stride, 2·stride, … of a job laid out node by node (rank r on node r / gpus_per_node
// and NVLink domain r / nvlink_domain_gpus).
#include <gtest/gtest.h>

#include <string>

#include "tests/topologies/test_support.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

// A group that fills its domains and nodes evenly.
GroupPlacement expected(int32_t size, int32_t per_domain, int32_t domains, int32_t per_node, int32_t nodes) {
  return GroupPlacement{size, per_domain, domains, per_node, nodes, per_domain, per_node};
}

// A group whose emptiest domain holds `fewest_per_domain` members and emptiest node `fewest_per_node`.
GroupPlacement uneven(int32_t size, int32_t per_domain, int32_t domains, int32_t per_node, int32_t nodes,
                      int32_t fewest_per_domain, int32_t fewest_per_node) {
  return GroupPlacement{size, per_domain, domains, per_node, nodes, fewest_per_domain, fewest_per_node};
}

TEST(Placement, DataParallelGroupAcrossEightGpuNodes) {
  // dp = 64, stride 1: ranks 0..63 fill nodes 0..7 completely; on DGX H100 a node is a domain.
  // 64 / 8 = 8 members per domain, 8 domains.
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 64, 64, 1), expected(64, 8, 8, 8, 8));
}

TEST(Placement, DataParallelGroupWithTensorParallelEight) {
  // TP = 8 puts the dp group at stride 8: ranks 0, 8, …, 56, one on each of nodes 0..7.
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 64, 8, 8), expected(8, 1, 8, 1, 8));
}

TEST(Placement, OuterHsdpGroup) {
  // HSDP outer group, size 4 at stride 16: ranks 0, 16, 32, 48 on nodes 0, 2, 4, 6 (r / 8).
  EXPECT_EQ(place_group(topology_preset("dgx-a100-hdr"), 64, 4, 16), expected(4, 1, 4, 1, 4));
}

TEST(Placement, GroupInsideOneNode) {
  // Ranks 0..3 all on node 0.
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 8, 4, 1), expected(4, 4, 1, 4, 1));
}

TEST(Placement, FullNvl72Rack) {
  // 72 ranks on gb200-nvl72: one 72-GPU domain, 72 / 4 = 18 trays of 4.
  EXPECT_EQ(place_group(topology_preset("gb200-nvl72"), 72, 72, 1), expected(72, 72, 1, 4, 18));
}

TEST(Placement, TwoNvl72Racks) {
  // 144 ranks: 144 / 72 = 2 domains of 72; 144 / 4 = 36 trays.
  EXPECT_EQ(place_group(topology_preset("gb200-nvl72"), 144, 144, 1), expected(144, 72, 2, 4, 36));
}

TEST(Placement, StridedGroupAcrossTwoRacks) {
  // Size 36 at stride 4 in 144 ranks: ranks 0, 4, …, 140. Domain 0 holds 0..68 (18 ranks), domain 1 holds 72..140
  // (18 ranks); each rank sits on its own tray (r / 4 = 0, 1, …, 35).
  EXPECT_EQ(place_group(topology_preset("gb200-nvl72"), 144, 36, 4), expected(36, 18, 2, 1, 36));
}

TEST(Placement, CountsInsteadOfDividing) {
  // Stride 3 does not divide the 8-GPU domain, yet ranks 0, 3, 6 | 9, 12, 15 split 3 + 3 over domains 0 and 1.
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 16, 6, 3), expected(6, 3, 2, 3, 2));
}

TEST(Placement, RanksPerNodeIsTheFullestNode) {
  // Ranks 0..5 on gb200: trays 0 (ranks 0-3) and 1 (ranks 4, 5): 4 on the fuller tray; one domain of 6.
  EXPECT_EQ(place_group(topology_preset("gb200-nvl72"), 72, 6, 1), uneven(6, 6, 1, 4, 2, 6, 2));
}

TEST(Placement, LastMemberMayBeTheLastRank) {
  // Size 8 at stride 8 needs rank 56; a 57-GPU world (ranks 0..56) holds it.
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 57, 8, 8), expected(8, 1, 8, 1, 8));
}

TEST(PlacementErrors, GroupLargerThanTheWorld) {
  // Size 4 at stride 16 needs rank (4 - 1) × 16 = 48, but a 48-GPU world ends at rank 47.
  const std::string message = error_of([] { (void)place_group(topology_preset("dgx-h100-ndr"), 48, 4, 16); });
  EXPECT_NE(message.find("a group of 4 ranks with stride 16 needs rank 48, but the job has only 48 GPUs"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("(size - 1) × stride must be below the world size"), std::string::npos) << message;
}

TEST(PlacementErrors, NonPositiveArguments) {
  const Topology t = topology_preset("dgx-h100-ndr");
  std::string message = error_of([&] { (void)place_group(t, 8, 0, 1); });
  EXPECT_NE(message.find("a group of 0 ranks with stride 1: size and stride must both be at least 1"),
            std::string::npos)
      << message;
  message = error_of([&] { (void)place_group(t, 8, 2, 0); });
  EXPECT_NE(message.find("size and stride must both be at least 1"), std::string::npos) << message;
  message = error_of([&] { (void)place_group(t, 0, 1, 1); });
  EXPECT_NE(message.find("world size 0 is not positive"), std::string::npos) << message;
}

TEST(UnevenPlacement, PowersOfTwoOnNvl72Racks) {
  // Rank r sits in rack r / 72 and on tray r / 4. 128 GPUs: racks 0 (ranks 0..71) and 1 (72..127, 56 GPUs); 32 full
  // trays. 256: racks of 72, 72, 72 and 40 (256 − 216). 512: seven racks of 72 (504) and one of 8.
  const Topology nvl72 = topology_preset("gb200-nvl72");
  EXPECT_EQ(place_group(nvl72, 128, 128, 1), uneven(128, 72, 2, 4, 32, 56, 4));
  EXPECT_EQ(place_group(nvl72, 256, 256, 1), uneven(256, 72, 4, 4, 64, 40, 4));
  EXPECT_EQ(place_group(nvl72, 512, 512, 1), uneven(512, 72, 8, 4, 128, 8, 4));
  // TP 4 inside a tray: the dp group of 128 / 4 = 32 members at stride 4 holds ranks 0, 4, …, 124: 18 in rack 0
  // (0..68), 14 in rack 1 (72..124), one per tray.
  EXPECT_EQ(place_group(nvl72, 128, 32, 4), uneven(32, 18, 2, 1, 32, 14, 1));
  // The TP group itself is even: four ranks of one tray.
  EXPECT_EQ(place_group(nvl72, 128, 4, 1), expected(4, 4, 1, 4, 1));
}

TEST(UnevenPlacement, PartialLastNodeAndStridesThatStraddleDomains) {
  // Ranks 0..11 on 8-GPU nodes: 8 in node 0, 4 in node 1 (a partial last node).
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 12, 12, 1), uneven(12, 8, 2, 8, 2, 4, 4));
  // Stride 3: ranks 0, 3, 6 in domain 0 and 9 alone in domain 1.
  EXPECT_EQ(place_group(topology_preset("dgx-h100-ndr"), 16, 4, 3), uneven(4, 3, 2, 3, 2, 1, 1));
}

}  // namespace
}  // namespace fsdpsim
