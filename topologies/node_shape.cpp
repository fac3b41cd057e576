// Smaller nodes of the same platform: what a node with fewer GPUs keeps of the preset's links.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "topologies/hardware.h"

namespace fsdpsim {

Topology with_gpus_per_node(const Topology& topology, int32_t gpus) {
  const int32_t per_node = topology.gpus_per_node;
  FSDPSIM_CHECK(gpus >= 1 && gpus <= per_node,
                "a node of " + std::to_string(gpus) + " GPUs of " + topology.name + "'s " + std::to_string(per_node));
  Topology t = topology;
  t.gpus_per_node = gpus;
  // The node's own NVLink domain shrinks with it; a domain that spans nodes (multi-node NVLink racks) stays.
  if (topology.nvlink_domain_gpus <= per_node) t.nvlink_domain_gpus = gpus;
  // Its share of the node's NICs (at least one) and of its host links.
  t.nics_per_node = std::max(1, topology.nics_per_node * gpus / per_node);
  t.gpus_per_host_link = std::min(topology.gpus_per_host_link, gpus);
  t.max_nics_between_domains = std::min(topology.max_nics_between_domains, t.nics_per_node);
  // On a point-to-point mesh (xGMI) each GPU has one link to every other: k GPUs keep k − 1 of their links.
  if (topology.xgmi_mesh && per_node > 1) {
    t.nvlink_bw_bytes_per_s = topology.nvlink_bw_bytes_per_s * std::max(1, gpus - 1) / (per_node - 1);
  }
  return t;
}

}  // namespace fsdpsim
