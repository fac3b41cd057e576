#include "schedule/ir/ir.h"

#include <array>
#include <utility>

namespace fsdpsim {
namespace {

template <typename E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <typename E, size_t N>
std::optional<E> parse_name(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text) {
  for (const auto& [e, name] : table) {
    if (name == text) return e;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::vector<E> values_of(const std::array<std::pair<E, std::string_view>, N>& table) {
  std::vector<E> out;
  for (const auto& entry : table) out.push_back(entry.first);
  return out;
}

constexpr std::array<std::pair<OpKind, std::string_view>, 8> kOpKinds{{
    {OpKind::all_gather, "all_gather"},
    {OpKind::reduce_scatter, "reduce_scatter"},
    {OpKind::all_reduce, "all_reduce"},
    {OpKind::all_to_all, "all_to_all"},
    {OpKind::compute, "compute"},
    {OpKind::optimizer, "optimizer"},
    {OpKind::copy, "copy"},
    {OpKind::sync, "sync"},
}};

constexpr std::array<std::pair<Phase, std::string_view>, 4> kPhases{{
    {Phase::fwd, "fwd"},
    {Phase::bwd, "bwd"},
    {Phase::recompute, "recompute"},
    {Phase::optim, "optim"},
}};

constexpr std::array<std::pair<BufferCategory, std::string_view>, 9> kCategories{{
    {BufferCategory::param_shard, "param_shard"},
    {BufferCategory::main_weight, "main_weight"},
    {BufferCategory::optimizer_state, "optimizer_state"},
    {BufferCategory::grad_shard, "grad_shard"},
    {BufferCategory::unsharded_grad, "unsharded_grad"},
    {BufferCategory::gathered_param, "gathered_param"},
    {BufferCategory::activation, "activation"},
    {BufferCategory::workspace, "workspace"},
    {BufferCategory::comm_staging, "comm_staging"},
}};

constexpr std::array<std::pair<GroupRole, std::string_view>, 8> kGroupRoles{{
    {GroupRole::tp, "tp"},
    {GroupRole::cp, "cp"},
    {GroupRole::ep, "ep"},
    {GroupRole::etp, "etp"},
    {GroupRole::dp_shard, "dp_shard"},
    {GroupRole::dp_outer, "dp_outer"},
    {GroupRole::edp, "edp"},
    {GroupRole::edp_outer, "edp_outer"},
}};

constexpr std::array<std::pair<ReduceOp, std::string_view>, 4> kReduceOps{{
    {ReduceOp::none, "none"},
    {ReduceOp::sum, "sum"},
    {ReduceOp::avg, "avg"},
    {ReduceOp::premul_sum, "premul_sum"},
}};

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

bool is_collective(OpKind kind) {
  return kind == OpKind::all_gather || kind == OpKind::reduce_scatter || kind == OpKind::all_reduce ||
         kind == OpKind::all_to_all;
}

std::string_view to_string(OpKind v) {
  return name_of(kOpKinds, v);
}
std::string_view to_string(Phase v) {
  return name_of(kPhases, v);
}
std::string_view to_string(BufferCategory v) {
  return name_of(kCategories, v);
}
std::string_view to_string(ReduceOp v) {
  return name_of(kReduceOps, v);
}

std::string_view to_string(GroupRole v) {
  return name_of(kGroupRoles, v);
}
std::optional<OpKind> parse_op_kind(std::string_view text) {
  return parse_name(kOpKinds, text);
}
std::optional<Phase> parse_phase(std::string_view text) {
  return parse_name(kPhases, text);
}
std::optional<BufferCategory> parse_buffer_category(std::string_view text) {
  return parse_name(kCategories, text);
}
std::optional<ReduceOp> parse_reduce_op(std::string_view text) {
  return parse_name(kReduceOps, text);
}

std::optional<GroupRole> parse_group_role(std::string_view text) {
  return parse_name(kGroupRoles, text);
}

const std::vector<OpKind>& all_op_kinds() {
  static const std::vector<OpKind> values = values_of(kOpKinds);
  return values;
}
const std::vector<Phase>& all_phases() {
  static const std::vector<Phase> values = values_of(kPhases);
  return values;
}
const std::vector<BufferCategory>& all_buffer_categories() {
  static const std::vector<BufferCategory> values = values_of(kCategories);
  return values;
}
const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> values = values_of(kReduceOps);
  return values;
}

}  // namespace fsdpsim
