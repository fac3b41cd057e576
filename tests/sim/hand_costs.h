#pragma once
// Op costs given by hand, for tests of the engine's semantics where every expected time is simple arithmetic.

#include "sim/op_costs.h"

namespace fsdpsim::testing {

/// A kernel of `ns` at full speed.
inline OpCost compute_cost(TimeNs ns) {
  OpCost c;
  c.model = CostModel::compute;
  c.compute_ns = ns;
  c.standalone_ns = ns;
  return c;
}

}  // namespace fsdpsim::testing
