// JSON renderings: the report (the fields of docs/architecture.md §2.4 first) and the Chrome trace. Keys are ordered
// and numbers printed the same way every run, so two runs give byte-identical files.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "report/report.h"
#include "report/report_keys.h"

namespace fsdpsim {

using Json = nlohmann::ordered_json;

std::string report_json(const Report& r) {
  Json j;
  for (const ReportKey& row : report_keys()) {
    if (std::optional<Json> value = row.write(r)) j[row.key] = std::move(*value);
  }
  return j.dump(2) + "\n";
}

std::string chrome_trace(const Schedule& s, const RunRecord& run) {
  Json events = Json::array();
  // One process per pipeline stage (its rank's GPU), its streams as threads; without pipeline parallelism, rank 0.
  for (int32_t stage = 0; stage < std::max(1, s.info.pipeline_stages); ++stage) {
    const std::string name = s.info.pipeline_stages > 1 ? "pipeline stage " + std::to_string(stage) : "rank 0";
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", stage},
                      {"args", {{"name", name + " (" + s.info.model + ")"}}}});
  }
  for (size_t st = 0; st < s.streams.size(); ++st) {
    const int32_t pid = s.streams[st].stage;
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", st}, {"args", {{"name", s.streams[st].name}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", st}, {"args", {{"sort_index", st}}}});
  }
  for (size_t step = 0; step < run.steps.size(); ++step) {
    const StepRun& sr = run.steps[step];
    for (const Op& op : s.ops) {
      const OpTiming& t = sr.ops[op.id];
      Json args = {{"id", op.id.value()}, {"step", step}, {"phase", std::string(to_string(op.phase))}};
      if (is_collective(op.kind)) {
        args["bytes"] = collective_size_bytes(op);
        args["group"] = s.groups[op.group].name;
        if (const Prediction* predicted = run.prediction()) {  // the NCCL algorithm the cost model chose
          const CollectiveChoice& c = predicted->collectives[op.id.index()];
          args["algorithm"] = std::string(c.algorithm) + "/" + std::string(c.protocol);
        }
      }
      if (!op.gemms.empty()) args["gflop"] = static_cast<double>(op.gemm_flops()) / 1e9;
      events.push_back({{"name", op.name},
                        {"cat", std::string(to_string(op.kind))},
                        {"ph", "X"},
                        {"pid", s.stage_of(op)},
                        {"tid", op.stream.value()},
                        {"ts", static_cast<double>(t.start_ns) / 1e3},
                        {"dur", static_cast<double>(t.end_ns - t.start_ns) / 1e3},
                        {"args", args}});
    }
  }
  for (const MemorySample& m : run.timeline) {
    Json args;
    for (const BufferCategory c : all_buffer_categories()) {
      args[std::string(to_string(c))] = static_cast<double>(m.bytes[static_cast<size_t>(c)]) / (1 << 30);
    }
    events.push_back({{"name", "memory by category (GiB)"},
                      {"ph", "C"},
                      {"pid", run.memory_stage},  // the timeline is the fullest stage's
                      {"ts", static_cast<double>(m.time_ns) / 1e3},
                      {"args", args}});
    events.push_back({{"name", "reserved (GiB)"},
                      {"ph", "C"},
                      {"pid", run.memory_stage},  // the timeline is the fullest stage's
                      {"ts", static_cast<double>(m.time_ns) / 1e3},
                      {"args",
                       {{"reserved", static_cast<double>(m.reserved_bytes) / (1 << 30)},
                        {"allocated", static_cast<double>(m.allocated_bytes) / (1 << 30)}}}});
  }
  Json trace = {{"displayTimeUnit", "ms"}, {"traceEvents", events}};
  return trace.dump() + "\n";
}

}  // namespace fsdpsim
