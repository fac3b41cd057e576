#include "plan/exec_checks.h"

#include "common/units.h"
#include "sim/engine.h"

namespace fsdpsim {

RunRecord predict_steps(const Schedule& schedule, const Topology& topology, int32_t steps) {
  SimOptions sim;
  sim.steps = steps;
  sim.record_timeline = false;
  sim.record_memory_order = true;  // the host backend follows it (predicted_memory_order)
  return run_schedule(schedule, topology, sim);
}

std::optional<MemoryPeak> predicted_steady_peak(const Schedule& schedule, const Topology& topology, int32_t steps) {
  return predict_steps(schedule, topology, steps).steps.back().peak_allocated;
}

std::string predicted_fit_with_memory(const Schedule& schedule, const Topology& topology, int32_t steps,
                                      int64_t gpu_memory_bytes) {
  Topology t = topology;
  t.gpu.hbm_bytes = gpu_memory_bytes;
  const RunRecord run = predict_steps(schedule, t, steps);
  const std::string given = "given the same " + format_bytes(gpu_memory_bytes) +
                            " (the device's memory less the executor's scratch), the simulator ";
  if (!run.oom) return given + "predicts the schedule fits";
  const OomEvent& e = *run.oom;
  return given + "runs out too: allocating " + format_bytes(e.request_bytes) + " for '" +
         schedule.buffers[e.buffer].name + "' in op '" +
         (e.op.valid() ? schedule.ops[e.op].name : std::string("setup")) + "' (step " + std::to_string(e.step) +
         ") with " + format_bytes(e.reserved_bytes) + " reserved";
}

}  // namespace fsdpsim
