#include "sim/flat_ops.h"

#include <algorithm>

#include "common/error.h"
#include "sim/id_range.h"

namespace fsdpsim {

FlatOpsBuilder::FlatOpsBuilder(const Schedule& schedule) {
  const size_t n = schedule.ops.size();
  FlatOps& flat = flat_;
  flat.ops.reserve(n);
  flat.streams.resize(schedule.streams.size());
  flat.allocated_by.assign(schedule.buffers.size(), OpId::none());
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
    r.stream = op.stream;
    r.micro_batch = op.micro_batch;
    // Any negative id names nothing: kept as none(), which is what the engine tests for.
    r.peer = op.peer.valid() ? op.peer : OpId::none();
    r.kind = op.kind;
    r.group = op.group.valid() ? op.group : GroupId::none();
    auto& stream = flat.streams[op.stream];
    if (!stream.empty()) flat.ops[stream.back()].next_on_stream = op.id;
    r.position = static_cast<int32_t>(stream.size());
    stream.push_back(op.id);
    r.deps_begin = static_cast<int32_t>(flat.op_ids.size());
    flat.op_ids.insert(flat.op_ids.end(), op.deps.begin(), op.deps.end());
    r.deps_end = static_cast<int32_t>(flat.op_ids.size());
    r.allocs_begin = static_cast<int32_t>(flat.buffer_ids.size());
    for (size_t j = 0; j < op.allocs.size(); ++j) {
      flat.buffer_ids.push_back(op.allocs[j]);
      flat.allocated_by[op.allocs[j]] = op.id;
      flat.alloc_index[op.allocs[j]] = static_cast<int32_t>(j);
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
  // Dependents: counted per op (each op's count one place after it: a running sum then gives each op's first), then
  // filled in op order after the dependencies.
  const size_t deps = flat.op_ids.size();
  std::vector<int32_t> dependents(n + 1, 0);
  for (size_t i = 0; i < deps; ++i) ++dependents[flat.op_ids[i].index() + 1];
  for (size_t i = 0; i < n; ++i) dependents[i + 1] += dependents[i];
  for (const OpId op : ids_of(flat.ops)) {
    flat.ops[op].dependents_begin = static_cast<int32_t>(deps) + dependents[op.index()];
    flat.ops[op].dependents_end = static_cast<int32_t>(deps) + dependents[op.index() + 1];
  }
  flat.op_ids.resize(2 * deps);
  for (const OpId op : ids_of(flat.ops)) {
    const FlatOp& r = flat.ops[op];
    for (int32_t d = r.deps_begin; d < r.deps_end; ++d) {
      flat.op_ids[deps + static_cast<size_t>(dependents[flat.op_at(d).index()]++)] = op;
    }
  }
  // Costs: each op's entry, and the table's few entries as the event loop reads them.
  for (const OpId op : ids_of(flat.ops)) flat.ops[op].cost = costs.entry_of(op);
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
