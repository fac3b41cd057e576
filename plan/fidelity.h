#pragma once
/// The fidelity suite: predict published measurements of real FSDP / ZeRO-3 training runs
/// (tests/fidelity/measurements.yaml) and report the error per metric, separately for the rows the constants were
/// calibrated on and the held-out rows.

#include <optional>
#include <string>
#include <vector>

#include "config/fsdp_config.h"
#include "model/model.h"
#include "report/memory_verdict.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// What a row measured (a value may be absent).
struct FidelityMeasured {
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> tflops_per_gpu;
  std::optional<double> mfu;
  std::optional<double> peak_memory_gib;
  std::string peak_memory_kind = "unknown";  ///< max_memory_reserved | max_memory_allocated | nvidia-smi | unknown
};

/// One published run, ready to simulate.
struct FidelityRow {
  std::string id;
  std::string role;         ///< calibration | held_out
  std::string software;     ///< fsdp1 | fsdp2 | megatron_fsdp | deepspeed_zero3
  std::string source;       ///< url or repository:path@commit
  std::string explanation;  ///< why the prediction may be far off (required for rows off by more than 25%)
  /// Why fsdpsim predicts this run out of memory although it ran (required for such a row under --check).
  std::string oom_explanation;
  std::string unsupported;  ///< non-empty: fsdpsim cannot express this run (the reason); listed, never simulated
  ModelSpec model;
  Topology topology;
  FsdpConfig config;
  FidelityMeasured measured;
};

/// Reads the data file; malformed rows are ConfigErrors naming the file, line and key.
std::vector<FidelityRow> load_fidelity_rows(const std::string& path);
/// The suite compiled into the binary (tests/fidelity/measurements.yaml as built).
std::vector<FidelityRow> load_embedded_fidelity_rows();

/// One metric of one row: predicted against measured.
struct FidelityPoint {
  std::string metric;  ///< tokens_per_s_per_gpu | tflops_per_gpu | mfu | peak_memory_gib
  double measured = 0;
  double predicted = 0;
  [[nodiscard]] double error() const { return (predicted - measured) / measured; }
};

/// The outcome of one row.
struct FidelityResult {
  const FidelityRow* row = nullptr;
  bool simulated = false;
  std::string failure;  ///< why it could not be simulated
  /// The prediction says the step does not fit, though the published run ran: a false OOM verdict.
  bool predicted_oom = false;
  std::string oom_detail;  ///< the verdict's line when predicted_oom
  std::vector<FidelityPoint> points;
};

/// Per metric and role: how many rows, the median and the largest absolute error.
struct FidelitySummary {
  std::string metric;
  std::string role;
  size_t rows = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
};

/// Simulates every row.
std::vector<FidelityResult> run_fidelity(const std::vector<FidelityRow>& rows);
/// Summaries per (metric, role); throughput metrics are folded into one "throughput" metric as well.
std::vector<FidelitySummary> summarize_fidelity(const std::vector<FidelityResult>& results);
/// The error bands every verdict carries: measured / predicted over the held-out rows, peak memory and throughput
/// (tokens/s, else TFLOP/s or MFU) apart, at the 5th and 95th percentiles (linear interpolation between order
/// statistics), rounded to 4 decimals. report/error_band.cpp commits them; a test fails when the suite gives others.
ErrorBands held_out_error_bands(const std::vector<FidelityResult>& results);
/// The bands as the C++ initialiser report/error_band.cpp holds (`fsdpsim fidelity --bands`).
std::string error_bands_text(const ErrorBands& bands);

/// The table `fsdpsim fidelity` prints.
std::string fidelity_text(const std::vector<FidelityResult>& results, const std::vector<FidelitySummary>& summary);
/// Rows off by more than `limit` on some metric without a written explanation.
std::vector<std::string> unexplained_outliers(const std::vector<FidelityResult>& results, double limit);
/// Rows predicted out of memory (every row is a run that ran) without a written `oom_explanation`.
std::vector<std::string> unexplained_out_of_memory(const std::vector<FidelityResult>& results);

/// The constants of one GPU profile fitted on its calibration rows' throughput.
struct FidelityFit {
  std::string profile;            ///< GPU profile name (rows on an export variant share their profile)
  std::vector<std::string> rows;  ///< the calibration rows used
  double sustained_clock_fraction = 1;
  double attention_efficiency = 0;
  bool attention_fitted = false;  ///< only with enough rows to separate it from the clock
  double rms_log_error_before = 0;
  double rms_log_error_after = 0;
};

/// For every profile with calibration rows: the sustained clock fraction (and, with at least
/// `kMinRowsForAttention` rows, the attention efficiency) that minimise the RMS log error of the calibration rows'
/// throughput. Held-out rows are never read.
std::vector<FidelityFit> fit_fidelity(const std::vector<FidelityRow>& rows);
inline constexpr size_t kMinRowsForAttention = 4;
/// The fit as profile YAML lines with comments naming the rows.
std::string fidelity_fit_text(const std::vector<FidelityFit>& fits);

}  // namespace fsdpsim
