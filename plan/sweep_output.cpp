// Renderings of sweep results: the ranked table, CSV and JSON.
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "common/units.h"
#include "plan/fit.h"
#include "plan/sweep.h"
#include "plan/sweep_row.h"
#include "schedule/summary.h"

namespace fsdpsim {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string sweep_verdict_label(const SweepResult& r) {
  const bool fragmented = r.memory.fit == MemoryFit::out_of_memory && r.memory.allocator_failed &&
                          r.memory.needed_bytes <= r.memory.gpu_memory_bytes;
  return verdict_label(r.memory.fit) + (fragmented ? "*" : "");
}

std::string sweep_table(const std::vector<SweepResult>& results, const std::vector<size_t>& order, size_t limit) {
  // The run's columns appear only when the sweep costs a run: days with --tokens, money with a price.
  bool with_days = false, with_price = false;
  for (const SweepResult& r : results) {
    with_days = with_days || r.cost.days > 0;
    with_price = with_price || r.priced;
  }
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%5s  %-4s %6s %9s %10s %7s %12s %6s %10s %19s %10s %9s", "rank", "fits", "GPUs",
                "params/GPU", "step", "goodput", "tokens/s/GPU", "MFU", "memory", "90% band", "of GPU", "GPU·s/Mtok");
  out << line;
  if (with_days) out << "      days    GPU-hours";
  if (with_price) out << (with_days ? "  cost/Mtok     run cost" : "  cost/Mtok");
  out << "  configuration\n";
  size_t shown = 0;
  bool any_fragmented = false;
  for (const size_t i : order) {
    if (shown++ == limit) break;
    const SweepResult& r = results[i];
    std::string config = join(r.assignments, " ");
    if (!r.valid) {
      std::snprintf(line, sizeof line, "%5zu  %-4s", shown, "n/a");
      out << line << std::string(with_days * 23 + with_price * (with_days ? 24 : 11) + 115, ' ') << "  " << config
          << " — " << r.invalid_reason << "\n";
      continue;
    }
    if (r.over_budget) config += " (over --max-gpus)";
    any_fragmented = any_fragmented || sweep_verdict_label(r).back() == '*';
    std::snprintf(line, sizeof line, "%5zu  %-4s %6d %9s %9.3fs %6.1f%% %12.0f %5.1f%% %10s %19s %10s %9.0f", shown,
                  sweep_verdict_label(r).c_str(), r.gpus, format_count(r.params_per_rank).c_str(), r.step_time_s,
                  100 * r.cost.goodput, r.tokens_per_s_per_gpu, 100 * r.mfu, format_bytes(r.needed_bytes).c_str(),
                  band_range(r.memory).c_str(), format_bytes(r.gpu_memory_bytes).c_str(),
                  r.gpu_seconds_per_million_tokens);
    out << line;
    if (with_days) {
      std::snprintf(line, sizeof line, " %9.1f %12.4g", r.cost.days, r.cost.gpu_hours);
      out << line;
    }
    if (with_price) {
      if (r.priced) {
        std::snprintf(line, sizeof line, " %10.3f", r.cost.price_per_million_tokens);
        out << line;
        if (with_days) {
          std::snprintf(line, sizeof line, " %12.4g", r.cost.price);
          out << line;
        }
      } else {
        out << std::string(with_days ? 24 : 11, ' ');
      }
    }
    out << "  " << config << "\n";
  }
  if (order.size() > limit) out << "  ... " << order.size() - limit << " more in the CSV/JSON output\n";
  if (any_fragmented) out << "  " << kAllocatorFailedNote << "\n";
  return out.str();
}

std::string sweep_csv(const std::vector<SweepResult>& results, const std::vector<size_t>& order) {
  std::ostringstream out;
  out << "rank,configuration,valid,fits,gpus,micro_batches,step_time_s,tokens_per_s_per_gpu,tflops_per_gpu,mfu,"
         "exposed_comm_s,peak_allocated_bytes,needed_bytes,gpu_memory_bytes,gpu_seconds_per_million_tokens,"
         "params_per_rank,verdict,band_low_bytes,band_high_bytes,invalid_reason,topology,gpu,over_budget,"
         "checkpoint_bytes,checkpoint_write_s,mtbf_s,checkpoint_interval_s,goodput,days,gpu_hours,"
         "price_per_million_tokens,run_price\n";
  size_t rank = 0;
  for (const size_t i : order) {
    const SweepResult& r = results[i];
    char numbers[512];
    std::snprintf(numbers, sizeof numbers, "%d,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%lld,%lld,%lld,%.9g,%lld", r.gpus,
                  r.micro_batches, r.step_time_s, r.tokens_per_s_per_gpu, r.tflops_per_gpu, r.mfu, r.exposed_comm_s,
                  static_cast<long long>(r.peak_allocated_bytes), static_cast<long long>(r.needed_bytes),
                  static_cast<long long>(r.gpu_memory_bytes), r.gpu_seconds_per_million_tokens,
                  static_cast<long long>(r.params_per_rank));
    out << ++rank << "," << csv_field(join(r.assignments, " ")) << "," << (r.valid ? "true" : "false") << ","
        << (r.fits() ? "true" : "false") << "," << numbers << "," << (r.valid ? to_string(r.memory.fit) : "") << ","
        << r.memory.band_low_bytes << "," << r.memory.band_high_bytes << "," << csv_field(r.invalid_reason) << ","
        << csv_field(r.topology) << "," << csv_field(r.gpu) << "," << (r.over_budget ? "true" : "false") << ",";
    std::snprintf(numbers, sizeof numbers, "%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g",
                  static_cast<long long>(r.checkpoint_bytes), r.cost.checkpoint_write_s, r.cost.mtbf_s,
                  r.cost.checkpoint_interval_s, r.cost.goodput, r.cost.days, r.cost.gpu_hours,
                  r.priced ? r.cost.price_per_million_tokens : 0.0, r.priced ? r.cost.price : 0.0);
    out << numbers << "\n";
  }
  return out.str();
}

std::string sweep_json(const std::vector<SweepResult>& results, const std::vector<size_t>& order) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  size_t rank = 0;
  for (const size_t i : order) {
    nlohmann::ordered_json point{{"rank", ++rank}};
    point.update(sweep_row_json(results[i]));
    j.push_back(std::move(point));
  }
  return j.dump(2) + "\n";
}

std::string fit_json(const FitAnswer& answer) {
  nlohmann::ordered_json tried = nlohmann::ordered_json::array();
  for (const auto& [assignment, result] : answer.tried) {
    nlohmann::ordered_json t{{"assignment", assignment}};
    t.update(sweep_row_json(result));
    tried.push_back(std::move(t));
  }
  const nlohmann::ordered_json j{{"target", answer.target == FitTarget::gpus               ? "gpus"
                                            : answer.target == FitTarget::micro_batch_size ? "micro_batch_size"
                                                                                           : "seq_length"},
                                 {"found", answer.found},
                                 {"assignment", answer.assignment},
                                 {"explanation", answer.explanation},
                                 {"note", answer.note},
                                 {"result", sweep_row_json(answer.result)},
                                 {"tried", tried}};
  return j.dump(2) + "\n";
}

}  // namespace fsdpsim
