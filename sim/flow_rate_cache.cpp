#include "sim/flow_rate_cache.h"

namespace fsdpsim {

FlowRateCache::FlowRateCache(std::span<const double> link_capacities_bytes_per_s) {
  for (const double cap : link_capacities_bytes_per_s) links_.push_back(FlowLink{cap});
}

}  // namespace fsdpsim
