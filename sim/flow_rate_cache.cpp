#include "sim/flow_rate_cache.h"

namespace fsdpsim {

FlowRateCache::FlowRateCache(std::span<const double> link_capacities_bytes_per_s) {
  for (const double cap : link_capacities_bytes_per_s) links_.push_back(FlowLink{cap});
}

void FlowRateCache::solve(std::span<const Flow> flows, std::span<const int32_t> classes) {
  constexpr size_t kMaxKeyedFlows = 4;
  constexpr int32_t kClassLimit = 1 << 16;
  constexpr size_t kMaxRememberedSets = 1 << 14;
  // Sets of two to four flows are keyed here; any other set goes to the solver, which keeps its own memory of
  // answers by their exact inputs.
  uint64_t key = 0;
  bool keyed = flows.size() >= 2 && flows.size() <= kMaxKeyedFlows;
  for (size_t f = 0; keyed && f < flows.size(); ++f) {
    const int32_t c = classes[f];
    keyed = c >= 0 && c + 1 < kClassLimit;
    key = (key << 16) | static_cast<uint64_t>(c + 1);
  }
  if (!keyed) {
    solver_.solve(links_, flows, rates_);
    return;
  }
  if (const auto hit = rates_of_classes_.find(key); hit != rates_of_classes_.end()) {
    rates_.assign(hit->second.begin(), hit->second.end());
    return;
  }
  solver_.solve(links_, flows, rates_);
  if (rates_of_classes_.size() >= kMaxRememberedSets) rates_of_classes_.clear();  // bounded, like the solver's
  rates_of_classes_.emplace(key, rates_);
}

}  // namespace fsdpsim
