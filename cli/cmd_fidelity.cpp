#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/measured_tables.h"
#include "common/error.h"
#include "plan/fidelity.h"

namespace fsdpsim::cli {
namespace {

struct FidelityOptions {
  std::string data;  // empty: the suite built into the binary
  double memory_target = 0.05;
  double throughput_target = 0.10;
  double outlier_limit = 0.25;
  bool check = false;
  bool fit = false;
  bool bands = false;
  MeasuredTableOptions tables;
  std::string tables_for;  // the GPU profile whose rows take the tables
};

// The rows of `profile` alone, their GPU given the measured tables: what the published runs say when compute comes
// from one card's kernels instead of the profile's efficiency model and fitted constants.
std::vector<FidelityRow> rows_with_tables(const std::vector<FidelityRow>& rows, const FidelityOptions& o) {
  if (o.tables_for.empty()) {
    throw ConfigError(SourceLocation{"<--tables-for>", 0, 0}, "tables_for",
                      "measured tables are one GPU's, but no --tables-for names which rows they time",
                      "add --tables-for PROFILE (the GPU profile the tables were measured on, e.g. h100-sxm)");
  }
  std::vector<FidelityRow> out;
  for (const FidelityRow& r : rows) {
    if (r.topology.gpu.name != o.tables_for) continue;
    out.push_back(r);
    attach_measured_tables(o.tables, out.back().topology.gpu);
  }
  if (out.empty()) {
    throw ConfigError(SourceLocation{"<--tables-for>", 0, 0}, "tables_for",
                      "no row of the suite runs on GPU profile '" + o.tables_for + "'",
                      "name a profile the rows use (h100-sxm, h100-96gb, a100-sxm-80gb, ...)");
  }
  return out;
}

}  // namespace

void register_fidelity(CLI::App& app) {
  auto o = std::make_shared<FidelityOptions>();
  CLI::App* cmd =
      app.add_subcommand("fidelity", "predict published measurements of real FSDP training runs and report the error");
  cmd->add_option("--data", o->data,
                  "measurements file (default: the suite built into fsdpsim, tests/fidelity/measurements.yaml)");
  cmd->add_flag("--bands", o->bands,
                "print the held-out error bands as report/error_band.cpp holds them (regenerate it when the suite "
                "changes)");
  cmd->add_flag("--fit", o->fit,
                "fit each profile's sustained_clock_fraction (and attention_efficiency) on the calibration rows and "
                "print them; held-out rows are not read");
  cmd->add_flag("--check", o->check,
                "exit non-zero when the held-out targets are missed, or an outlier or a run predicted out of memory is "
                "unexplained");
  cmd->add_option("--memory-target", o->memory_target, "held-out median |error| allowed on peak memory")
      ->capture_default_str();
  cmd->add_option("--throughput-target", o->throughput_target, "held-out median |error| allowed on throughput")
      ->capture_default_str();
  cmd->add_option("--outlier-limit", o->outlier_limit, "rows off by more than this need a written explanation")
      ->capture_default_str();
  add_measured_table_options(*cmd, o->tables);
  cmd->add_option("--tables-for", o->tables_for,
                  "with --gemm-table / --attention-table: run only the rows of this GPU profile, timed by the tables");
  cmd->callback([o] {
    std::vector<FidelityRow> rows = o->data.empty() ? load_embedded_fidelity_rows() : load_fidelity_rows(o->data);
    if (o->tables.any() || !o->tables.attention_kernel.empty()) rows = rows_with_tables(rows, *o);
    if (o->fit) {
      std::cout << fidelity_fit_text(fit_fidelity(rows));
      return;
    }
    const std::vector<FidelityResult> results = run_fidelity(rows);
    if (o->bands) {
      std::cout << error_bands_text(held_out_error_bands(results));
      return;
    }
    const std::vector<FidelitySummary> summary = summarize_fidelity(results);
    std::cout << fidelity_text(results, summary);
    std::vector<std::string> failures = unexplained_outliers(results, o->outlier_limit);
    for (std::string& f : unexplained_out_of_memory(results)) failures.push_back(std::move(f));
    for (const auto& s : summary) {
      if (s.role != "held_out") continue;
      const double target = s.metric == "peak_memory_gib" ? o->memory_target
                            : s.metric == "throughput"    ? o->throughput_target
                                                          : -1;
      if (target >= 0 && s.median_abs_error > target) {
        char line[160];
        std::snprintf(line, sizeof line, "%s: held-out median error %.1f%% is above the %.1f%% target",
                      s.metric.c_str(), 100 * s.median_abs_error, 100 * target);
        failures.push_back(line);
      }
    }
    for (const auto& r : results) {
      if (!r.simulated && r.row->unsupported.empty()) failures.push_back(r.row->id + " could not be simulated");
    }
    if (!failures.empty()) {
      std::cout << "\n" << failures.size() << " fidelity problem(s):\n";
      for (const auto& f : failures) std::cout << "  - " << f << "\n";
      if (o->check) throw Error("fidelity targets missed");
    }
  });
}

}  // namespace fsdpsim::cli
