#include "report/report_keys.h"

#include <cmath>

#include "common/error.h"
#include "common/json_location.h"
#include "common/limits.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using Row = ReportKey;

/// A row written as the member's value and not read back.
template <class V>
Row written(std::string key, V Report::*member) {
  return {std::move(key), [member](const Report& r) -> std::optional<OrderedJson> { return OrderedJson(r.*member); },
          nullptr};
}

/// A row written only where the member is not at its default (a figure only some runs have), never read back.
template <class V>
Row written_when_set(std::string key, V Report::*member) {
  return {std::move(key),
          [member](const Report& r) -> std::optional<OrderedJson> {
            if (r.*member == V{}) return std::nullopt;
            return OrderedJson(r.*member);
          },
          nullptr};
}

/// A row written as the member's value and read back as a number ≥ 0.
Row number(std::string key, double Report::*member) {
  Row row = written(std::move(key), member);
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    r.*member = in.number(j, k);
  };
  return row;
}

/// A row written as the member's value and read back as a whole number ≥ 0.
Row integer(std::string key, int64_t Report::*member, KeyPresence presence = KeyPresence::required) {
  Row row = written(std::move(key), member);
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    r.*member = in.integer(j, k);
  };
  row.presence = presence;
  return row;
}

/// A whole number only some runs have: written where set, read back where present (older reports lack it).
Row integer_when_set(std::string key, int64_t Report::*member) {
  Row row = written_when_set(std::move(key), member);
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    r.*member = in.integer(j, k);
  };
  row.presence = KeyPresence::optional;
  return row;
}

/// Whole numbers per pipeline stage: written where there are any, read back where present (older reports lack them).
Row integers_when_set(std::string key, std::vector<int64_t> Report::*member) {
  Row row = written_when_set(std::move(key), member);
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    const Json& list = in.field(j, k, "");
    if (!list.is_array()) in.fail(k, "is not a list of whole numbers", "write the report again with fsdpsim");
    (r.*member).clear();
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_number_integer() || list[i].get<int64_t>() < 0) {
        in.fail(k + "[" + std::to_string(i) + "]", "is not a whole number >= 0", "write the report again with fsdpsim");
      }
      (r.*member).push_back(list[i].get<int64_t>());
    }
  };
  row.presence = KeyPresence::optional;
  return row;
}

/// Bytes by name (the breakdown at the peak), read back where present: a snapshot comparison sets it against the
/// categories a real run's snapshot gives.
Row byte_map(std::string key, std::map<std::string, int64_t> Report::*member) {
  Row row = written(std::move(key), member);
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    const Json& object = in.field(j, k, "");
    if (!object.is_object()) in.fail(k, "is not an object of byte counts", "write the report again with fsdpsim");
    for (const auto& [name, bytes] : object.items()) (r.*member)[name] = in.integer(object, name, k);
  };
  row.presence = KeyPresence::optional;
  return row;
}

/// An identity text row, read back in the first pass.
Row text(std::string key, std::string Report::*member) {
  Row row = written(std::move(key), member);
  row.pass = ReadPass::first;
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    r.*member = in.text(j, k);
  };
  return row;
}

/// A true/false row that older reports lack (absent reads as false).
Row flag(std::string key, bool Report::*member) {
  Row row = written(std::move(key), member);
  row.read = [member](Report& r, const Json& j, const std::string& k, const JsonReportReader& in) {
    r.*member = in.optional_flag(j, k);
  };
  row.presence = KeyPresence::optional;
  return row;
}

/// A row of the model's size, written only where the schedule records it.
Row model_size(std::string key, int64_t ModelSize::*member) {
  return {std::move(key),
          [member](const Report& r) -> std::optional<OrderedJson> {
            if (r.model_size.params <= 0) return std::nullopt;
            return OrderedJson(r.model_size.*member);
          },
          nullptr};
}

OrderedJson memory_verdict_json(const Report& r) {
  return {{"fit", to_string(r.memory.fit)},
          {"needed_bytes", r.memory.needed_bytes},
          {"gpu_memory_bytes", r.memory.gpu_memory_bytes},
          {"margin", r.memory.margin},
          {"band",
           {{"low_bytes", r.memory.band_low_bytes},
            {"high_bytes", r.memory.band_high_bytes},
            {"coverage", r.memory.band.coverage},
            {"published_runs", r.memory.band.runs}}}};
}

std::optional<OrderedJson> host_offload_json(const Report& r) {
  if (r.host_offload_bytes_per_gpu <= 0) return std::nullopt;
  return OrderedJson{{"bytes_per_gpu", r.host_offload_bytes_per_gpu},
                     {"bytes_per_node", r.host_offload_bytes_per_node},
                     {"host_memory_bytes", r.host_memory_bytes},
                     {"host_bw_per_gpu_bytes_per_s", r.host_bw_per_gpu_bytes_per_s},
                     {"gpus_per_host_link", r.gpus_per_host_link}};
}

void read_world_size(Report& r, const Json& j, const std::string& key, const JsonReportReader& in) {
  const int64_t world_size = in.integer(j, key);
  if (world_size < 1 || world_size > limits::kMaxWorldSize) {
    in.fail(key, "world_size=" + std::to_string(world_size) + " is not a job size",
            "between 1 and " + std::to_string(limits::kMaxWorldSize) + " GPUs");
  }
  r.world_size = static_cast<int32_t>(world_size);
}

OrderedJson overheads_json(const Report& r) {
  OrderedJson o = {{"cuda_context", r.overheads.cuda_context_bytes},
                   {"cublas_workspace", r.overheads.cublas_workspace_bytes},
                   {"nccl", r.overheads.nccl_bytes},
                   {"nccl_registration", r.overheads.nccl_registration_bytes}};
  // Only a pipeline has point-to-point connections; other reports keep their keys.
  if (r.overheads.p2p_peers > 0) {
    o["nccl_p2p"] = r.overheads.nccl_p2p_bytes;
    o["p2p_peers"] = r.overheads.p2p_peers;
    o["p2p_channels_per_peer"] = r.overheads.p2p_channels_per_peer;
  }
  return o;
}

void read_overheads(Report& r, const Json& j, const std::string& key, const JsonReportReader& in) {
  const Json& o = in.field(j, key, "");
  r.overheads.cuda_context_bytes = in.integer(o, "cuda_context", key);
  r.overheads.cublas_workspace_bytes = in.integer(o, "cublas_workspace", key);
  r.overheads.nccl_bytes = in.integer(o, "nccl", key);
  r.overheads.nccl_registration_bytes = in.integer(o, "nccl_registration", key);
  if (o.contains("p2p_peers")) {
    r.overheads.nccl_p2p_bytes = in.integer(o, "nccl_p2p", key);
    r.overheads.p2p_peers = static_cast<int32_t>(in.integer(o, "p2p_peers", key));
    r.overheads.p2p_channels_per_peer = static_cast<int32_t>(in.integer(o, "p2p_channels_per_peer", key));
  }
}

void read_exposed_by_phase(Report& r, const Json& j, const std::string& key, const JsonReportReader& in) {
  const Json& phases = in.field(j, key, "");
  if (!phases.is_object()) in.fail(key, "expected an object", "");
  for (const auto& [phase, v] : phases.items()) {
    if (!v.is_number()) in.fail(key + "." + phase, "expected a number", "");
    r.exposed_comm_by_phase_s[phase] = v.get<double>();
  }
}

OrderedJson collectives_json(const Report& r) {
  OrderedJson all = OrderedJson::array();
  for (const auto& c : r.collectives) {
    all.push_back({{"kind", std::string(to_string(c.kind))},
                   {"group", c.group},
                   {"ranks", c.ranks},
                   {"domains", c.domains},
                   {"count", c.count},
                   {"max_size_bytes", c.size_bytes},
                   {"algorithm", c.algorithm},
                   {"busbw_bytes_per_s", c.busbw_bytes_per_s},
                   {"busy_s", static_cast<double>(c.busy_ns) / 1e9}});
  }
  return all;
}

OrderedJson ops_json(const Report& r) {
  OrderedJson all = OrderedJson::array();
  for (const auto& op : r.ops) {
    all.push_back({{"id", op.id.value()},
                   {"name", op.name},
                   {"kind", std::string(to_string(op.kind))},
                   {"phase", std::string(to_string(op.phase))},
                   {"stream", op.stream},
                   {"start_ns", op.start_ns},
                   {"duration_ns", op.duration_ns}});
  }
  return all;
}

void read_ops(Report& r, const Json& j, const std::string& key, const JsonReportReader& in) {
  const Json& ops = in.field(j, key, "");
  if (!ops.is_array()) in.fail(key, "expected an array of ops", "");
  if (static_cast<int64_t>(ops.size()) > limits::kMaxScheduleOps) {
    in.fail(key, std::to_string(ops.size()) + " ops is beyond what fsdpsim models",
            "a step has at most " + std::to_string(limits::kMaxScheduleOps) + " ops (see the limits in docs/hardening.md)");
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string path = key + "[" + std::to_string(i) + "]";
    OpRecord op;
    if (in.integer(ops[i], "id", path) != static_cast<int64_t>(i)) {
      in.fail(path + ".id", "op ids must be 0, 1, 2, ... in order", "");
    }
    op.id = OpId(static_cast<int32_t>(i));
    op.name = in.text(ops[i], "name", path);
    const std::string kind = in.text(ops[i], "kind", path);
    const std::optional<OpKind> k = parse_op_kind(kind);
    if (!k) in.fail(path + ".kind", "unknown op kind '" + kind + "'", "");
    op.kind = *k;
    const std::string phase = in.text(ops[i], "phase", path);
    const std::optional<Phase> p = parse_phase(phase);
    if (!p) in.fail(path + ".phase", "unknown phase '" + phase + "'", "use fwd, bwd, recompute or optim");
    op.phase = *p;
    op.stream = in.text(ops[i], "stream", path);
    op.start_ns = in.integer(ops[i], "start_ns", path);
    op.duration_ns = in.integer(ops[i], "duration_ns", path);
    r.ops.push_back(std::move(op));
  }
}

std::vector<Row> make_report_keys() {
  return {
      number("step_time_s", &Report::step_time_s),
      written("tokens_per_s_per_gpu", &Report::tokens_per_s_per_gpu),
      written("tflops_per_gpu", &Report::tflops_per_gpu),
      written("mfu", &Report::mfu),
      number("exposed_comm_s", &Report::exposed_comm_s),
      integer("peak_allocated_bytes", &Report::peak_allocated_bytes),
      integer("peak_reserved_bytes", &Report::peak_reserved_bytes),
      integer("gpu_memory_bytes", &Report::gpu_memory_bytes),
      written("oom", &Report::oom),
      {"memory_verdict", [](const Report& r) -> std::optional<OrderedJson> { return memory_verdict_json(r); }, nullptr},
      {"host_offload", host_offload_json, nullptr},
      {"tokens_per_s_per_gpu_band",
       [](const Report& r) -> std::optional<OrderedJson> {
         return OrderedJson{r.tokens_per_s_band_low, r.tokens_per_s_band_high};
       },
       nullptr},
      byte_map("memory_breakdown", &Report::memory_breakdown),
      text("source", &Report::source),
      text("model", &Report::model),
      written("implementation", &Report::implementation),
      written("strategy", &Report::strategy),
      written("topology", &Report::topology),
      written("gpu", &Report::gpu),
      {"world_size", [](const Report& r) -> std::optional<OrderedJson> { return OrderedJson(r.world_size); },
       read_world_size},
      written("nodes", &Report::nodes),
      written("micro_batches", &Report::micro_batches),
      written_when_set("layout", &Report::layout),
      written_when_set("warnings", &Report::warnings),
      model_size("model_params", &ModelSize::params),
      model_size("model_active_params", &ModelSize::active_params),
      model_size("params_per_rank", &ModelSize::params_per_rank),
      model_size("model_flops_per_token", &ModelSize::flops_per_token),
      written("read_not_modelled", &Report::read_not_modelled),
      written_when_set("measured_tables", &Report::measured_tables),
      written_when_set("simulated_rank", &Report::simulated_rank),
      written_when_set("pipeline_schedule", &Report::pipeline_schedule),
      written_when_set("pipeline_bubble_s", &Report::pipeline_bubble_s),
      written_when_set("pipeline_stage_bubble_s", &Report::pipeline_stage_bubble_s),
      integers_when_set("stage_peak_allocated_bytes", &Report::stage_peak_allocated_bytes),
      integers_when_set("stage_peak_reserved_bytes", &Report::stage_peak_reserved_bytes),
      written_when_set("straggler_cost_s", &Report::straggler_cost_s),
      written_when_set("host_walk_s", &Report::host_walk_s),
      written_when_set("host_bound_s", &Report::host_bound_s),
      integer_when_set("host_kernels_per_step", &Report::host_kernels_per_step),
      written_when_set("host_dispatch", &Report::host_dispatch),
      number("first_step_time_s", &Report::first_step_time_s),
      {"exposed_comm_by_phase_s",
       [](const Report& r) -> std::optional<OrderedJson> { return OrderedJson(r.exposed_comm_by_phase_s); },
       read_exposed_by_phase},
      written("exposed_comm_by_kind_s", &Report::exposed_comm_by_kind_s),
      written("oom_reason", &Report::oom_reason),
      written("first_step_peak_reserved_bytes", &Report::first_step_peak_reserved_bytes),
      written("persistent_bytes", &Report::persistent_bytes),
      written("persistent_total_bytes", &Report::persistent_total_bytes),
      {"overhead_bytes", [](const Report& r) -> std::optional<OrderedJson> { return overheads_json(r); },
       read_overheads, KeyPresence::optional},
      flag("overheads_measured", &Report::overheads_measured),
      integer("executor_scratch_bytes", &Report::executor_scratch_bytes, KeyPresence::optional),
      flag("collectives_emulated", &Report::collectives_emulated),
      written("peak_time_s", &Report::peak_time_s),
      written("peak_op", &Report::peak_op),
      written("peak_phase", &Report::peak_phase),
      written("cuda_malloc_calls_first_step", &Report::cuda_malloc_calls_first_step),
      written("fragmentation_bytes", &Report::fragmentation_bytes),
      written("longest_waits", &Report::longest_wait_lines),
      {"collectives", [](const Report& r) -> std::optional<OrderedJson> { return collectives_json(r); }, nullptr},
      {"ops", [](const Report& r) -> std::optional<OrderedJson> { return ops_json(r); }, read_ops},
      written("events", &Report::events),
  };
}

}  // namespace

void JsonReportReader::fail(const std::string& key, const std::string& problem, const std::string& fix) const {
  SourceLocation where = json_path_location(text_, key, source_);
  for (std::string parent = key; where.line == 0 && !parent.empty();) {
    const size_t cut = parent.find_last_of(".[");
    parent = cut == std::string::npos ? "" : parent.substr(0, cut);
    where = json_path_location(text_, parent, source_);
  }
  throw ConfigError(
      where, key, problem,
      fix.empty() ? "write the report again with 'fsdpsim simulate --json' or 'fsdpsim exec --json'" : fix);
}

const Json& JsonReportReader::field(const Json& object, const std::string& key, const std::string& path) const {
  if (!object.is_object()) fail(path, "expected an object", "write the report that 'fsdpsim simulate --json' writes");
  const auto it = object.find(key);
  if (it == object.end()) {
    fail(path.empty() ? key : path + "." + key, "missing required field",
         "the file is truncated or not a fsdpsim report (write it with --json)");
  }
  return *it;
}

double JsonReportReader::number(const Json& object, const std::string& key, const std::string& path) const {
  const Json& v = field(object, key, path);
  const std::string where = path.empty() ? key : path + "." + key;
  if (!v.is_number()) fail(where, "expected a number, got " + std::string(v.type_name()), "");
  // nlohmann reads 1e999 as infinity.
  const double value = v.get<double>();
  if (!std::isfinite(value) || value < 0) fail(where, "expected a finite number ≥ 0, got " + v.dump(), "");
  return value;
}

int64_t JsonReportReader::integer(const Json& object, const std::string& key, const std::string& path) const {
  const Json& v = field(object, key, path);
  const std::string where = path.empty() ? key : path + "." + key;
  if (!v.is_number_integer()) fail(where, "expected a whole number, got " + std::string(v.type_name()), "");
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) : v.get<int64_t>() < 0) {
    fail(where, "expected a whole number between 0 and 2^63, got " + v.dump(), "");
  }
  return v.get<int64_t>();
}

bool JsonReportReader::optional_flag(const Json& object, const std::string& key) const {
  const auto it = object.find(key);
  if (it == object.end()) return false;
  if (!it->is_boolean()) fail(key, "expected true or false, got " + std::string(it->type_name()), "");
  return it->get<bool>();
}

std::string JsonReportReader::text(const Json& object, const std::string& key, const std::string& path) const {
  const Json& v = field(object, key, path);
  if (!v.is_string()) {
    fail(path.empty() ? key : path + "." + key, "expected a string, got " + std::string(v.type_name()), "");
  }
  return v.get<std::string>();
}

const std::vector<ReportKey>& report_keys() {
  static const std::vector<ReportKey> keys = make_report_keys();
  return keys;
}

}  // namespace fsdpsim
