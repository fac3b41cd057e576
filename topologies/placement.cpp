// Rank placement: how a process group's members spread over physical nodes and NVLink domains. NCCL's cost model
// depends on both: "nodes" and "local ranks" are NVLink domains (MNNVL fuses a GB200 rack into one), while NIC
// sharing is per physical node (docs/architecture.md §6.1).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "common/error.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

// How members 0, stride, 2·stride, … spread over consecutive blocks of `block_gpus` ranks (nodes or domains).
struct Spread {
  int32_t blocks = 0;                                    // blocks that hold at least one member
  int32_t most = 0;                                      // members in the fullest block
  int32_t fewest = std::numeric_limits<int32_t>::max();  // members in the emptiest occupied block
};

Spread spread(int32_t size, int32_t stride, int32_t block_gpus) {
  // Members come in increasing rank order, so their block index never decreases: count the runs.
  Spread s;
  int64_t current_block = -1;
  int32_t in_block = 0;
  auto close_block = [&] {
    if (in_block == 0) return;
    s.most = std::max(s.most, in_block);
    s.fewest = std::min(s.fewest, in_block);
  };
  for (int64_t i = 0; i < size; ++i) {
    const int64_t block = i * stride / block_gpus;
    if (block != current_block) {
      close_block();
      current_block = block;
      in_block = 0;
      ++s.blocks;
    }
    ++in_block;
  }
  close_block();
  return s;
}

void check_group(int32_t world_size, int32_t size, int32_t stride) {
  const std::string group = "a group of " + std::to_string(size) + " ranks with stride " + std::to_string(stride);
  if (world_size < 1) {
    throw ConfigError("world size " + std::to_string(world_size) + " is not positive (it must be at least 1 GPU)");
  }
  if (size < 1 || stride < 1) {
    throw ConfigError(group + ": size and stride must both be at least 1");
  }
  const int64_t last_rank = int64_t{size - 1} * stride;
  if (last_rank >= world_size) {
    throw ConfigError(group + " needs rank " + std::to_string(last_rank) + ", but the job has only " +
                      std::to_string(world_size) + " GPUs (ranks 0.." + std::to_string(world_size - 1) +
                      "); (size - 1) × stride must be below the world size");
  }
}

}  // namespace

GroupPlacement place_group(const Topology& topology, int32_t world_size, int32_t size, int32_t stride) {
  FSDPSIM_CHECK(topology.gpus_per_node > 0 && topology.nvlink_domain_gpus > 0,
                "topology '" + topology.name + "' has no GPUs per node or per NVLink domain");
  check_group(world_size, size, stride);
  const Spread domains = spread(size, stride, topology.nvlink_domain_gpus);
  const Spread nodes = spread(size, stride, topology.gpus_per_node);
  GroupPlacement placement;
  placement.size = size;
  placement.ranks_per_domain = domains.most;
  placement.domains = domains.blocks;
  placement.ranks_per_node = nodes.most;
  placement.nodes = nodes.blocks;
  placement.fewest_ranks_per_domain = domains.fewest;
  placement.fewest_ranks_per_node = nodes.fewest;
  return placement;
}

}  // namespace fsdpsim
