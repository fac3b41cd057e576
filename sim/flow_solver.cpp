#include "sim/flow_solver.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

namespace fsdpsim {

size_t MaxMinSolver::KeyHash::operator()(const std::vector<uint64_t>& key) const {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over 64-bit words
  for (const uint64_t word : key) h = (h ^ word) * 1099511628211ULL;
  return static_cast<size_t>(h);
}

void MaxMinSolver::solve(std::span<const FlowLink> links, std::span<const Flow> flows, std::vector<double>& rate) {
  const size_t nf = flows.size();
  if (nf == 1) {  // the common case: one transfer alone runs at its cap or at its tightest link
    double r = flows[0].cap;
    for (const auto& [link, w] : flows[0].loads) {
      if (w > 0) r = std::min(r, links[static_cast<size_t>(link)].capacity / w);
    }
    rate.assign(1, r);
    return;
  }
  bool same_links = memo_capacities_.size() == links.size();
  for (size_t l = 0; same_links && l < links.size(); ++l) same_links = memo_capacities_[l] == links[l].capacity;
  if (!same_links || memo_.size() >= kMaxMemoEntries) {
    memo_.clear();
    memo_capacities_.clear();
    for (const FlowLink& link : links) memo_capacities_.push_back(link.capacity);
  }
  key_.clear();
  for (const Flow& f : flows) {
    key_.push_back(std::bit_cast<uint64_t>(f.cap));
    key_.push_back(f.loads.size());
    for (const auto& [link, w] : f.loads) {
      key_.push_back(static_cast<uint64_t>(link));
      key_.push_back(std::bit_cast<uint64_t>(w));
    }
  }
  if (const auto hit = memo_.find(key_); hit != memo_.end()) {
    rate = hit->second;
    return;
  }
  solve_fresh(links, flows, rate);
  memo_.emplace(key_, rate);
}

void MaxMinSolver::solve_fresh(std::span<const FlowLink> links, std::span<const Flow> flows,
                               std::vector<double>& rate) {
  const size_t nf = flows.size();
  const size_t nl = links.size();
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
