#include "sim/flat_ops.h"

namespace fsdpsim {

FlatOps flatten_ops(const Schedule& schedule, std::span<const OpCost> costs) {
  FlatOps flat;
  const size_t n = schedule.ops.size();
  flat.ops.resize(n);
  flat.streams.resize(schedule.streams.size());
  flat.allocated_by.assign(schedule.buffers.size(), -1);
  flat.alloc_index.assign(schedule.buffers.size(), 0);
  // Dependencies first, in op order; each op's dependents after them, counted, then filled in op order.
  std::vector<int32_t> dependents(n + 1, 0);
  size_t deps = 0, buffers = 0;
  for (const Op& op : schedule.ops) {
    deps += op.deps.size();
    buffers += op.allocs.size() + op.frees.size();
    for (const OpId d : op.deps) ++dependents[d.index() + 1];
  }
  flat.buffer_ids.reserve(buffers);
  flat.op_ids.resize(2 * deps);
  for (size_t i = 0; i < n; ++i) dependents[i + 1] += dependents[i];
  size_t at = 0;
  for (const Op& op : schedule.ops) {
    FlatOp& r = flat.ops[op.id.index()];
    r.stream = op.stream.value();
    r.micro_batch = op.micro_batch;
    r.peer = op.peer.valid() ? op.peer.value() : -1;
    r.kind = op.kind;
    auto& stream = flat.streams[op.stream.index()];
    if (!stream.empty()) flat.ops[static_cast<size_t>(stream.back())].next_on_stream = op.id.value();
    r.position = static_cast<int32_t>(stream.size());
    stream.push_back(op.id.value());
    r.deps_begin = static_cast<int32_t>(at);
    for (const OpId d : op.deps) {
      flat.op_ids[at++] = d.value();
      flat.op_ids[deps + static_cast<size_t>(dependents[d.index()]++)] = op.id.value();
    }
    r.deps_end = static_cast<int32_t>(at);
    r.allocs_begin = static_cast<int32_t>(flat.buffer_ids.size());
    for (size_t j = 0; j < op.allocs.size(); ++j) {
      flat.buffer_ids.push_back(op.allocs[j]);
      flat.allocated_by[op.allocs[j].index()] = op.id.value();
      flat.alloc_index[op.allocs[j].index()] = static_cast<int32_t>(j);
    }
    r.allocs_end = r.frees_begin = static_cast<int32_t>(flat.buffer_ids.size());
    flat.buffer_ids.insert(flat.buffer_ids.end(), op.frees.begin(), op.frees.end());
    r.frees_end = static_cast<int32_t>(flat.buffer_ids.size());
    const OpCost& cost = costs[op.id.index()];
    r.model = cost.model;
    r.holds_sms = cost.collective || cost.sms > 0;
    r.sms = cost.sms;
    r.flow_class = cost.flow_class;
    r.compute_ns = cost.compute_ns;
    r.latency_ns = cost.latency_ns;
    r.bytes = cost.bytes;
    r.cap_bytes_per_s = cost.cap_bytes_per_s;
  }
  // dependents[i] now ends op i's dependents: shift back to begins.
  for (size_t i = n; i > 0; --i) dependents[i] = dependents[i - 1];
  dependents[0] = 0;
  for (size_t i = 0; i < n; ++i) {
    flat.ops[i].dependents_begin = static_cast<int32_t>(deps) + dependents[i];
    flat.ops[i].dependents_end = static_cast<int32_t>(deps) + dependents[i + 1];
  }
  return flat;
}

}  // namespace fsdpsim
