#pragma once
/// The dependency graph of a schedule (deps plus stream order) and what is derived from it: a deterministic issue
/// order, a dependency cycle, and happens-before queries. Boost.Graph is an implementation detail here.

#include <cstdint>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// An order in which a host can enqueue every op (each after its deps and its stream predecessor); ties go to the
/// lower id. Empty when the graph has a cycle.
std::vector<OpId> issue_order(const Schedule& schedule);

/// One dependency cycle as a list of op ids (first == last), or empty when the graph is acyclic.
std::vector<OpId> find_cycle(const Schedule& schedule);

/// Happens-before over an acyclic schedule: a finishes before b starts, through stream order and deps.
class HappensBefore {
 public:
  /// Requires an acyclic schedule with valid references.
  explicit HappensBefore(const Schedule& schedule);
  /// The same, given the schedule's issue_order() (a caller that has it already saves building the graph again).
  HappensBefore(const Schedule& schedule, const std::vector<OpId>& order);
  /// True when op `a` finishes before op `b` starts (false for a == b).
  [[nodiscard]] bool before(OpId a, OpId b) const;

 private:
  size_t streams_ = 0;
  IdVector<OpId, StreamId> stream_of_;
  IdVector<OpId, int32_t> position_;  // 1-based position of each op on its stream
  std::vector<int32_t> clock_;        // per op, per stream: the highest position known to have finished
};

}  // namespace fsdpsim
