// validate(): the IR's rules in the order that lets each rely on the ones before it (the rules are in validate_*.cpp).
#include "schedule/validate.h"

#include "common/error.h"
#include "schedule/schedule_graph.h"
#include "schedule/validate_rules.h"

namespace fsdpsim {
namespace validation {

std::string Problems::describe_op(OpId id) const {
  return "op " + std::to_string(id.value()) + " '" + s_.ops[id].name + "'";
}

std::string Problems::describe_buffer(BufferId id) const {
  return "buffer " + std::to_string(id.value()) + " '" + s_.buffers[id].name + "'";
}

void Problems::report(const std::string& rule, const std::string& text) {
  lines_.push_back(rule + ": " + text);
}

}  // namespace validation

std::vector<std::string> validate(const Schedule& s) {
  validation::Problems problems(s);
  validation::check_ids(s, problems);
  validation::check_references(s, problems);
  validation::check_totals(s, problems);
  if (!problems.empty()) return problems.lines();  // later rules index by these references
  validation::check_collective_bytes(s, problems);
  validation::check_pipeline_stages(s, problems);
  if (!problems.empty()) return problems.lines();  // the graph pairs sends with recvs by these peers
  const std::vector<OpId> order = issue_order(s);
  if (order.size() != s.ops.size()) {  // a cycle: find one to name it (the rarer, slower search)
    const std::vector<OpId> cycle = find_cycle(s);
    FSDPSIM_CHECK(!cycle.empty(), "no issue order, yet no dependency cycle");
    std::string path;
    for (size_t i = 0; i < cycle.size(); ++i) path += (i ? " -> " : "") + problems.describe_op(cycle[i]);
    problems.report("acyclic",
                    "dependency cycle through deps, stream order and send/recv rendezvous (a pipeline that "
                    "deadlocks): " +
                        path);
    return problems.lines();
  }
  const HappensBefore hb(s, order);
  validation::check_buffer_lifetimes(s, hb, problems);
  validation::check_gradient_reductions(s, hb, problems);
  return problems.lines();
}

void validate_or_throw(const Schedule& schedule, const std::string& context) {
  std::vector<std::string> problems = validate(schedule);
  if (!problems.empty()) throw ScheduleError(context + " breaks the schedule IR's invariants", std::move(problems));
}

}  // namespace fsdpsim
