#pragma once
/// The max-min rates of the running transfers (sim/flow_solver.h), remembered by the flows' classes: the same few
/// sets of concurrent collectives recur in every layer and micro-batch, and a set of at most four alike-classed flows
/// (OpCost::flow_class names the solver's exact inputs: cap and link loads) is looked up instead of solved, which
/// gives the very rates the solver would.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/flow_solver.h"

namespace fsdpsim {

/// The rate assignment's solver with its memory of answers.
class FlowRateCache {
 public:
  /// `link_capacities_bytes_per_s`: by link index, as the flows' loads name them.
  explicit FlowRateCache(std::span<const double> link_capacities_bytes_per_s);

  /// Solves `flows` into rates() (bytes per second, one per flow); `classes`: each flow's OpCost::flow_class (-1:
  /// none, which is always solved). Inline: the engine calls it at every change of the running transfers.
  void solve(std::span<const Flow> flows, std::span<const int32_t> classes);
  /// The last solve's rates, by flow.
  [[nodiscard]] const std::vector<double>& rates() const { return rates_; }

 private:
  std::vector<FlowLink> links_;
  MaxMinSolver solver_;
  std::unordered_map<uint64_t, std::vector<double>> rates_of_classes_;  // by the flows' classes, 16 bits each
  std::vector<double> rates_;
};

inline void FlowRateCache::solve(std::span<const Flow> flows, std::span<const int32_t> classes) {
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
