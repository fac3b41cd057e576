#pragma once
/// Max-min fair sharing of link bandwidth among concurrent transfers (SimGrid's LMM idea, src/kernel/lmm/): each
/// transfer loads some links by a weight per byte and has its own cap; rates are raised together until a link is
/// full or a transfer reaches its cap, those are frozen, and the rest continue. Re-solved whenever the set of
/// running transfers changes.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fsdpsim {

/// A shared resource (this GPU's NVLink port, its NIC share, its host link).
struct FlowLink {
  double capacity = 0;  ///< bytes per second
};

/// One (link index, wire bytes per flow byte) pair.
using LinkLoad = std::pair<int32_t, double>;

/// A transfer: its own cap and the weight it puts on each link per byte of its rate (a view: the caller owns the
/// loads).
struct Flow {
  double cap = 0;                   ///< bytes per second when alone (its bus bandwidth)
  std::span<const LinkLoad> loads;  ///< (link index, wire bytes per flow byte)
};

/// Solves max-min fair rates (bytes per second) into `rates`, one per flow; flows that load no link run at their cap.
/// Reuses its scratch space between calls (the engine calls it at every change of the running transfers).
class MaxMinSolver {
 public:
  void solve(std::span<const FlowLink> links, std::span<const Flow> flows, std::vector<double>& rates);

 private:
  void solve_fresh(std::span<const FlowLink> links, std::span<const Flow> flows, std::vector<double>& rates);

  /// The engine meets the same few sets of concurrent transfers thousands of times a step (a layer's collectives
  /// repeat in every layer and micro-batch), so solutions are kept by their exact inputs: a hit returns the very
  /// doubles a fresh solve would. Bounded, and dropped when the links change.
  struct KeyHash {
    size_t operator()(const std::vector<uint64_t>& key) const;
  };
  static constexpr size_t kMaxMemoEntries = 1 << 14;
  std::vector<double> memo_capacities_;
  std::unordered_map<std::vector<uint64_t>, std::vector<double>, KeyHash> memo_;
  std::vector<uint64_t> key_;

  std::vector<bool> frozen_;
  std::vector<double> used_, weight_;
  std::vector<bool> saturated_;
};

/// Convenience: a fresh solver, the rates returned.
std::vector<double> solve_max_min(std::span<const FlowLink> links, std::span<const Flow> flows);

}  // namespace fsdpsim
