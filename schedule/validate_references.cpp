// The rules on ids and references: dense ids, and every stream, unit, group, buffer and op an op names exists.
#include <string>
#include <vector>

#include "schedule/validate_rules.h"

namespace fsdpsim::validation {
namespace {

template <class IdT>
void check_id_list(const Op& op, const std::vector<IdT>& ids, const char* field, size_t limit, const char* what,
                   Problems& problems) {
  for (const IdT id : ids) {
    if (!id.valid() || id.index() >= limit) {
      problems.report("references", "op " + std::to_string(op.id.value()) + " '" + op.name + "' " + field + " names " +
                                        what + " " + std::to_string(id.value()) + ", which does not exist");
    }
  }
}

}  // namespace

void check_ids(const Schedule& s, Problems& problems) {
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].id.index() != i) {
      problems.report("dense-ids", "op at position " + std::to_string(i) + " has id " +
                                       std::to_string(s.ops[i].id.value()) + " (ids must be 0, 1, 2, ... in order)");
    }
  }
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    if (s.buffers[i].id.index() != i) {
      problems.report("dense-ids", "buffer at position " + std::to_string(i) + " has id " +
                                       std::to_string(s.buffers[i].id.value()) +
                                       " (ids must be 0, 1, 2, ... in order)");
    }
    if (s.buffers[i].size_bytes < 0) problems.report("sizes", "buffer " + std::to_string(i) + " has a negative size");
  }
}

void check_references(const Schedule& s, Problems& problems) {
  const size_t ops = s.ops.size();
  const size_t buffers = s.buffers.size();
  for (const Op& op : s.ops) {
    const auto who = [&op] { return "op " + std::to_string(op.id.value()) + " '" + op.name + "'"; };
    if (!s.streams.contains(op.stream)) problems.report("references", who() + " is on no known stream");
    if (op.unit < -1 || op.unit >= static_cast<int32_t>(s.units.size()))
      problems.report("references", who() + " names unit " + std::to_string(op.unit) + ", which does not exist");
    if (is_collective(op.kind) && !s.groups.contains(op.group)) {
      problems.report("references", who() + " is a collective without a valid group");
    }
    if (is_p2p(op.kind) && !s.groups.contains(op.group)) {
      problems.report("references", who() + " is a " + std::string(to_string(op.kind)) +
                                        " without a valid group (name the pipeline group, e.g. 'pp')");
    }
    if (!is_collective(op.kind) && !is_p2p(op.kind) && op.group != GroupId::none())
      problems.report("references", who() + " is not a collective but names a group");
    check_id_list(op, op.allocs, "allocs", buffers, "buffer", problems);
    check_id_list(op, op.frees, "frees", buffers, "buffer", problems);
    check_id_list(op, op.reads, "reads", buffers, "buffer", problems);
    check_id_list(op, op.writes, "writes", buffers, "buffer", problems);
    check_id_list(op, op.deps, "deps", ops, "op", problems);
    for (const OpId d : op.deps) {
      if (d == op.id) problems.report("references", who() + " depends on itself");
    }
    if (op.send_bytes < 0 || op.recv_bytes < 0 || op.bytes_touched < 0)
      problems.report("sizes", who() + " has a negative byte count");
    else if (op.class_bytes.unvectorized < 0 || op.class_bytes.reduction < 0 ||
             op.class_bytes.unvectorized > op.bytes_touched - op.class_bytes.reduction) {
      problems.report("sizes", who() + " has unvectorized_bytes + reduction_bytes (" +
                                   std::to_string(op.class_bytes.unvectorized) + " + " +
                                   std::to_string(op.class_bytes.reduction) + ") outside 0.." +
                                   std::to_string(op.bytes_touched) + ", its bytes_touched (they are a part of it)");
    }
  }
}

}  // namespace fsdpsim::validation
