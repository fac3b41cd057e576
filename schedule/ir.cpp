#include "schedule/ir.h"

#include <algorithm>

#include "common/enum_names.h"
#include "common/error.h"

namespace fsdpsim {
namespace {

constexpr EnumNames<OpKind, kOpKindCount> kOpKinds{{{
    {OpKind::all_gather, "all_gather"},
    {OpKind::reduce_scatter, "reduce_scatter"},
    {OpKind::all_reduce, "all_reduce"},
    {OpKind::all_to_all, "all_to_all"},
    {OpKind::compute, "compute"},
    {OpKind::optimizer, "optimizer"},
    {OpKind::copy, "copy"},
    {OpKind::sync, "sync"},
    {OpKind::send, "send"},
    {OpKind::recv, "recv"},
}}};

constexpr EnumNames<Phase, 4> kPhases{{{
    {Phase::fwd, "fwd"},
    {Phase::bwd, "bwd"},
    {Phase::recompute, "recompute"},
    {Phase::optim, "optim"},
}}};

constexpr EnumNames<BufferCategory, 10> kCategories{{{
    {BufferCategory::param_shard, "param_shard"},
    {BufferCategory::main_weight, "main_weight"},
    {BufferCategory::optimizer_state, "optimizer_state"},
    {BufferCategory::grad_shard, "grad_shard"},
    {BufferCategory::unsharded_grad, "unsharded_grad"},
    {BufferCategory::weight_grad, "weight_grad"},
    {BufferCategory::gathered_param, "gathered_param"},
    {BufferCategory::activation, "activation"},
    {BufferCategory::workspace, "workspace"},
    {BufferCategory::comm_staging, "comm_staging"},
}}};

constexpr EnumNames<StreamRole, 11> kStreamRoles{{{
    {StreamRole::compute, "compute"},
    {StreamRole::ag, "ag"},
    {StreamRole::rs, "rs"},
    {StreamRole::ag_copy_in, "ag_copy_in"},
    {StreamRole::outer_rs, "outer_rs"},
    {StreamRole::outer_ag, "outer_ag"},
    {StreamRole::outer_ar, "outer_ar"},
    {StreamRole::offload, "offload"},
    {StreamRole::tp_async, "tp_async"},
    {StreamRole::tp_overlap, "tp_overlap"},
    {StreamRole::ep_fused, "ep_fused"},
}}};
static_assert(kStreamRoles.name(StreamRole::compute) == kComputeStream);

constexpr EnumNames<GroupRole, 10> kGroupRoles{{{
    {GroupRole::tp, "tp"},
    {GroupRole::cp, "cp"},
    {GroupRole::ep, "ep"},
    {GroupRole::etp, "etp"},
    {GroupRole::dp_shard, "dp_shard"},
    {GroupRole::dp_outer, "dp_outer"},
    {GroupRole::edp, "edp"},
    {GroupRole::edp_outer, "edp_outer"},
    {GroupRole::pp, "pp"},
    {GroupRole::embd, "embd"},
}}};

constexpr EnumNames<ReduceOp, 4> kReduceOps{{{
    {ReduceOp::none, "none"},
    {ReduceOp::sum, "sum"},
    {ReduceOp::avg, "avg"},
    {ReduceOp::premul_sum, "premul_sum"},
}}};

}  // namespace

int64_t Op::gemm_flops() const {
  int64_t total = 0;
  for (const auto& g : gemms) total += 2 * g.m * g.n * g.k * g.batch;
  return total;
}

StreamId Schedule::stream_index(std::string_view name) const {
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].name == name) return StreamId(static_cast<int32_t>(i));
  }
  return StreamId::none();
}

StreamId Schedule::compute_stream(int32_t stage) const {
  const int32_t stages = std::max(stage + 1, info.pipeline_stages);
  const StreamId id = stream_index(stage_stream_name(kComputeStream, stage, stages));
  return id.valid() && streams[id].stage == stage ? id : StreamId::none();
}

void reorder_ops(Schedule& schedule, const std::vector<OpId>& order) {
  const size_t n = schedule.ops.size();
  FSDPSIM_CHECK(order.size() == n, "reorder_ops: the order lists every op once");
  std::vector<OpId> renamed(n, OpId::none());
  for (size_t i = 0; i < n; ++i) {
    FSDPSIM_CHECK(schedule.ops.contains(order[i]) && !renamed[order[i].index()].valid(),
                  "reorder_ops: the order lists every op once");
    renamed[order[i].index()] = OpId(static_cast<int32_t>(i));
  }
  const auto rename = [&](OpId id) { return id.valid() && id.index() < n ? renamed[id.index()] : id; };
  IdVector<OpId, Op> ops;
  ops.reserve(n);
  for (const OpId old : order) {
    Op op = std::move(schedule.ops[old]);
    op.id = rename(op.id);
    for (OpId& d : op.deps) d = rename(d);
    op.peer = rename(op.peer);
    ops.push_back(std::move(op));
  }
  schedule.ops = std::move(ops);
}

std::string stage_stream_name(std::string_view role, int32_t stage, int32_t stages) {
  if (stages <= 1) return std::string(role);
  return "stage" + std::to_string(stage) + "." + std::string(role);
}

GroupId Schedule::group_index(GroupRole role) const {
  return group_index(to_string(role));
}

GroupId Schedule::group_index(std::string_view name) const {
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].name == name) return GroupId(static_cast<int32_t>(i));
  }
  return GroupId::none();
}

int64_t Schedule::persistent_bytes() const {
  int64_t total = 0;
  for (const auto& b : buffers) {
    if (b.persistent) total += b.size_bytes;
  }
  return total;
}

int64_t collective_size_bytes(const Op& op) {
  switch (op.kind) {
    case OpKind::all_gather:
      return op.recv_bytes;
    case OpKind::reduce_scatter:
      return op.send_bytes;
    case OpKind::all_reduce:
      return op.send_bytes;
    case OpKind::all_to_all:
      return op.send_bytes;
    default:
      return 0;
  }
}

int32_t default_kernels(const Op& op) {
  switch (op.kind) {
    case OpKind::sync:
      return 0;
    case OpKind::compute:
      return static_cast<int32_t>(op.gemms.size()) + (op.bytes_touched > 0 ? 1 : 0);
    default:
      return 1;
  }
}

bool is_collective(OpKind kind) {
  return kind == OpKind::all_gather || kind == OpKind::reduce_scatter || kind == OpKind::all_reduce ||
         kind == OpKind::all_to_all;
}

std::string_view to_string(OpKind v) {
  return kOpKinds.name(v);
}
std::string_view to_string(Phase v) {
  return kPhases.name(v);
}
std::string_view to_string(BufferCategory v) {
  return kCategories.name(v);
}
std::string_view to_string(ReduceOp v) {
  return kReduceOps.name(v);
}

std::string_view to_string(GroupRole v) {
  return kGroupRoles.name(v);
}

std::string_view to_string(StreamRole v) {
  return kStreamRoles.name(v);
}
std::string_view to_string(Fp8GemmScaling v) {
  return kFp8GemmScalingNames.name(v);
}
std::string_view to_string(HostDispatch v) {
  return kHostDispatchNames.name(v);
}
std::string_view to_string(AttentionKernel v) {
  return kAttentionKernelNames.name(v);
}
std::optional<OpKind> parse_op_kind(std::string_view text) {
  return kOpKinds.parse(text);
}
std::optional<Phase> parse_phase(std::string_view text) {
  return kPhases.parse(text);
}
std::optional<BufferCategory> parse_buffer_category(std::string_view text) {
  return kCategories.parse(text);
}
std::optional<ReduceOp> parse_reduce_op(std::string_view text) {
  return kReduceOps.parse(text);
}

std::optional<GroupRole> parse_group_role(std::string_view text) {
  return kGroupRoles.parse(text);
}

const std::vector<OpKind>& all_op_kinds() {
  static const std::vector<OpKind> values = kOpKinds.values();
  return values;
}
const std::vector<Phase>& all_phases() {
  static const std::vector<Phase> values = kPhases.values();
  return values;
}
const std::vector<BufferCategory>& all_buffer_categories() {
  static const std::vector<BufferCategory> values = kCategories.values();
  return values;
}
const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> values = kReduceOps.values();
  return values;
}

}  // namespace fsdpsim
