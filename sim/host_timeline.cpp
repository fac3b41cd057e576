#include "sim/host_timeline.h"

#include <algorithm>

#include "sim/id_range.h"

namespace fsdpsim {
namespace {

TimeNs per_kernel_ns(HostDispatch dispatch, const HostCosts& host) {
  switch (dispatch) {
    case HostDispatch::eager:
      return host.eager_kernel_ns;
    case HostDispatch::compiled:
      return host.compiled_kernel_ns;
    case HostDispatch::cuda_graphs:
      return host.graph_kernel_ns;
  }
  return host.eager_kernel_ns;
}

size_t stage_index(const Schedule& s, const Op& op, size_t stages) {
  return static_cast<size_t>(std::clamp<int64_t>(s.stage_of(op), 0, static_cast<int64_t>(stages) - 1));
}

// What FSDP2's Python adds to the kernels' issue: its hooks around each parameter all-gather and gradient
// reduce-scatter on a data-parallel group (TP, CP and EP collectives are the modules' own), and its DTensor
// parameters' optimizer step per unit on the stage.
class Fsdp2HostWork {
 public:
  Fsdp2HostWork(const Schedule& s, const HostCosts& host) : host_(host) {
    fsdp_group_.assign(s.groups.size(), 0);
    if (s.info.implementation != "fsdp2") return;
    for (const GroupRole role : {GroupRole::dp_shard, GroupRole::dp_outer, GroupRole::edp, GroupRole::edp_outer}) {
      const GroupId g = s.group_index(role);
      if (g.valid()) fsdp_group_[g] = 1;
    }
    const size_t stages = static_cast<size_t>(std::max(1, s.info.pipeline_stages));
    std::vector<std::vector<char>> seen(stages, std::vector<char>(s.units.size(), 0));
    units_of_stage_.assign(stages, 0);
    for (const Op& op : s.ops) {
      if (op.unit < 0 || static_cast<size_t>(op.unit) >= s.units.size()) continue;
      const size_t stage = stage_index(s, op, stages);
      char& unit_seen = seen[stage][static_cast<size_t>(op.unit)];
      if (!unit_seen) ++units_of_stage_[stage];
      unit_seen = 1;
    }
  }

  [[nodiscard]] TimeNs cost_ns(const Schedule& s, const Op& op) const {
    if (units_of_stage_.empty()) return 0;
    if (op.kind == OpKind::all_gather || op.kind == OpKind::reduce_scatter) {
      const bool hooked = fsdp_group_.contains(op.group) && fsdp_group_[op.group];
      return hooked ? host_.fsdp2_collective_ns : 0;
    }
    if (op.kind == OpKind::optimizer) {
      return units_of_stage_[stage_index(s, op, units_of_stage_.size())] * host_.fsdp2_optimizer_unit_ns;
    }
    return 0;
  }

 private:
  const HostCosts& host_;
  IdVector<GroupId, char> fsdp_group_;
  std::vector<int64_t> units_of_stage_;  // empty: not an FSDP2 schedule
};

int32_t kernels_of(const Op& op) {
  return op.kernels > 0 ? op.kernels : default_kernels(op);
}

TimeNs issue_cost_ns(const Schedule& s, const Op& op, TimeNs kernel_ns, const Fsdp2HostWork& fsdp2) {
  return static_cast<TimeNs>(kernels_of(op)) * kernel_ns + fsdp2.cost_ns(s, op);
}

}  // namespace

TimeNs host_issue_cost_ns(const Schedule& s, const Op& op, const HostCosts& host) {
  return issue_cost_ns(s, op, per_kernel_ns(s.info.host_dispatch, host), Fsdp2HostWork(s, host));
}

HostTimeline host_timeline(const Schedule& s, const HostCosts& host) {
  const size_t stages = static_cast<size_t>(std::max(1, s.info.pipeline_stages));
  HostTimeline t{.issue_ns = {}, .walk_ns = std::vector<TimeNs>(stages, 0), .kernels = std::vector<int64_t>(stages, 0)};
  if (!host.any()) return t;
  const Fsdp2HostWork fsdp(s, host);
  const TimeNs per_kernel = per_kernel_ns(s.info.host_dispatch, host);
  t.issue_ns.assign(s.ops.size(), 0);
  // Each stage's host reaches its ops in id order: builders list them in program order (a pipeline's sends and
  // receives where the frameworks post them, builders/build_pipeline.cpp).
  for (const OpId id : ids_of(s.ops)) {
    const Op& op = s.ops[id];
    const size_t stage = stage_index(s, op, stages);
    t.kernels[stage] += kernels_of(op);
    t.walk_ns[stage] += issue_cost_ns(s, op, per_kernel, fsdp);
    t.issue_ns[id] = t.walk_ns[stage];
  }
  if (std::all_of(t.walk_ns.begin(), t.walk_ns.end(), [](TimeNs w) { return w == 0; })) t.issue_ns.clear();
  return t;
}

}  // namespace fsdpsim
