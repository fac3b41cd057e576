#include "sim/flat_ops.h"

#include <algorithm>

#include "common/error.h"

namespace fsdpsim {

FlatOpsBuilder::FlatOpsBuilder(const Schedule& schedule) {
  const size_t n = schedule.ops.size();
  FlatOps& flat = flat_;
  flat.ops.reserve(n);
  flat.streams.resize(schedule.streams.size());
  flat.allocated_by.assign(schedule.buffers.size(), -1);
  flat.alloc_index.assign(schedule.buffers.size(), 0);
  // Every op's dependencies in op order, then (in finish) its dependents from those: flat.op_ids holds both.
  flat.op_ids.reserve(2 * n);
  flat.buffer_ids.reserve(2 * n);
}

void FlatOpsBuilder::add(const Op& op) {
  FlatOps& flat = flat_;
  FSDPSIM_CHECK(op.id.index() == flat.ops.size(), "ops are flattened in id order");
  {
    FlatOp& r = flat.ops.emplace_back();
    r.stream = op.stream.value();
    r.micro_batch = op.micro_batch;
    r.peer = op.peer.valid() ? op.peer.value() : -1;
    r.kind = op.kind;
    r.group = op.group.valid() ? op.group.value() : -1;
    auto& stream = flat.streams[op.stream.index()];
    if (!stream.empty()) flat.ops[static_cast<size_t>(stream.back())].next_on_stream = op.id.value();
    r.position = static_cast<int32_t>(stream.size());
    stream.push_back(op.id.value());
    r.deps_begin = static_cast<int32_t>(flat.op_ids.size());
    for (const OpId d : op.deps) flat.op_ids.push_back(d.value());
    r.deps_end = static_cast<int32_t>(flat.op_ids.size());
    r.allocs_begin = static_cast<int32_t>(flat.buffer_ids.size());
    for (size_t j = 0; j < op.allocs.size(); ++j) {
      flat.buffer_ids.push_back(op.allocs[j]);
      flat.allocated_by[op.allocs[j].index()] = op.id.value();
      flat.alloc_index[op.allocs[j].index()] = static_cast<int32_t>(j);
    }
    r.allocs_end = r.frees_begin = static_cast<int32_t>(flat.buffer_ids.size());
    flat.buffer_ids.insert(flat.buffer_ids.end(), op.frees.begin(), op.frees.end());
    r.frees_end = static_cast<int32_t>(flat.buffer_ids.size());
  }
}

FlatOps FlatOpsBuilder::finish(const OpCostTable& costs) && {
  FlatOps flat = std::move(flat_);
  const size_t n = flat.ops.size();
  FSDPSIM_CHECK(costs.size() == n, "one cost per flattened op");
  // Dependents: counted per op, then filled in op order after the dependencies.
  const size_t deps = flat.op_ids.size();
  std::vector<int32_t> dependents(n + 1, 0);
  for (size_t i = 0; i < deps; ++i) ++dependents[static_cast<size_t>(flat.op_ids[i]) + 1];
  for (size_t i = 0; i < n; ++i) dependents[i + 1] += dependents[i];
  for (size_t i = 0; i < n; ++i) {
    flat.ops[i].dependents_begin = static_cast<int32_t>(deps) + dependents[i];
    flat.ops[i].dependents_end = static_cast<int32_t>(deps) + dependents[i + 1];
  }
  flat.op_ids.resize(2 * deps);
  for (size_t i = 0; i < n; ++i) {
    const FlatOp& r = flat.ops[i];
    for (int32_t d = r.deps_begin; d < r.deps_end; ++d) {
      const auto dep = static_cast<size_t>(flat.op_ids[static_cast<size_t>(d)]);
      flat.op_ids[deps + static_cast<size_t>(dependents[dep]++)] = static_cast<int32_t>(i);
    }
  }
  // Costs: each op's entry, and the table's few entries as the event loop reads them.
  for (size_t i = 0; i < n; ++i) flat.ops[i].cost = costs.entry_of(i);
  for (const OpCost& cost : costs.distinct()) {
    flat.costs.push_back(FlatCost{.model = cost.model,
                                  .holds_sms = cost.collective || cost.sms > 0,
                                  .sms = cost.sms,
                                  .channels = cost.sms > 0 ? std::max(cost.sms, cost.nccl.channels) : 0,
                                  .flow_class = cost.flow_class,
                                  .compute_ns = cost.compute_ns,
                                  .latency_ns = cost.latency_ns,
                                  .bytes = cost.bytes,
                                  .cap_bytes_per_s = cost.cap_bytes_per_s});
  }
  return flat;
}

FlatOps flatten_ops(const Schedule& schedule, const OpCostTable& costs) {
  FlatOpsBuilder builder(schedule);
  for (const Op& op : schedule.ops) builder.add(op);
  return std::move(builder).finish(costs);
}

}  // namespace fsdpsim
