#include "plan/sweep_parts.h"

#include <cstdio>
#include <limits>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_location.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kPartFormat = 1;
constexpr int64_t kMaxShards = 100000;

// 64-bit FNV-1a: a stable digest of the spec's text (std::hash may differ between builds).
std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// Doubles as JSON numbers: nlohmann writes the shortest text that reads back to the same double.
Json result_json(int64_t index, const SweepResult& r) {
  const MemoryVerdict& m = r.memory;
  const TrainingCost& c = r.cost;
  return Json{{"index", index},
              {"assignments", r.assignments},
              {"valid", r.valid},
              {"invalid_reason", r.invalid_reason},
              {"memory",
               {{"fit", to_string(m.fit)},
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
                {"rank", m.rank}}},
              {"gpus", r.gpus},
              {"micro_batches", r.micro_batches},
              {"params_per_rank", r.params_per_rank},
              {"step_time_s", r.step_time_s},
              {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
              {"tflops_per_gpu", r.tflops_per_gpu},
              {"mfu", r.mfu},
              {"exposed_comm_s", r.exposed_comm_s},
              {"peak_allocated_bytes", r.peak_allocated_bytes},
              {"needed_bytes", r.needed_bytes},
              {"gpu_memory_bytes", r.gpu_memory_bytes},
              {"gpu_seconds_per_million_tokens", r.gpu_seconds_per_million_tokens},
              {"topology", r.topology},
              {"gpu", r.gpu},
              {"checkpoint_bytes", r.checkpoint_bytes},
              {"priced", r.priced},
              {"over_budget", r.over_budget},
              {"cost",
               {{"checkpoint_bytes", c.checkpoint_bytes},
                {"checkpoint_write_s", c.checkpoint_write_s},
                {"mtbf_s", c.mtbf_s},
                {"checkpoint_interval_s", c.checkpoint_interval_s},
                {"lost_fraction", c.lost_fraction},
                {"goodput", c.goodput},
                {"days", c.days},
                {"gpu_hours", c.gpu_hours},
                {"price", c.price},
                {"price_per_million_tokens", c.price_per_million_tokens}}}};
}

// Reads typed fields of one JSON object; a missing key or a wrong type names the file, its line and the key path.
class FieldReader {
 public:
  FieldReader(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw ConfigError(json_path_location(text_, path, source_), path, problem,
                      "write the part again with 'fsdpsim sweep --shard i/N --part FILE'");
  }
  const Json& at(const Json& object, const std::string& path, const std::string& key) const {
    if (!object.is_object()) fail(path, "expected an object");
    const auto it = object.find(key);
    if (it == object.end()) fail(join_path(path, key), "missing");
    return *it;
  }
  template <typename T>
  T get(const Json& object, const std::string& path, const std::string& key) const {
    const Json& v = at(object, path, key);
    const std::string where = join_path(path, key);
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) fail(where, "expected true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) fail(where, "expected a string");
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) fail(where, "expected a whole number");
      if (v.is_number_unsigned()
              ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())
              : v.get<int64_t>() < std::numeric_limits<T>::min() || v.get<int64_t>() > std::numeric_limits<T>::max()) {
        fail(where, "out of range");
      }
    } else {
      if (!v.is_number()) fail(where, "expected a number");
    }
    return v.get<T>();
  }
  static std::string join_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  const std::string& text_;
  const std::string& source_;
};

SweepResult read_result(const FieldReader& in, const Json& j, const std::string& path) {
  SweepResult r;
  const Json& assignments = in.at(j, path, "assignments");
  if (!assignments.is_array()) in.fail(path + ".assignments", "expected a list of key=value strings");
  for (size_t i = 0; i < assignments.size(); ++i) {
    if (!assignments[i].is_string()) in.fail(path + ".assignments[" + std::to_string(i) + "]", "expected a string");
    r.assignments.push_back(assignments[i].get<std::string>());
  }
  r.valid = in.get<bool>(j, path, "valid");
  r.invalid_reason = in.get<std::string>(j, path, "invalid_reason");
  const std::string mp = path + ".memory";
  const Json& m = in.at(j, path, "memory");
  const std::string fit = in.get<std::string>(m, mp, "fit");
  bool known = false;
  for (const MemoryFit f : {MemoryFit::fits, MemoryFit::at_risk, MemoryFit::out_of_memory}) {
    if (to_string(f) == fit) {
      r.memory.fit = f;
      known = true;
    }
  }
  if (!known) in.fail(mp + ".fit", "expected fits, at_risk or out_of_memory, got '" + fit + "'");
  r.memory.needed_bytes = in.get<int64_t>(m, mp, "needed_bytes");
  r.memory.gpu_memory_bytes = in.get<int64_t>(m, mp, "gpu_memory_bytes");
  r.memory.margin = in.get<double>(m, mp, "margin");
  r.memory.band_low_bytes = in.get<int64_t>(m, mp, "band_low_bytes");
  r.memory.band_high_bytes = in.get<int64_t>(m, mp, "band_high_bytes");
  const std::string bp = mp + ".band";
  const Json& b = in.at(m, mp, "band");
  r.memory.band.low_ratio = in.get<double>(b, bp, "low_ratio");
  r.memory.band.high_ratio = in.get<double>(b, bp, "high_ratio");
  r.memory.band.coverage = in.get<double>(b, bp, "coverage");
  r.memory.band.runs = in.get<int32_t>(b, bp, "runs");
  r.memory.allocator_failed = in.get<bool>(m, mp, "allocator_failed");
  r.memory.host_offload_bytes_per_node = in.get<int64_t>(m, mp, "host_offload_bytes_per_node");
  r.memory.host_memory_bytes = in.get<int64_t>(m, mp, "host_memory_bytes");
  r.memory.rank = in.get<std::string>(m, mp, "rank");
  r.gpus = in.get<int32_t>(j, path, "gpus");
  r.micro_batches = in.get<int32_t>(j, path, "micro_batches");
  r.params_per_rank = in.get<int64_t>(j, path, "params_per_rank");
  r.step_time_s = in.get<double>(j, path, "step_time_s");
  r.tokens_per_s_per_gpu = in.get<double>(j, path, "tokens_per_s_per_gpu");
  r.tflops_per_gpu = in.get<double>(j, path, "tflops_per_gpu");
  r.mfu = in.get<double>(j, path, "mfu");
  r.exposed_comm_s = in.get<double>(j, path, "exposed_comm_s");
  r.peak_allocated_bytes = in.get<int64_t>(j, path, "peak_allocated_bytes");
  r.needed_bytes = in.get<int64_t>(j, path, "needed_bytes");
  r.gpu_memory_bytes = in.get<int64_t>(j, path, "gpu_memory_bytes");
  r.gpu_seconds_per_million_tokens = in.get<double>(j, path, "gpu_seconds_per_million_tokens");
  r.topology = in.get<std::string>(j, path, "topology");
  r.gpu = in.get<std::string>(j, path, "gpu");
  r.checkpoint_bytes = in.get<int64_t>(j, path, "checkpoint_bytes");
  r.priced = in.get<bool>(j, path, "priced");
  r.over_budget = in.get<bool>(j, path, "over_budget");
  const std::string cp = path + ".cost";
  const Json& c = in.at(j, path, "cost");
  r.cost.checkpoint_bytes = in.get<int64_t>(c, cp, "checkpoint_bytes");
  r.cost.checkpoint_write_s = in.get<double>(c, cp, "checkpoint_write_s");
  r.cost.mtbf_s = in.get<double>(c, cp, "mtbf_s");
  r.cost.checkpoint_interval_s = in.get<double>(c, cp, "checkpoint_interval_s");
  r.cost.lost_fraction = in.get<double>(c, cp, "lost_fraction");
  r.cost.goodput = in.get<double>(c, cp, "goodput");
  r.cost.days = in.get<double>(c, cp, "days");
  r.cost.gpu_hours = in.get<double>(c, cp, "gpu_hours");
  r.cost.price = in.get<double>(c, cp, "price");
  r.cost.price_per_million_tokens = in.get<double>(c, cp, "price_per_million_tokens");
  return r;
}

}  // namespace

std::pair<int64_t, int64_t> parse_shard(const std::string& text) {
  const auto bad = [&](const std::string& problem) {
    return ConfigError(SourceLocation{"<--shard " + text + ">", 0, 0}, "--shard", problem,
                       "write --shard i/N with 0 <= i < N, e.g. --shard $SLURM_ARRAY_TASK_ID/16");
  };
  const size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad("expected i/N");
  int64_t shard = 0, shards = 0;
  try {
    size_t used_i = 0, used_n = 0;
    const std::string i = text.substr(0, slash), n = text.substr(slash + 1);
    shard = std::stoll(i, &used_i);
    shards = std::stoll(n, &used_n);
    if (used_i != i.size() || used_n != n.size()) throw bad("expected whole numbers i/N");
  } catch (const std::logic_error&) {  // stoll: not a number, or out of range
    throw bad("expected whole numbers i/N");
  }
  if (shards < 1 || shards > kMaxShards) throw bad("N must be between 1 and " + std::to_string(kMaxShards));
  if (shard < 0 || shard >= shards) throw bad("i must be between 0 and N - 1 = " + std::to_string(shards - 1));
  return {shard, shards};
}

std::vector<int64_t> shard_indices(int64_t total, int64_t shard, int64_t shards) {
  std::vector<int64_t> out;
  for (int64_t i = shard; i < total; i += shards) out.push_back(i);
  return out;
}

SweepPart run_sweep_shard(const SweepSpec& spec, int64_t shard, int64_t shards, const SweepProgress& progress) {
  SweepPart part;
  part.fingerprint = sweep_fingerprint(spec);
  part.total = sweep_size(spec);
  part.shard = shard;
  part.shards = shards;
  part.indices = shard_indices(part.total, shard, shards);
  part.results = run_sweep_points(spec, part.indices, progress);
  return part;
}

std::string sweep_fingerprint(const SweepSpec& spec) {
  std::string text = model_to_yaml(spec.model) + topology_to_yaml(spec.topology) + config_to_yaml(spec.base);
  for (const GridAxis& a : spec.axes) text += "\naxis " + a.key + "=" + join(a.values, ",");
  for (const auto& p : spec.points) text += "\npoint " + join(p, " ");
  char numbers[256];
  std::snprintf(numbers, sizeof numbers, "\n%.17g %d %d %.17g %.17g %.17g %.17g %.17g %lld",
                spec.evaluation.memory_margin, spec.evaluation.steps, spec.evaluation.expandable_segments ? 1 : 0,
                spec.run.tokens, spec.run.price_per_gpu_hour, spec.run.failures_per_gpu_hour,
                spec.run.storage_write_bytes_per_s, spec.run.restart_s, static_cast<long long>(spec.max_gpus));
  text += numbers;
  for (const auto& [name, price] : spec.prices) text += "\nprice " + name + "=" + std::to_string(price);
  return fnv1a_hex(text);
}

std::string sweep_part_json(const SweepPart& part) {
  Json j{{"fsdpsim_sweep_part", kPartFormat},
         {"fingerprint", part.fingerprint},
         {"total", part.total},
         {"shard", part.shard},
         {"shards", part.shards},
         {"header", part.header},
         {"results", Json::array()}};
  for (size_t k = 0; k < part.results.size(); ++k)
    j["results"].push_back(result_json(part.indices[k], part.results[k]));
  return j.dump(1) + "\n";
}

SweepPart parse_sweep_part(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ConfigError(json_parse_error_location(text, e.byte, source), "", "malformed sweep part",
                      "the file is truncated or not JSON; write it again with 'fsdpsim sweep --shard i/N --part FILE'");
  } catch (const Json::exception& e) {  // a number beyond a double is out_of_range, not parse_error
    throw ConfigError(SourceLocation{source, 0, 0}, "", std::string("unreadable sweep part: ") + e.what(),
                      "write it again with 'fsdpsim sweep --shard i/N --part FILE'");
  }
  const FieldReader in(text, source);
  if (!j.is_object() || !j.contains("fsdpsim_sweep_part")) {
    throw ConfigError(SourceLocation{source, 1, 1}, "", "not a sweep part (no 'fsdpsim_sweep_part' key)",
                      "give the files 'fsdpsim sweep --shard i/N --part FILE' wrote");
  }
  const auto format = in.get<int64_t>(j, "", "fsdpsim_sweep_part");
  if (format != kPartFormat) {
    in.fail("fsdpsim_sweep_part",
            "format " + std::to_string(format) + " is not this fsdpsim's (" + std::to_string(kPartFormat) + ")");
  }
  SweepPart part;
  part.fingerprint = in.get<std::string>(j, "", "fingerprint");
  part.total = in.get<int64_t>(j, "", "total");
  part.shard = in.get<int64_t>(j, "", "shard");
  part.shards = in.get<int64_t>(j, "", "shards");
  if (part.total < 0 || part.total > limits::kMaxGridPoints) in.fail("total", "out of range");
  if (part.shards < 1 || part.shards > kMaxShards || part.shard < 0 || part.shard >= part.shards) {
    in.fail("shard", "expected 0 <= shard < shards <= " + std::to_string(kMaxShards));
  }
  const Json& header = in.at(j, "", "header");
  if (!header.is_object()) in.fail("header", "expected an object");
  for (const auto& [key, value] : header.items()) {
    if (!value.is_string()) in.fail("header." + key, "expected a string");
    part.header[key] = value.get<std::string>();
  }
  const Json& results = in.at(j, "", "results");
  if (!results.is_array()) in.fail("results", "expected a list");
  const std::vector<int64_t> expected = shard_indices(part.total, part.shard, part.shards);
  if (results.size() != expected.size()) {
    in.fail("results", "shard " + std::to_string(part.shard) + "/" + std::to_string(part.shards) + " of " +
                           std::to_string(part.total) + " points holds " + std::to_string(expected.size()) +
                           " results, not " + std::to_string(results.size()));
  }
  for (size_t k = 0; k < results.size(); ++k) {
    const std::string path = "results[" + std::to_string(k) + "]";
    const auto index = in.get<int64_t>(results[k], path, "index");
    if (index != expected[k]) {
      in.fail(path + ".index",
              "expected point " + std::to_string(expected[k]) + " of this shard, got " + std::to_string(index));
    }
    part.indices.push_back(index);
    part.results.push_back(read_result(in, results[k], path));
  }
  return part;
}

SweepPart load_sweep_part(const std::string& path) {
  return parse_sweep_part(read_file_bytes(path, kMaxSweepPartBytes), path);
}

std::vector<SweepResult> merge_sweep_parts(const std::vector<SweepPart>& parts,
                                           const std::vector<std::string>& sources) {
  const auto where = [&](size_t p) { return SourceLocation{p < sources.size() ? sources[p] : "<part>", 0, 0}; };
  if (parts.empty()) {
    throw ConfigError(SourceLocation{"<merge>", 0, 0}, "", "no parts to merge",
                      "give the files every 'fsdpsim sweep --shard i/N --part FILE' wrote");
  }
  const SweepPart& first = parts.front();
  std::vector<int> seen(static_cast<size_t>(first.shards), -1);
  for (size_t p = 0; p < parts.size(); ++p) {
    const SweepPart& part = parts[p];
    if (part.fingerprint != first.fingerprint || part.total != first.total || part.shards != first.shards ||
        part.header != first.header) {
      throw ConfigError(where(p), "fingerprint",
                        "this part comes from a different sweep than " + where(0).file +
                            " (another model, hardware, configuration, grid or option)",
                        "merge the parts of one sweep, run with the same command and only --shard changed");
    }
    int& owner = seen[static_cast<size_t>(part.shard)];
    if (owner >= 0) {
      throw ConfigError(where(p), "shard",
                        "shard " + std::to_string(part.shard) + "/" + std::to_string(part.shards) + " is also in " +
                            where(static_cast<size_t>(owner)).file,
                        "give each part once");
    }
    owner = static_cast<int>(p);
  }
  std::vector<std::string> missing;
  for (size_t s = 0; s < seen.size(); ++s) {
    if (seen[s] < 0) missing.push_back(std::to_string(s) + "/" + std::to_string(first.shards));
  }
  if (!missing.empty()) {
    throw ConfigError(SourceLocation{"<merge>", 0, 0}, "shard", "missing shards: " + join(missing, ", "),
                      "run 'fsdpsim sweep ... --shard i/N --part FILE' for them and merge every part");
  }
  std::vector<SweepResult> results(static_cast<size_t>(first.total));
  for (const SweepPart& part : parts) {
    for (size_t k = 0; k < part.results.size(); ++k) results[static_cast<size_t>(part.indices[k])] = part.results[k];
  }
  return results;
}

}  // namespace fsdpsim
