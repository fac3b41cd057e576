// The engine's entry points: cost and flatten the ops, run the event loop (sim/event_loop.h) and complete the
// prediction with what the cost models chose.
#include "sim/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "common/error.h"
#include "sim/event_loop.h"
#include "sim/flat_ops.h"
#include "sim/host_timeline.h"
#include "sim/id_range.h"
#include "sim/memory_overhead_model.h"

namespace fsdpsim {
namespace {

// What the cost model chose for each collective, as the run record keeps it. Names are looked up once per algorithm
// and protocol, not per op: a 16-micro-batch 405B step has 36k ops.
IdVector<OpId, CollectiveChoice> collective_choices(const OpCostTable& costs) {
  std::array<std::string_view, 8> algo_names{};
  for (const NcclAlgo a : all_nccl_algos()) algo_names.at(static_cast<size_t>(a)) = to_string(a);
  std::array<std::string_view, 3> proto_names{};
  for (const NcclProto p : all_nccl_protos()) proto_names.at(static_cast<size_t>(p)) = to_string(p);
  IdVector<CostId, CollectiveChoice> of_entry;
  for (const OpCost& cost : costs.distinct()) {
    const CollectiveCost& c = cost.nccl;
    of_entry.push_back(cost.collective ? CollectiveChoice{.algorithm = algo_names[static_cast<size_t>(c.algo)],
                                                          .protocol = proto_names[static_cast<size_t>(c.proto)],
                                                          .busbw_bytes_per_s = c.bus_bw_bytes_per_s}
                                       : CollectiveChoice{});
  }
  IdVector<OpId, CollectiveChoice> choices(costs.size());
  for (const OpId op : ids_of(choices)) choices[op] = of_entry[costs.entry_of(op)];
  return choices;
}

// A schedule's op costs and its flattened ops.
struct CostedOps {
  OpCostTable costs;
  FlatOps flat;
};

// Costs and flattens the ops on one walk: the IR's ops and their lists are tens of megabytes in a large schedule,
// read from memory on each walk.
CostedOps cost_and_flatten(const Schedule& s, const Topology& t) {
  OpCostBuilder costs(s, t);
  FlatOpsBuilder flat(s);
  for (const Op& op : s.ops) {
    costs.add(op);
    flat.add(op);
  }
  CostedOps out{.costs = std::move(costs).finish(), .flat = {}};
  out.flat = std::move(flat).finish(out.costs);
  return out;
}

// Runs the loop over the costed ops and completes its prediction: the collectives' algorithms, the overheads outside
// the allocator, the straggler and the host's walk.
RunRecord simulate(const Schedule& s, const Topology& t, const SimOptions& o, CostedOps costed,
                   std::span<const double> link_caps) {
  FSDPSIM_CHECK(costed.costs.size() == s.ops.size() && costed.flat.ops.size() == s.ops.size(), "one cost per op");
  const MemoryOverheads overheads = memory_overheads(s, t, costed.flat);
  HostTimeline host = host_timeline(s, t.gpu.host);
  RunRecord result = EventLoop(s, t, o, costed.costs, std::move(costed.flat), overheads, host, link_caps).run();
  Prediction& prediction = std::get<Prediction>(result.origin);
  prediction.collectives = collective_choices(costed.costs);
  prediction.overheads = overheads;
  prediction.straggler = o.straggler;
  if (!host.issue_ns.empty()) {
    prediction.host_step_ns = host.walk_ns.front();
    prediction.host_kernels_per_step = host.kernels.front();
    prediction.host_issue_ns = std::move(host.issue_ns);  // the run is over: the loop needs them no more
  }
  return result;
}

}  // namespace

Topology with_straggler(const Topology& topology, const Straggler& straggler) {
  Topology t = topology;
  const double c = straggler.compute_slowdown;
  t.gpu.dense_bf16_flops_per_s /= c;
  t.gpu.dense_fp8_flops_per_s /= c;
  t.gpu.hbm_bw_bytes_per_s /= c;
  t.gpu.kernel_overhead_ns = static_cast<TimeNs>(std::llround(static_cast<double>(t.gpu.kernel_overhead_ns) * c));
  t.nic_bw_bytes_per_s /= straggler.nic_slowdown;
  return t;
}

RunRecord run_schedule(const Schedule& schedule, const Topology& topology, const SimOptions& options) {
  // Without a straggler every factor is 1 and the topology is the one given, exactly.
  const Topology rank = with_straggler(topology, options.straggler);
  return simulate(schedule, rank, options, cost_and_flatten(schedule, rank),
                  link_capacities(rank, std::max(1, schedule.info.pipeline_stages)));
}

RunRecord run_schedule_with_costs(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                                  std::vector<OpCost> costs, std::vector<double> link_caps) {
  OpCostTable table(std::move(costs));
  FlatOps flat = flatten_ops(schedule, table);
  return simulate(schedule, topology, options, CostedOps{.costs = std::move(table), .flat = std::move(flat)},
                  link_caps);
}

}  // namespace fsdpsim
