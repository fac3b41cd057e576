// The error bands every verdict carries, from the public fidelity suite's held-out rows (tests/fidelity/): measured /
// predicted at the 5th and 95th percentiles. Written by `fsdpsim fidelity --bands`; tests/fidelity/fidelity_test.cpp
// recomputes them from the suite and fails when they differ, so the bands change whenever the suite does.
#include "report/memory_verdict.h"

namespace fsdpsim {

const ErrorBands& published_error_bands() {
  // {memory}, {throughput}: low ratio, high ratio, coverage, held-out runs.
  static const ErrorBands bands{{0.8733, 1.0849, 0.90, 27}, {0.7912, 1.1592, 0.90, 104}};
  return bands;
}

}  // namespace fsdpsim
