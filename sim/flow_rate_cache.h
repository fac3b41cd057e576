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
  /// none, which is always solved).
  void solve(std::span<const Flow> flows, std::span<const int32_t> classes);
  /// The last solve's rates, by flow.
  [[nodiscard]] const std::vector<double>& rates() const { return rates_; }

 private:
  std::vector<FlowLink> links_;
  MaxMinSolver solver_;
  std::unordered_map<uint64_t, std::vector<double>> rates_of_classes_;  // by the flows' classes, 16 bits each
  std::vector<double> rates_;
};

}  // namespace fsdpsim
