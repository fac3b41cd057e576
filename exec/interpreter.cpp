#include "exec/interpreter.h"

#include "common/error.h"
#include "schedule/schedule_graph.h"

namespace fsdpsim {
namespace {

StepRun to_step_run(const StepMeasurement& m, TimeNs step_start, int32_t step) {
  StepRun run;
  run.start_ns = step_start;
  run.end_ns = step_start + m.step_ns;
  run.ops.resize(m.start_ns.size());
  for (size_t i = 0; i < m.start_ns.size(); ++i) {
    if (m.start_ns[i] < 0) continue;  // not run here: another pipeline stage's op
    run.ops[i] = OpTiming{step_start + m.start_ns[i], step_start + m.end_ns[i]};
  }
  // A peak is reached when the op that allocated it started; one whose op is not known (the reserved peak, which the
  // device's pool reports without a time) is placed at its step's start, so that it lies within its step.
  const auto peak_time = [&](OpId op) { return step_start + (op.valid() ? m.start_ns[op.index()] : 0); };
  run.peak_allocated.bytes = m.peak_allocated_bytes;
  run.peak_allocated.op = m.peak_op;
  run.peak_allocated.time_ns = peak_time(m.peak_op);
  run.peak_allocated.step = step;
  run.peak_allocated.breakdown = m.peak_breakdown;
  run.peak_reserved.bytes = m.peak_reserved_bytes;
  run.peak_reserved.time_ns = step_start;
  run.peak_reserved.step = step;
  run.stage_peaks = m.stage_peaks;
  for (StagePeaks& stage : run.stage_peaks) {
    for (MemoryPeak* peak : {&stage.allocated, &stage.reserved}) {
      peak->step = step;
      peak->time_ns = peak_time(peak->op);
    }
  }
  return run;
}

}  // namespace

RunRecord interpret(const Schedule& schedule, Backend& backend, const ExecOptions& options) {
  std::vector<OpId> order = issue_order(schedule);
  if (order.size() != schedule.ops.size()) {
    throw ScheduleError("the executor cannot run this schedule", {"its dependencies form a cycle (run validation)"});
  }
  if (options.stage >= 0) {
    std::erase_if(order, [&](OpId id) { return schedule.stage_of(schedule.ops[id]) != options.stage; });
  }
  backend.setup(schedule);
  RunRecord result;
  result.origin = Measurement{};  // the runner names the backend and the device
  TimeNs clock = 0;
  for (int32_t step = 0; step < options.steps; ++step) {
    backend.begin_step(step);
    for (const OpId id : order) {
      const Op& op = schedule.ops[id];
      for (const OpId dep : op.deps) backend.wait(op.stream, dep);
      backend.mark_start(op);
      for (const BufferId b : op.allocs) backend.allocate(b, op.stream);
      backend.run(op);
      backend.mark_end(op);
      for (const BufferId b : op.frees) backend.release(b, op.stream);
    }
    const StepMeasurement m = backend.end_step();
    result.steps.push_back(to_step_run(m, clock, step));
    result.memory_stage = m.memory_stage;
    clock += m.step_ns;
  }
  return result;
}

}  // namespace fsdpsim
