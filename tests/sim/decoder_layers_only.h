#pragma once
// The pipeline tests' timing: only the decoder layers' forward and backward computes take time, as the test says, so
// a step and its bubble follow from the schedule's order alone and can be derived by hand.

#include <functional>
#include <vector>

#include "schedule/ir.h"
#include "sim/engine.h"
#include "sim/op_costs.h"
#include "topologies/hardware.h"

namespace fsdpsim::testing {

/// Runs `s` with every decoder-layer forward or backward compute op taking `ns_of(op)` and every other op free (and
/// no host issue time).
inline RunRecord run_decoder_layers_only(const Schedule& s, const std::function<TimeNs(const Op&)>& ns_of) {
  std::vector<OpCost> costs(s.ops.size());
  for (const Op& op : s.ops) {
    const bool layer = op.unit >= 1 && op.unit + 1 < static_cast<int32_t>(s.units.size());
    if (op.kind != OpKind::compute || !layer || op.gemms.empty()) continue;
    if (op.phase != Phase::fwd && op.phase != Phase::bwd) continue;
    OpCost& cost = costs[op.id.index()];
    cost.model = CostModel::compute;
    cost.compute_ns = ns_of(op);
    cost.standalone_ns = cost.compute_ns;
  }
  Topology t = topology_preset("dgx-h100-ndr");
  t.gpu.host = {};  // the host issues every op at once
  return run_schedule_with_costs(s, t, SimOptions{}, std::move(costs), link_capacities(t, s.info.pipeline_stages));
}

}  // namespace fsdpsim::testing
