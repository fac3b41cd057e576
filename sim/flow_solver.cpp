#include "sim/flow_solver.h"

#include <algorithm>
#include <limits>

namespace fsdpsim {

void MaxMinSolver::solve(std::span<const FlowLink> links, std::span<const Flow> flows, std::vector<double>& rate) {
  const size_t nf = flows.size();
  const size_t nl = links.size();
  if (nf == 1) {  // the common case: one transfer alone runs at its cap or at its tightest link
    double r = flows[0].cap;
    for (const auto& [link, w] : flows[0].loads) {
      if (w > 0) r = std::min(r, links[static_cast<size_t>(link)].capacity / w);
    }
    rate.assign(1, r);
    return;
  }
  rate.assign(nf, 0.0);
  frozen_.assign(nf, false);
  used_.assign(nl, 0.0);
  weight_.assign(nl, 0.0);
  saturated_.assign(nl, false);
  size_t remaining = nf;
  constexpr double kEpsilon = 1e-9;
  while (remaining > 0) {
    // The largest common increment every unfrozen flow can still take.
    double step = std::numeric_limits<double>::infinity();
    std::fill(weight_.begin(), weight_.end(), 0.0);
    for (size_t f = 0; f < nf; ++f) {
      if (frozen_[f]) continue;
      step = std::min(step, flows[f].cap - rate[f]);
      for (const auto& [link, w] : flows[f].loads) weight_[static_cast<size_t>(link)] += w;
    }
    for (size_t l = 0; l < nl; ++l) {
      if (weight_[l] > 0) step = std::min(step, (links[l].capacity - used_[l]) / weight_[l]);
    }
    step = std::max(step, 0.0);
    for (size_t f = 0; f < nf; ++f) {
      if (frozen_[f]) continue;
      rate[f] += step;
      for (const auto& [link, w] : flows[f].loads) used_[static_cast<size_t>(link)] += w * step;
    }
    // Freeze flows at their cap and every flow crossing a saturated link.
    for (size_t l = 0; l < nl; ++l) saturated_[l] = weight_[l] > 0 && used_[l] >= links[l].capacity * (1 - kEpsilon);
    for (size_t f = 0; f < nf; ++f) {
      if (frozen_[f]) continue;
      bool freeze = rate[f] >= flows[f].cap * (1 - kEpsilon);
      for (const auto& [link, w] : flows[f].loads) freeze = freeze || (w > 0 && saturated_[static_cast<size_t>(link)]);
      if (freeze) {
        frozen_[f] = true;
        --remaining;
      }
    }
  }
}

std::vector<double> solve_max_min(std::span<const FlowLink> links, std::span<const Flow> flows) {
  MaxMinSolver solver;
  std::vector<double> rates;
  solver.solve(links, flows, rates);
  return rates;
}

}  // namespace fsdpsim
