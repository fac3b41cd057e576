// Reading a JSON report back (for `fsdpsim validate`): strict, with errors that name the file, the line and the key.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/yaml_reader.h"
#include "sim/report_compare.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem, const std::string& fix) const {
    throw ConfigError(SourceLocation{source_, 0, 0}, key, problem, fix);
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
    return v.get<double>();
  }

  int64_t integer(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = field(object, key, path);
    if (!v.is_number_integer())
      fail(path.empty() ? key : path + "." + key, "expected a whole number, got " + std::string(v.type_name()), "");
    return v.get<int64_t>();
  }

  std::string text(const Json& object, const std::string& key, const std::string& path = "") const {
    const Json& v = field(object, key, path);
    if (!v.is_string())
      fail(path.empty() ? key : path + "." + key, "expected a string, got " + std::string(v.type_name()), "");
    return v.get<std::string>();
  }

 private:
  std::string source_;
};

// nlohmann reports a byte offset; say which line that is.
SourceLocation location_of_byte(const std::string& text, size_t byte, const std::string& source) {
  byte = std::min(byte, text.size());
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n');
  const size_t line_start = text.rfind('\n', byte == 0 ? 0 : byte - 1);
  const auto column = static_cast<int>(byte - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
  return SourceLocation{source, static_cast<int>(line), column};
}

std::optional<OpKind> kind_named(const std::string& s) {
  return parse_op_kind(s);
}

}  // namespace

Report report_from_json(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ConfigError(location_of_byte(text, e.byte == 0 ? 0 : e.byte - 1, source), "", "malformed JSON report",
                      "the file is truncated or not JSON; write it again with --json");
  }
  Reader r(source);
  Report rep;
  rep.source = r.text(j, "source");
  rep.model = r.text(j, "model");
  rep.step_time_s = r.number(j, "step_time_s");
  rep.first_step_time_s = r.number(j, "first_step_time_s");
  rep.exposed_comm_s = r.number(j, "exposed_comm_s");
  rep.peak_allocated_bytes = r.integer(j, "peak_allocated_bytes");
  rep.peak_reserved_bytes = r.integer(j, "peak_reserved_bytes");
  rep.world_size = static_cast<int32_t>(r.integer(j, "world_size"));
  const Json& phases = r.field(j, "exposed_comm_by_phase_s", "");
  if (!phases.is_object()) r.fail("exposed_comm_by_phase_s", "expected an object", "");
  for (const auto& [phase, v] : phases.items()) {
    if (!v.is_number()) r.fail("exposed_comm_by_phase_s." + phase, "expected a number", "");
    rep.exposed_comm_by_phase_s[phase] = v.get<double>();
  }
  const Json& ops = r.field(j, "ops", "");
  if (!ops.is_array()) r.fail("ops", "expected an array of ops", "");
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = "ops[" + std::to_string(i) + "]";
    OpRecord op;
    op.id = static_cast<int32_t>(r.integer(ops[i], "id", path));
    if (op.id != static_cast<int32_t>(i)) r.fail(path + ".id", "op ids must be 0, 1, 2, ... in order", "");
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
