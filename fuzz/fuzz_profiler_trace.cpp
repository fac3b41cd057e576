// Fuzz target: PyTorch profiler traces given to `fsdpsim validate --measured-trace` (read_profiler_trace): busy and
// exposed times must stay within the step.
#include "fuzz/fuzz_target.h"
#include "report/profiler_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz.trace.json", [&] {
    const fsdpsim::TraceStep t = fsdpsim::read_profiler_trace(text, "fuzz.trace.json");
    const double slack = 1e-9 * (1 + t.step_time_s);
    if (t.compute_busy_s > t.step_time_s + slack || t.comm_busy_s > t.step_time_s + slack ||
        t.exposed_comm_s > t.comm_busy_s + slack || t.exposed_comm_s < 0) {
      fsdpsim::fuzz::finding("busy or exposed time outside the step");
    }
  });
}
