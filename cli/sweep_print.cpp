#include "cli/sweep_print.h"

#include <cstdio>
#include <iostream>
#include <set>

#include "cli/output.h"
#include "common/text.h"
#include "common/units.h"
#include "plan/html_report.h"

namespace fsdpsim::cli {
namespace {

std::string header_value(const std::map<std::string, std::string>& header, const std::string& key) {
  const auto it = header.find(key);
  return it == header.end() ? std::string() : it->second;
}

// "dgx-h100-ndr", or the swept hardware: "dgx-h100-ndr, gb200-nvl72 × h100-sxm, h200-sxm".
std::string hardware_name(const SweepSpec& spec) {
  std::string tops = spec.topology.name, gpus;
  for (const GridAxis& axis : spec.axes) {
    if (axis.key == kTopologyAxis) tops = join(axis.values, ", ");
    if (axis.key == kProfileAxis) gpus = " × " + join(axis.values, ", ");
  }
  return tops + gpus;
}

// "fixed: seq_length=8192 ...", or nothing for a part written before the header held it.
std::string fixed_line(const std::map<std::string, std::string>& header) {
  const std::string fixed = header_value(header, "fixed");
  return fixed.empty() ? "" : "fixed: " + fixed + "\n";
}

// What the run columns rest on, what a cost ranking means without prices, and the GPU budget.
std::string run_note(const std::map<std::string, std::string>& header, const std::vector<SweepResult>& results,
                     RankBy by) {
  std::string note = header_value(header, "goodput") + "\n";
  bool any_priced = false;
  int64_t over = 0;
  for (const SweepResult& r : results) {
    any_priced = any_priced || r.priced;
    over += r.over_budget;
  }
  if (by == RankBy::cost && !any_priced) {
    note += "no price given (--price): cost is GPU-seconds per million tokens at the goodput\n";
  }
  const std::string max_gpus = header_value(header, "max_gpus");
  if (!max_gpus.empty()) {
    note +=
        std::to_string(over) + " points need more than --max-gpus " + max_gpus + " GPUs and rank after the others\n";
  }
  return note;
}

// The settings every point shares that decide its layout, memory and speed, as "key=value" (keys a --grid axis or a
// --compare-pp plan varies are left out): the table and the HTML page say what the ranking holds fixed.
std::string fixed_settings(const SweepSpec& spec) {
  std::set<std::string> varied;
  for (const GridAxis& axis : spec.axes) varied.insert(axis.key);
  for (const auto& point : spec.points) {
    for (const std::string& assignment : point) varied.insert(assignment.substr(0, assignment.find('=')));
  }
  const FsdpConfig& c = spec.base;
  std::vector<std::string> keys{c.gpus > 0 ? "gpus" : "nodes",
                                "implementation",
                                "data_parallel_sharding_strategy",
                                "tp",
                                "cp",
                                "ep",
                                "pp"};
  if (c.pp > 1) keys.insert(keys.end(), {"virtual_pipeline_stages", "pipeline_schedule"});
  keys.insert(keys.end(), {"seq_length", "micro_batch_size", "global_batch_size", "param_dtype", "fp8_compute",
                           "recompute_granularity"});
  if (c.recompute_granularity == Recompute::selective) keys.emplace_back("recompute_modules");
  if (c.cpu_offloading_activations) keys.emplace_back("cpu_offloading_activations");
  // Sweeping gpus varies nodes too, and the other way round.
  if (varied.count("gpus") + varied.count("nodes") > 0) varied.insert({"gpus", "nodes"});
  std::vector<std::string> fixed;
  for (const std::string& key : keys) {
    if (varied.count(key) == 0) fixed.push_back(key + "=" + config_value(c, key));
  }
  return join(fixed, " ");
}

}  // namespace

RankBy rank_by_name(const std::string& name) {
  if (name == "cost") return RankBy::cost;
  if (name == "memory") return RankBy::memory;
  if (name == "time") return RankBy::time;
  return RankBy::throughput;
}

std::map<std::string, std::string> sweep_header(const SweepSpec& spec, const std::string& compared,
                                                const std::string& rank_by) {
  std::map<std::string, std::string> header{
      {"model", spec.model.name}, {"hardware", hardware_name(spec)}, {"compared", compared}, {"rank_by", rank_by}};
  header["goodput"] = "goodput: no failures modelled";
  if (spec.run.failures_per_gpu_hour > 0) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.3g", spec.run.failures_per_gpu_hour * 1e6);
    header["goodput"] = std::string("goodput: ") + rate + " failures per million GPU-hours, checkpoints written at " +
                        format_bandwidth(spec.run.storage_write_bytes_per_s) + " at the Young-Daly interval";
  }
  if (spec.max_gpus > 0) header["max_gpus"] = std::to_string(spec.max_gpus);
  header["fixed"] = fixed_settings(spec);
  return header;
}

void print_sweep(const std::map<std::string, std::string>& header, const std::vector<SweepResult>& results,
                 const SweepOutputs& outputs) {
  const RankBy by = rank_by_name(outputs.rank_by);
  const std::vector<size_t> order = rank_results(results, by);
  int64_t fits = 0, at_risk = 0, valid = 0;
  for (const auto& r : results) {
    valid += r.valid;
    fits += r.valid && r.memory.fit == MemoryFit::fits;
    at_risk += r.valid && r.memory.fit == MemoryFit::at_risk;
  }
  const std::string title = "sweep of " + header_value(header, "model") + " on " + header_value(header, "hardware");
  std::cout << "sweep of " << results.size() << " configurations of " << header_value(header, "model") << " on "
            << header_value(header, "hardware") << ": " << valid << " can be built, " << fits << " fit, " << at_risk
            << " at risk (ranked by " << outputs.rank_by << ")\n"
            << fixed_line(header) << header_value(header, "compared") << run_note(header, results, by) << "\n";
  std::cout << sweep_table(results, order, outputs.top);
  if (!outputs.csv.empty()) write_text_file(outputs.csv, sweep_csv(results, order), "--csv");
  if (!outputs.json.empty()) write_text_file(outputs.json, sweep_json(results, order), "--json");
  if (!outputs.html.empty()) {
    write_text_file(outputs.html, html_sweep_report(results, order, title, header_value(header, "fixed")), "--html");
  }
}

}  // namespace fsdpsim::cli
