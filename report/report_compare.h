#pragma once
/// Predicted against measured: the step, each phase, each op and the memory peaks of two reports of the same
/// schedule (what `fsdpsim validate` prints). Reports are read back from the JSON that `simulate --json` and
/// `exec --json` write.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace fsdpsim {

/// Reads a report written by report_json(); malformed or truncated files are ConfigErrors naming the file, the line
/// and the key.
Report report_from_json(const std::string& text, const std::string& source);
/// Reads a report file.
Report load_report(const std::string& path);

/// One compared quantity.
struct Deviation {
  std::string what;      ///< "step time", "fwd (compute stream)", "ag.layer.3.mb0", "peak allocated"
  double predicted = 0;  ///< seconds or bytes
  double measured = 0;
  /// False for what the measurement cannot speak to (a collective replaced by a device copy): shown, not scored.
  bool compared = true;
  /// (predicted − measured) / measured; 0 when both are 0.
  [[nodiscard]] double relative_error() const;
};

/// The comparison of two reports.
struct Comparison {
  std::string predicted_source, measured_source;
  Deviation step;
  /// Step time minus exposed communication: the like-for-like step where the measurement emulated its collectives.
  std::optional<Deviation> step_less_exposed_comm;
  std::vector<Deviation> phases;    ///< busy time per phase on the compute stream, and exposed communication
  std::vector<Deviation> memory;    ///< peak allocated, peak reserved; the overheads where the measurement has them
  std::vector<Deviation> ops;       ///< every op's duration, in op order
  std::vector<Deviation> op_kinds;  ///< total duration per op kind
  double median_abs_op_error = 0;   ///< over compared ops that took at least 1 us in the measurement
  std::vector<std::string> notes;   ///< what was left out of the comparison, and why
};

/// Compares; throws ConfigError when the two reports are not of the same schedule (op names differ).
Comparison compare_reports(const Report& predicted, const Report& measured);
/// The table `fsdpsim validate` prints; `worst_ops` limits the per-op rows to the largest errors.
std::string comparison_text(const Comparison& comparison, size_t worst_ops = 15);
/// The comparison as JSON (every op included).
std::string comparison_json(const Comparison& comparison);

}  // namespace fsdpsim
