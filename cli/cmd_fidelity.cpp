#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
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
};

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
  cmd->add_flag("--check", o->check, "exit non-zero when the held-out targets are missed or an outlier is unexplained");
  cmd->add_option("--memory-target", o->memory_target, "held-out median |error| allowed on peak memory")
      ->capture_default_str();
  cmd->add_option("--throughput-target", o->throughput_target, "held-out median |error| allowed on throughput")
      ->capture_default_str();
  cmd->add_option("--outlier-limit", o->outlier_limit, "rows off by more than this need a written explanation")
      ->capture_default_str();
  cmd->callback([o] {
    const std::vector<FidelityRow> rows = o->data.empty() ? load_embedded_fidelity_rows() : load_fidelity_rows(o->data);
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
