#include "cli/training_run_options.h"

#include <cmath>

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"

namespace fsdpsim::cli {
namespace {

ConfigError option_error(const std::string& option, const std::string& problem, const std::string& fix) {
  return ConfigError(SourceLocation{"<" + option + ">", 0, 0}, option, problem, fix);
}

double parse_price(const std::string& text) {
  try {
    size_t used = 0;
    const double price = std::stod(text, &used);
    if (used == text.size() && std::isfinite(price) && price > 0 && price <= 1e6) return price;
  } catch (const std::exception&) {  // std::invalid_argument / out_of_range: refused below
  }
  throw option_error("--price", "expected a price per GPU-hour above 0, got '" + text + "'",
                     "write --price 2.49, or --price dgx-h100-ndr=2.49 for one topology or GPU profile");
}

}  // namespace

void add_training_run_options(CLI::App& command, TrainingRunOptions& options) {
  command
      .add_option("--tokens", options.tokens,
                  "tokens the whole run trains (e.g. 15e12): days to train, GPU-hours and money per point")
      ->check(CLI::Range(0.0, 1e18));
  command.add_option("--price", options.prices,
                     "price per GPU-hour: 2.49 for every point, or NAME=2.49 for one topology or GPU profile "
                     "(repeatable); overrides a profile's price_per_gpu_hour");
  command
      .add_option("--failures-per-gpu-hour", options.failures_per_gpu_hour,
                  "interruptions per GPU-hour (default: Llama 3's 419 in 54 days on 16,384 GPUs); 0: none")
      ->check(CLI::Range(0.0, 1.0));
  command
      .add_option("--storage-bw", options.storage_bw,
                  "the whole job's checkpoint write bandwidth (default: Llama 3's 2 TB/s)")
      ->capture_default_str();
  command.add_option("--restart-time", options.restart_time, "time from an interruption to training again (e.g. 600s)")
      ->capture_default_str();
}

ParsedTrainingRun parse_training_run(const TrainingRunOptions& options) {
  ParsedTrainingRun out;
  out.run.tokens = options.tokens;
  out.run.failures_per_gpu_hour = options.failures_per_gpu_hour;
  std::string why;
  const auto bw = parse_bandwidth_bytes_per_s(options.storage_bw, &why);
  if (!bw || *bw <= 0) {
    throw option_error(
        "--storage-bw",
        "expected a bandwidth above 0, got '" + options.storage_bw + "'" + (why.empty() ? "" : ": " + why),
        "write e.g. --storage-bw 2TB/s");
  }
  out.run.storage_write_bytes_per_s = *bw;
  const auto restart = parse_time_ns(options.restart_time, &why);
  if (!restart || *restart < 0) {
    throw option_error("--restart-time", "expected a duration, got '" + options.restart_time + "'",
                       "write e.g. --restart-time 600s");
  }
  out.run.restart_s = static_cast<double>(*restart) * 1e-9;
  for (const std::string& p : options.prices) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos) {
      if (out.run.price_per_gpu_hour > 0) {
        throw option_error("--price", "two prices for every point ('" + p + "' again)",
                           "give one plain --price, and NAME=price for the others");
      }
      out.run.price_per_gpu_hour = parse_price(trim_copy(p));
      continue;
    }
    const std::string name = trim_copy(p.substr(0, eq));
    if (name.empty()) throw option_error("--price", "no name before '='", "write --price dgx-h100-ndr=2.49");
    out.named_prices.emplace_back(name, parse_price(trim_copy(p.substr(eq + 1))));
  }
  return out;
}

}  // namespace fsdpsim::cli
