// The memory order the host backend follows: the simulator's, as it recorded it in its prediction
// (Prediction::memory_order, sim/engine.h's SimOptions::record_memory_order), checked against the schedule.
#include <string>

#include "common/error.h"
#include "exec/host/host_runner.h"

namespace fsdpsim {
namespace {

[[nodiscard]] bool any_memory_event(const Schedule& schedule) {
  for (const Op& op : schedule.ops) {
    if (!op.allocs.empty() || !op.frees.empty()) return true;
  }
  return false;
}

}  // namespace

std::vector<MemoryEvent> predicted_memory_order(const Schedule& schedule, const RunRecord& predicted) {
  const std::string context = "cannot take the memory order of a predicted step";
  const Prediction* p = predicted.prediction();
  if (p == nullptr) throw ScheduleError(context, {"the run was measured, not predicted (simulate the schedule)"});
  if (p->memory_order.empty() && any_memory_event(schedule)) {
    throw ScheduleError(context, {"the prediction did not record its memory order (simulate with "
                                  "SimOptions::record_memory_order = true)"});
  }
  std::vector<std::string> problems = memory_order_problems(schedule, p->memory_order);
  if (!problems.empty()) {
    // A prediction of another schedule misses or misnames most events: the first few say enough.
    constexpr size_t kShown = 8;
    if (problems.size() > kShown) {
      const size_t more = problems.size() - kShown;
      problems.resize(kShown);
      problems.push_back("... and " + std::to_string(more) + " more");
    }
    problems.insert(problems.begin(), "the prediction's memory order is not this schedule's (simulate this schedule)");
    throw ScheduleError(context, std::move(problems));
  }
  return p->memory_order;
}

std::vector<std::string> memory_order_problems(const Schedule& schedule, const std::vector<MemoryEvent>& order) {
  std::vector<std::string> problems;
  std::vector<int32_t> seen(schedule.ops.size() * 2, 0);  // per (op, end)
  for (size_t i = 0; i < order.size(); ++i) {
    const MemoryEvent& e = order[i];
    const std::string where = "memory_order[" + std::to_string(i) + "]";
    if (!schedule.ops.contains(e.op)) {
      problems.push_back(where + " names op " + to_string(e.op) + ", which the schedule does not have (ids 0-" +
                         std::to_string(static_cast<int64_t>(schedule.ops.size()) - 1) + ")");
      continue;
    }
    const Op& op = schedule.ops[e.op];
    if ((e.end ? op.frees : op.allocs).empty()) {
      problems.push_back(where + " is the " + (e.end ? "end" : "start") + " of op " + std::to_string(op.id.value()) +
                         " '" + op.name + "', which " + (e.end ? "frees" : "allocates") + " nothing");
    }
    if (++seen[e.op.index() * 2 + (e.end ? 1 : 0)] == 2) {
      problems.push_back(where + " lists the " + std::string(e.end ? "end" : "start") + " of op " +
                         std::to_string(op.id.value()) + " '" + op.name + "' a second time");
    }
  }
  for (const Op& op : schedule.ops) {
    for (const bool end : {false, true}) {
      if ((end ? op.frees : op.allocs).empty() || seen[op.id.index() * 2 + (end ? 1 : 0)] > 0) continue;
      problems.push_back("the memory order lacks the " + std::string(end ? "end" : "start") + " of op " +
                         std::to_string(op.id.value()) + " '" + op.name + "' (use predicted_memory_order)");
    }
  }
  return problems;
}

}  // namespace fsdpsim
