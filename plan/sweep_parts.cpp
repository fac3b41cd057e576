#include "plan/sweep_parts.h"

#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "plan/sweep_row.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::ordered_json;

// 2: each result is the row of `sweep --json` (plan/sweep_row.h) with its grid index; 1 had a layout of its own.
constexpr int kPartFormat = 2;
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
  for (size_t k = 0; k < part.results.size(); ++k) {
    Json row{{"index", part.indices[k]}};
    row.update(sweep_row_json(part.results[k]));
    j["results"].push_back(std::move(row));
  }
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
  const JsonFields in(text, source, "write the part again with 'fsdpsim sweep --shard i/N --part FILE'");
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
    part.results.push_back(read_sweep_row(in, results[k], path));
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
