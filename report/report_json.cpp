// JSON renderings: the report (the fields of docs/architecture.md §2.4 first) and the Chrome trace. Keys are ordered
// and numbers printed the same way every run, so two runs give byte-identical files.
#include <nlohmann/json.hpp>

#include "report/report.h"

namespace fsdpsim {

using Json = nlohmann::ordered_json;

std::string report_json(const Report& r) {
  Json j;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["exposed_comm_s"] = r.exposed_comm_s;
  j["peak_allocated_bytes"] = r.peak_allocated_bytes;
  j["peak_reserved_bytes"] = r.peak_reserved_bytes;
  j["gpu_memory_bytes"] = r.gpu_memory_bytes;
  j["oom"] = r.oom;
  j["memory_verdict"] = {{"fit", to_string(r.memory.fit)},
                         {"needed_bytes", r.memory.needed_bytes},
                         {"gpu_memory_bytes", r.memory.gpu_memory_bytes},
                         {"margin", r.memory.margin},
                         {"band",
                          {{"low_bytes", r.memory.band_low_bytes},
                           {"high_bytes", r.memory.band_high_bytes},
                           {"coverage", r.memory.band.coverage},
                           {"published_runs", r.memory.band.runs}}}};
  if (r.host_offload_bytes_per_gpu > 0) {
    j["host_offload"] = {{"bytes_per_gpu", r.host_offload_bytes_per_gpu},
                         {"bytes_per_node", r.host_offload_bytes_per_node},
                         {"host_memory_bytes", r.host_memory_bytes},
                         {"host_bw_per_gpu_bytes_per_s", r.host_bw_per_gpu_bytes_per_s},
                         {"gpus_per_host_link", r.gpus_per_host_link}};
  }
  j["tokens_per_s_per_gpu_band"] = {r.tokens_per_s_band_low, r.tokens_per_s_band_high};
  j["memory_breakdown"] = r.memory_breakdown;
  j["source"] = r.source;
  j["model"] = r.model;
  j["implementation"] = r.implementation;
  j["strategy"] = r.strategy;
  j["topology"] = r.topology;
  j["gpu"] = r.gpu;
  j["world_size"] = r.world_size;
  j["nodes"] = r.nodes;
  j["micro_batches"] = r.micro_batches;
  if (r.model_size.params > 0) {
    j["model_params"] = r.model_size.params;
    j["model_active_params"] = r.model_size.active_params;
    j["params_per_rank"] = r.model_size.params_per_rank;
    j["model_flops_per_token"] = r.model_size.flops_per_token;
  }
  j["read_not_modelled"] = r.read_not_modelled;
  j["first_step_time_s"] = r.first_step_time_s;
  j["exposed_comm_by_phase_s"] = r.exposed_comm_by_phase_s;
  j["exposed_comm_by_kind_s"] = r.exposed_comm_by_kind_s;
  j["oom_reason"] = r.oom_reason;
  j["first_step_peak_reserved_bytes"] = r.first_step_peak_reserved_bytes;
  j["persistent_bytes"] = r.persistent_bytes;
  j["persistent_total_bytes"] = r.persistent_total_bytes;
  j["overhead_bytes"] = {{"cuda_context", r.overheads.cuda_context_bytes},
                         {"cublas_workspace", r.overheads.cublas_workspace_bytes},
                         {"nccl", r.overheads.nccl_bytes},
                         {"nccl_registration", r.overheads.nccl_registration_bytes}};
  j["overheads_measured"] = r.overheads_measured;
  j["executor_scratch_bytes"] = r.executor_scratch_bytes;
  j["collectives_emulated"] = r.collectives_emulated;
  j["peak_time_s"] = r.peak_time_s;
  j["peak_op"] = r.peak_op;
  j["peak_phase"] = r.peak_phase;
  j["cuda_malloc_calls_first_step"] = r.cuda_malloc_calls_first_step;
  j["fragmentation_bytes"] = r.fragmentation_bytes;
  j["longest_waits"] = Json::array();
  for (const auto& line : r.longest_wait_lines) j["longest_waits"].push_back(line);
  j["collectives"] = Json::array();
  for (const auto& c : r.collectives) {
    j["collectives"].push_back({{"kind", std::string(to_string(c.kind))},
                                {"group", c.group},
                                {"ranks", c.ranks},
                                {"domains", c.domains},
                                {"count", c.count},
                                {"max_size_bytes", c.size_bytes},
                                {"algorithm", c.algorithm},
                                {"busbw_bytes_per_s", c.busbw_bytes_per_s},
                                {"busy_s", static_cast<double>(c.busy_ns) / 1e9}});
  }
  j["ops"] = Json::array();
  for (const auto& op : r.ops) {
    j["ops"].push_back({{"id", op.id.value()},
                        {"name", op.name},
                        {"kind", std::string(to_string(op.kind))},
                        {"phase", std::string(to_string(op.phase))},
                        {"stream", op.stream},
                        {"start_ns", op.start_ns},
                        {"duration_ns", op.duration_ns}});
  }
  j["events"] = r.events;
  return j.dump(2) + "\n";
}

std::string chrome_trace(const Schedule& s, const RunRecord& run) {
  Json events = Json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", "rank 0 (" + s.info.model + ")"}}}});
  for (size_t st = 0; st < s.streams.size(); ++st) {
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", st}, {"args", {{"name", s.streams[st].name}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", st}, {"args", {{"sort_index", st}}}});
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
                        {"pid", 0},
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
                      {"pid", 0},
                      {"ts", static_cast<double>(m.time_ns) / 1e3},
                      {"args", args}});
    events.push_back({{"name", "reserved (GiB)"},
                      {"ph", "C"},
                      {"pid", 0},
                      {"ts", static_cast<double>(m.time_ns) / 1e3},
                      {"args",
                       {{"reserved", static_cast<double>(m.reserved_bytes) / (1 << 30)},
                        {"allocated", static_cast<double>(m.allocated_bytes) / (1 << 30)}}}});
  }
  Json trace = {{"displayTimeUnit", "ms"}, {"traceEvents", events}};
  return trace.dump() + "\n";
}

}  // namespace fsdpsim
