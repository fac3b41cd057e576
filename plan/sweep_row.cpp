// The one JSON row of a sweep point (plan/sweep_row.h): its writer and its reader.
#include "plan/sweep_row.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::ordered_json;

Json verdict_json(const MemoryVerdict& m) {
  return Json{{"fit", to_string(m.fit)},
              {"needed_bytes", m.needed_bytes},
              {"gpu_memory_bytes", m.gpu_memory_bytes},
              {"margin", m.margin},
              {"band_low_bytes", m.band_low_bytes},
              {"band_high_bytes", m.band_high_bytes},
              {"band",
               {{"low_ratio", m.band.low_ratio},
                {"high_ratio", m.band.high_ratio},
                {"coverage", m.band.coverage},
                {"runs", m.band.runs}}},
              {"allocator_failed", m.allocator_failed},
              {"host_offload_bytes_per_node", m.host_offload_bytes_per_node},
              {"host_memory_bytes", m.host_memory_bytes},
              {"rank", m.rank}};
}

Json cost_json(const TrainingCost& c) {
  return Json{{"checkpoint_bytes", c.checkpoint_bytes},
              {"checkpoint_write_s", c.checkpoint_write_s},
              {"mtbf_s", c.mtbf_s},
              {"checkpoint_interval_s", c.checkpoint_interval_s},
              {"lost_fraction", c.lost_fraction},
              {"goodput", c.goodput},
              {"days", c.days},
              {"gpu_hours", c.gpu_hours},
              {"price", c.price},
              {"price_per_million_tokens", c.price_per_million_tokens}};
}

MemoryFit read_fit(const JsonFields& in, const Json& m, const std::string& path) {
  const std::string fit = in.get<std::string>(m, path, "fit");
  for (const MemoryFit f : {MemoryFit::fits, MemoryFit::at_risk, MemoryFit::out_of_memory}) {
    if (to_string(f) == fit) return f;
  }
  in.fail(path + ".fit", "expected fits, at_risk or out_of_memory, got '" + fit + "'");
}

MemoryVerdict read_verdict(const JsonFields& in, const Json& m, const std::string& path) {
  MemoryVerdict v;
  v.fit = read_fit(in, m, path);
  v.needed_bytes = in.get<int64_t>(m, path, "needed_bytes");
  v.gpu_memory_bytes = in.get<int64_t>(m, path, "gpu_memory_bytes");
  v.margin = in.get<double>(m, path, "margin");
  v.band_low_bytes = in.get<int64_t>(m, path, "band_low_bytes");
  v.band_high_bytes = in.get<int64_t>(m, path, "band_high_bytes");
  const std::string band_path = path + ".band";
  const Json& b = in.at(m, path, "band");
  v.band.low_ratio = in.get<double>(b, band_path, "low_ratio");
  v.band.high_ratio = in.get<double>(b, band_path, "high_ratio");
  v.band.coverage = in.get<double>(b, band_path, "coverage");
  v.band.runs = in.get<int32_t>(b, band_path, "runs");
  v.allocator_failed = in.get<bool>(m, path, "allocator_failed");
  v.host_offload_bytes_per_node = in.get<int64_t>(m, path, "host_offload_bytes_per_node");
  v.host_memory_bytes = in.get<int64_t>(m, path, "host_memory_bytes");
  v.rank = in.get<std::string>(m, path, "rank");
  return v;
}

TrainingCost read_cost(const JsonFields& in, const Json& c, const std::string& path) {
  TrainingCost cost;
  cost.checkpoint_bytes = in.get<int64_t>(c, path, "checkpoint_bytes");
  cost.checkpoint_write_s = in.get<double>(c, path, "checkpoint_write_s");
  cost.mtbf_s = in.get<double>(c, path, "mtbf_s");
  cost.checkpoint_interval_s = in.get<double>(c, path, "checkpoint_interval_s");
  cost.lost_fraction = in.get<double>(c, path, "lost_fraction");
  cost.goodput = in.get<double>(c, path, "goodput");
  cost.days = in.get<double>(c, path, "days");
  cost.gpu_hours = in.get<double>(c, path, "gpu_hours");
  cost.price = in.get<double>(c, path, "price");
  cost.price_per_million_tokens = in.get<double>(c, path, "price_per_million_tokens");
  return cost;
}

std::vector<std::string> read_assignments(const JsonFields& in, const Json& row, const std::string& path) {
  const Json& list = in.at(row, path, "configuration");
  const std::string where = path + ".configuration";
  if (!list.is_array()) in.fail(where, "expected a list of key=value strings");
  std::vector<std::string> assignments;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) in.fail(where + "[" + std::to_string(i) + "]", "expected a string");
    assignments.push_back(list[i].get<std::string>());
  }
  return assignments;
}

}  // namespace

Json sweep_row_json(const SweepResult& r) {
  // The flat fields first, in the order the sweep's JSON has always had them; "memory" and "cost" last, whole.
  return Json{{"configuration", r.assignments},
              {"valid", r.valid},
              {"invalid_reason", r.invalid_reason},
              {"fits", r.fits()},
              {"verdict", r.valid ? to_string(r.memory.fit) : ""},
              {"gpus", r.gpus},
              {"micro_batches", r.micro_batches},
              {"step_time_s", r.step_time_s},
              {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
              {"tflops_per_gpu", r.tflops_per_gpu},
              {"mfu", r.mfu},
              {"exposed_comm_s", r.exposed_comm_s},
              {"peak_allocated_bytes", r.peak_allocated_bytes},
              {"needed_bytes", r.needed_bytes},
              {"band_low_bytes", r.memory.band_low_bytes},
              {"band_high_bytes", r.memory.band_high_bytes},
              {"band_published_runs", r.memory.band.runs},
              {"gpu_memory_bytes", r.gpu_memory_bytes},
              {"gpu_seconds_per_million_tokens", r.gpu_seconds_per_million_tokens},
              {"params_per_rank", r.params_per_rank},
              {"topology", r.topology},
              {"gpu", r.gpu},
              {"over_budget", r.over_budget},
              {"checkpoint_bytes", r.checkpoint_bytes},
              {"checkpoint_write_s", r.cost.checkpoint_write_s},
              {"mtbf_s", r.cost.mtbf_s},
              {"checkpoint_interval_s", r.cost.checkpoint_interval_s},
              {"lost_fraction", r.cost.lost_fraction},
              {"goodput", r.cost.goodput},
              {"days", r.cost.days},
              {"gpu_hours", r.cost.gpu_hours},
              {"priced", r.priced},
              {"price_per_million_tokens", r.cost.price_per_million_tokens},
              {"run_price", r.cost.price},
              {"memory", verdict_json(r.memory)},
              {"cost", cost_json(r.cost)}};
}

SweepResult read_sweep_row(const JsonFields& in, const Json& row, const std::string& path) {
  SweepResult r;
  r.assignments = read_assignments(in, row, path);
  r.valid = in.get<bool>(row, path, "valid");
  r.invalid_reason = in.get<std::string>(row, path, "invalid_reason");
  r.gpus = in.get<int32_t>(row, path, "gpus");
  r.micro_batches = in.get<int32_t>(row, path, "micro_batches");
  r.step_time_s = in.get<double>(row, path, "step_time_s");
  r.tokens_per_s_per_gpu = in.get<double>(row, path, "tokens_per_s_per_gpu");
  r.tflops_per_gpu = in.get<double>(row, path, "tflops_per_gpu");
  r.mfu = in.get<double>(row, path, "mfu");
  r.exposed_comm_s = in.get<double>(row, path, "exposed_comm_s");
  r.peak_allocated_bytes = in.get<int64_t>(row, path, "peak_allocated_bytes");
  r.needed_bytes = in.get<int64_t>(row, path, "needed_bytes");
  r.gpu_memory_bytes = in.get<int64_t>(row, path, "gpu_memory_bytes");
  r.gpu_seconds_per_million_tokens = in.get<double>(row, path, "gpu_seconds_per_million_tokens");
  r.params_per_rank = in.get<int64_t>(row, path, "params_per_rank");
  r.topology = in.get<std::string>(row, path, "topology");
  r.gpu = in.get<std::string>(row, path, "gpu");
  r.over_budget = in.get<bool>(row, path, "over_budget");
  r.checkpoint_bytes = in.get<int64_t>(row, path, "checkpoint_bytes");
  r.priced = in.get<bool>(row, path, "priced");
  r.memory = read_verdict(in, in.at(row, path, "memory"), path + ".memory");
  r.cost = read_cost(in, in.at(row, path, "cost"), path + ".cost");
  return r;
}

}  // namespace fsdpsim
