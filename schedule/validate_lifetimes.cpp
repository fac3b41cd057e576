// The rules that need the happens-before order: buffers used within their lifetime, gradients reduced after backward.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "schedule/validate_rules.h"

namespace fsdpsim::validation {
namespace {

void check_uses(const HappensBefore& hb, BufferId b, OpId alloc, OpId free, const std::vector<OpId>& readers,
                const std::vector<OpId>& writers, Problems& problems) {
  if (alloc != free && !hb.before(alloc, free)) {
    problems.report("buffer-lifetime", problems.describe_buffer(b) + " may be freed by " + problems.describe_op(free) +
                                           " before " + problems.describe_op(alloc) + " allocates it");
  }
  const auto in_lifetime = [&](OpId op) {
    return (op == alloc || hb.before(alloc, op)) && (op == free || hb.before(op, free));
  };
  for (const auto* users : {&readers, &writers}) {
    for (const OpId op : *users) {
      if (!in_lifetime(op)) {
        problems.report("use-after-free", problems.describe_op(op) + " uses " + problems.describe_buffer(b) +
                                              " outside its lifetime (" + problems.describe_op(alloc) +
                                              " allocates it, " + problems.describe_op(free) +
                                              " frees it; add a dependency)");
      }
    }
  }
  for (const OpId r : readers) {
    bool written = false;
    for (const OpId w : writers) written = written || (w != r && hb.before(w, r));
    if (!written) {
      problems.report("read-before-write",
                      problems.describe_op(r) + " reads " + problems.describe_buffer(b) +
                          " but no op that writes it is guaranteed to finish first (missing dependency "
                          "on the op that fills it, e.g. its all-gather)");
    }
  }
}

}  // namespace

void check_buffer_lifetimes(const Schedule& s, const HappensBefore& hb, Problems& problems) {
  const size_t nb = s.buffers.size();
  IdVector<BufferId, std::vector<OpId>> allocs(nb), frees(nb), readers(nb), writers(nb);
  for (const Op& op : s.ops) {
    for (const BufferId b : op.allocs) allocs[b].push_back(op.id);
    for (const BufferId b : op.frees) frees[b].push_back(op.id);
    for (const BufferId b : op.reads) readers[b].push_back(op.id);
    for (const BufferId b : op.writes) writers[b].push_back(op.id);
  }
  for (size_t i = 0; i < nb; ++i) {
    const BufferId b(static_cast<int32_t>(i));
    if (s.buffers[i].persistent) {
      if (!allocs[i].empty() || !frees[i].empty()) {
        problems.report("buffer-lifetime",
                        problems.describe_buffer(b) + " is persistent but an op allocates or frees it");
      }
      continue;
    }
    if (allocs[i].size() != 1 || frees[i].size() != 1) {
      problems.report("buffer-lifetime", problems.describe_buffer(b) + " is allocated " +
                                             std::to_string(allocs[i].size()) + " times and freed " +
                                             std::to_string(frees[i].size()) +
                                             " times (a transient buffer is allocated once and freed once per step, "
                                             "so memory at the end equals memory at the start)");
      continue;
    }
    check_uses(hb, b, allocs[i].front(), frees[i].front(), readers[i], writers[i], problems);
  }
}

void check_gradient_reductions(const Schedule& s, const HappensBefore& hb, Problems& problems) {
  // Per pipeline stage: a unit's ops live on the stage that holds it.
  std::vector<StreamId> compute_of_stage;
  for (int32_t stage = 0; stage < s.info.pipeline_stages; ++stage) compute_of_stage.push_back(s.compute_stream(stage));
  const auto is_compute = [&](const Op& op) {
    return op.stream == compute_of_stage[static_cast<size_t>(s.stage_of(op))];
  };
  std::map<std::pair<int32_t, int32_t>, std::vector<OpId>> backward_ops;  // (unit, micro-batch) → bwd computes
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::compute && op.phase == Phase::bwd && op.unit >= 0 && is_compute(op)) {
      backward_ops[{op.unit, op.micro_batch}].push_back(op.id);
    }
  }
  // Over the tensor-parallel group a backward reduce-scatter reduces an activation gradient, not the unit's weight
  // gradients: Userbuffers (tp_comm_overlap) runs it beside the unit's backward.
  const std::string tp_group(to_string(GroupRole::tp));
  for (const Op& op : s.ops) {
    const bool activation_gradient = op.group.valid() && s.groups[op.group].name == tp_group;
    const bool grad_reduction = (op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_reduce) &&
                                op.phase == Phase::bwd && op.unit >= 0 && !is_compute(op) && !activation_gradient;
    if (!grad_reduction) continue;
    const auto it = backward_ops.find({op.unit, op.micro_batch});
    if (it == backward_ops.end()) continue;
    for (const OpId b : it->second) {
      if (!hb.before(b, op.id)) {
        problems.report("reduce-after-backward", problems.describe_op(op.id) + " reduces unit " +
                                                     std::to_string(op.unit) + "'s gradients but may start before " +
                                                     problems.describe_op(b) + " finishes");
      }
    }
  }
}

}  // namespace fsdpsim::validation
