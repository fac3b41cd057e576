// Reading a JSON report back (for `fsdpsim validate`): strict, with errors that name the file, the line and the key.
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_location.h"
#include "common/limits.h"
#include "common/yaml_reader.h"
#include "report/report_compare.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::json;

class Reader {
 public:
  Reader(std::string source, const std::string& text) : source_(std::move(source)), text_(text) {}

  /// Throws at the line of `key` ("ops[3].kind"), or of the object that lacks it.
  [[noreturn]] void fail(const std::string& key, const std::string& problem, const std::string& fix) const {
    SourceLocation where = json_path_location(text_, key, source_);
    for (std::string parent = key; where.line == 0 && !parent.empty();) {
      const size_t cut = parent.find_last_of(".[");
      parent = cut == std::string::npos ? "" : parent.substr(0, cut);
      where = json_path_location(text_, parent, source_);
    }
    throw ConfigError(where, key, problem,
                      fix.empty() ? "write the report again with 'fsdpsim simulate --json' or "
                                    "'fsdpsim exec --json'"
                                  : fix);
  }

  const Json& field(const Json& object, const std::string& key, const std::string& path) const {
    if (!object.is_object()) fail(path, "expected an object", "write the report that 'fsdpsim simulate --json' writes");
    const auto it = object.find(key);
    if (it == object.end()) {
      fail(path.empty() ? key : path + "." + key, "missing required field",
           "the file is truncated or not a fsdpsim report (write it with --json)");
    }
    return *it;
  }

  double number(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = field(object, key, path);
    if (!v.is_number())
      fail(path.empty() ? key : path + "." + key, "expected a number, got " + std::string(v.type_name()), "");
    // Every number of a report is a time or a rate: finite (nlohmann reads 1e999 as infinity) and not negative.
    const double value = v.get<double>();
    if (!std::isfinite(value) || value < 0) {
      fail(path.empty() ? key : path + "." + key, "expected a finite number ≥ 0, got " + v.dump(), "");
    }
    return value;
  }

  int64_t integer(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = field(object, key, path);
    if (!v.is_number_integer())
      fail(path.empty() ? key : path + "." + key, "expected a whole number, got " + std::string(v.type_name()), "");
    // Every whole number of a report is an id, a count, bytes or nanoseconds: ≥ 0 and within int64.
    if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) : v.get<int64_t>() < 0) {
      fail(path.empty() ? key : path + "." + key, "expected a whole number between 0 and 2^63, got " + v.dump(), "");
    }
    return v.get<int64_t>();
  }

  /// A true/false field that older reports lack (absent: false).
  bool optional_flag(const Json& object, const std::string& key) const {
    const auto it = object.find(key);
    if (it == object.end()) return false;
    if (!it->is_boolean()) fail(key, "expected true or false, got " + std::string(it->type_name()), "");
    return it->get<bool>();
  }

  std::string text(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = field(object, key, path);
    if (!v.is_string())
      fail(path.empty() ? key : path + "." + key, "expected a string, got " + std::string(v.type_name()), "");
    return v.get<std::string>();
  }

 private:
  std::string source_;
  const std::string& text_;
};

// nlohmann reports a byte offset; say which line that is.
std::optional<OpKind> kind_named(const std::string& s) {
  return parse_op_kind(s);
}

}  // namespace

Report report_from_json(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ConfigError(json_parse_error_location(text, e.byte, source), "", "malformed JSON report",
                      "the file is truncated or not JSON; write it again with --json");
  } catch (const Json::exception& e) {
    // nlohmann throws out_of_range, not parse_error, for a number beyond a double (0.0013e7673): a fuzzer find.
    throw ConfigError(SourceLocation{source, 0, 0}, "", std::string("unreadable JSON report: ") + e.what(),
                      "write it again with --json");
  }
  Reader r(source, text);
  Report rep;
  rep.source = r.text(j, "source");
  rep.model = r.text(j, "model");
  rep.step_time_s = r.number(j, "step_time_s");
  rep.first_step_time_s = r.number(j, "first_step_time_s");
  rep.exposed_comm_s = r.number(j, "exposed_comm_s");
  rep.peak_allocated_bytes = r.integer(j, "peak_allocated_bytes");
  rep.peak_reserved_bytes = r.integer(j, "peak_reserved_bytes");
  const int64_t world_size = r.integer(j, "world_size");
  if (world_size < 1 || world_size > limits::kMaxWorldSize) {
    r.fail("world_size", "world_size=" + std::to_string(world_size) + " is not a job size",
           "between 1 and " + std::to_string(limits::kMaxWorldSize) + " GPUs");
  }
  rep.world_size = static_cast<int32_t>(world_size);
  rep.gpu_memory_bytes = r.integer(j, "gpu_memory_bytes");
  // Overheads, and what a GPU run measured about them, are compared only where the report has them (reports
  // written before they were added lack these keys).
  if (j.contains("overhead_bytes")) {
    const Json& o = j["overhead_bytes"];
    rep.overheads.cuda_context_bytes = r.integer(o, "cuda_context", "overhead_bytes");
    rep.overheads.cublas_workspace_bytes = r.integer(o, "cublas_workspace", "overhead_bytes");
    rep.overheads.nccl_bytes = r.integer(o, "nccl", "overhead_bytes");
    rep.overheads.nccl_registration_bytes = r.integer(o, "nccl_registration", "overhead_bytes");
  }
  rep.overheads_measured = r.optional_flag(j, "overheads_measured");
  rep.collectives_emulated = r.optional_flag(j, "collectives_emulated");
  if (j.contains("executor_scratch_bytes")) rep.executor_scratch_bytes = r.integer(j, "executor_scratch_bytes");
  const Json& phases = r.field(j, "exposed_comm_by_phase_s", "");
  if (!phases.is_object()) r.fail("exposed_comm_by_phase_s", "expected an object", "");
  for (const auto& [phase, v] : phases.items()) {
    if (!v.is_number()) r.fail("exposed_comm_by_phase_s." + phase, "expected a number", "");
    rep.exposed_comm_by_phase_s[phase] = v.get<double>();
  }
  const Json& ops = r.field(j, "ops", "");
  if (!ops.is_array()) r.fail("ops", "expected an array of ops", "");
  if (static_cast<int64_t>(ops.size()) > limits::kMaxScheduleOps) {
    r.fail("ops", std::to_string(ops.size()) + " ops is beyond what fsdpsim models",
           "a step has at most " + std::to_string(limits::kMaxScheduleOps) + " ops (see the limits in README.md)");
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = "ops[" + std::to_string(i) + "]";
    OpRecord op;
    if (r.integer(ops[i], "id", path) != static_cast<int64_t>(i)) {
      r.fail(path + ".id", "op ids must be 0, 1, 2, ... in order", "");
    }
    op.id = OpId(static_cast<int32_t>(i));
    op.name = r.text(ops[i], "name", path);
    const std::string kind = r.text(ops[i], "kind", path);
    const auto k = kind_named(kind);
    if (!k) r.fail(path + ".kind", "unknown op kind '" + kind + "'", "");
    op.kind = *k;
    const std::string phase = r.text(ops[i], "phase", path);
    const auto p = parse_phase(phase);
    if (!p) r.fail(path + ".phase", "unknown phase '" + phase + "'", "use fwd, bwd, recompute or optim");
    op.phase = *p;
    op.stream = r.text(ops[i], "stream", path);
    op.start_ns = r.integer(ops[i], "start_ns", path);
    op.duration_ns = r.integer(ops[i], "duration_ns", path);
    if (op.duration_ns < 0 || op.start_ns < 0)
      r.fail(path, "negative time", "times are nanoseconds from the step start");
    rep.ops.push_back(std::move(op));
  }
  return rep;
}

Report load_report(const std::string& path) {
  return report_from_json(read_text_file(path), path);
}

}  // namespace fsdpsim
