#include "job/placement_check.h"

#include <string>

#include "common/error.h"

namespace fsdpsim {
namespace {

// The key that sizes each group the builders create (BuildContext::group): the data-parallel groups are what is left
// of the world after TP, CP and EP, split by the HSDP outer size.
std::string key_of_group(const std::string& group, const FsdpConfig& config) {
  if (group == "tp" || group == "cp" || group == "ep" || group == "etp") return group;
  if (group == "edp") return "ep";
  return config.origin.count("num_distributed_optimizer_instances") ? "num_distributed_optimizer_instances" : "nodes";
}

}  // namespace

void check_group_placements(const Schedule& schedule, const Topology& topology, const FsdpConfig& config) {
  for (const Group& g : schedule.groups) {
    try {
      (void)place_group(topology, schedule.info.world_size, g.size, g.stride);
    } catch (const ConfigError& e) {
      const std::string key = key_of_group(g.name, config);
      throw ConfigError(config.where(key), key, "this makes the " + g.name + " group unplaceable: " + e.problem(),
                        e.fix());
    }
  }
}

}  // namespace fsdpsim
