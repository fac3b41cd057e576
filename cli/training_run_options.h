#pragma once
/// The options that cost a whole training run (--tokens, --price, --failures-per-gpu-hour, --storage-bw,
/// --restart-time), as CLI11 sees them; what they mean is plan/training_cost.h's.

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan/training_cost.h"

namespace fsdpsim::cli {

struct TrainingRunOptions {
  double tokens = 0;
  std::vector<std::string> prices;  ///< "2.49" (every point) or "NAME=2.49" (a topology or GPU profile)
  double failures_per_gpu_hour = kLlama3FailuresPerGpuHour;
  std::string storage_bw = "2TB/s";
  std::string restart_time = "0s";
};

/// Registers the options on a subcommand.
void add_training_run_options(CLI::App& command, TrainingRunOptions& options);

/// The run the options describe, and the prices they name per topology or profile; errors name the option.
struct ParsedTrainingRun {
  TrainingRun run;
  std::vector<std::pair<std::string, double>> named_prices;
};
ParsedTrainingRun parse_training_run(const TrainingRunOptions& options);

}  // namespace fsdpsim::cli
