// The report of one run: the job and its key numbers, the timeline per stream, memory over time, the breakdown at the
// peak and the OOM advice, in one self-contained HTML file.
#include "plan/html_report.h"

#include <cstdio>

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"
#include "plan/html_charts.h"
#include "plan/html_svg.h"
#include "schedule/summary.h"

namespace fsdpsim {
namespace {

std::string card(const std::string& key, const std::string& value, const std::string& cls = "") {
  return "<div class=\"card\"><div class=\"k\">" + html_escape(key) + "</div><div class=\"v" +
         (cls.empty() ? "" : " " + cls) + "\">" + value + "</div></div>\n";
}

std::string job_table(const Report& r) {
  const auto row = [](const std::string& key, const std::string& value) {
    return "<tr><th>" + key + "</th><td>" + html_escape(value) + "</td></tr>\n";
  };
  const std::string size = model_size_text(r.model_size);  // empty when the schedule does not record it
  return "<table id=\"job\"><tbody>\n" + row("model", r.model) + (size.empty() ? "" : row("model size", size)) +
         row("implementation", r.implementation) + row("sharding strategy", r.strategy) +
         row("topology", r.topology + " (" + r.gpu + ")") +
         row("GPUs",
             std::to_string(r.world_size) + " on " + std::to_string(r.nodes) + " node" + (r.nodes == 1 ? "" : "s")) +
         row("micro-batches per step", std::to_string(r.micro_batches)) + row("source", r.source) +
         "</tbody></table>\n";
}

// "bf16", or "bf16 (auto)" when the key was left to its rule: the reader sees both the dtype used and that it was
// derived, not chosen.
std::string resolved_dtype(DType used, const std::string& given) {
  return std::string(to_string(used)) + (given == "auto" ? " (auto)" : "");
}

// The job's resolved configuration: the settings that decide memory and throughput. Each row's data-key names the
// configuration key it shows, so a reader can repeat it with --set (dp and pp, which are not keys, name the size).
std::string config_table(const FsdpConfig& c, const Report& r, const Schedule& schedule) {
  const auto row = [](const std::string& key, const std::string& label, const std::string& value) {
    return "<tr data-key=\"" + key + "\"><th>" + label + "</th><td>" + html_escape(value) + "</td></tr>\n";
  };
  std::string out = "<table id=\"config\"><tbody>\n";
  out += row("implementation", "implementation", std::string(to_string(c.implementation)));
  std::string strategy(to_string(c.data_parallel_sharding_strategy));
  if (c.num_distributed_optimizer_instances > 1) {
    strategy += ", outer " + std::string(to_string(c.outer_dp_sharding_strategy)) + " across " +
                std::to_string(c.num_distributed_optimizer_instances) + " replicas (HSDP)";
  }
  out += row("data_parallel_sharding_strategy", "sharding strategy", strategy);
  out += row("tp", "tensor parallel", std::to_string(c.tp));
  out += row("cp", "context parallel", std::to_string(c.cp));
  out += row("ep", "expert parallel", std::to_string(c.ep) + " (expert tensor parallel " + std::to_string(c.etp) + ")");
  std::string pipeline = std::to_string(c.pp);
  if (c.pp > 1) {
    pipeline += " stages × " + std::to_string(c.virtual_pipeline_stages) + " model chunk" +
                (c.virtual_pipeline_stages == 1 ? "" : "s") + ", " + std::string(to_string(c.pipeline_schedule));
    if (!c.pipeline_layout.empty()) pipeline += ", layout " + c.pipeline_layout;
  }
  out += row("pp", "pipeline parallel", pipeline);
  // The data-parallel size is not a key: it is what the GPUs leave over tp·cp·pp (ParallelLayout::dp).
  const int64_t tp_cp_pp = int64_t{c.tp} * c.cp * std::max(c.pp, 1);
  if (r.world_size > 0 && r.world_size % tp_cp_pp == 0) {
    out +=
        row("dp", "data parallel",
            std::to_string(r.world_size / tp_cp_pp) + (c.pp > 1 ? " (GPUs / (tp × cp × pp))" : " (GPUs / (tp × cp))"));
  }
  out += row("micro_batch_size", "micro-batch size", std::to_string(c.micro_batch_size) + " sequences");
  // global_batch_size 0 means one micro-batch per data-parallel rank; the schedule knows what that came to.
  // A schedule that does not record its tokens leaves only the rule to show.
  const int64_t global = c.global_batch_size > 0 ? c.global_batch_size
                         : c.seq_length > 0      ? schedule.info.global_tokens_per_step / c.seq_length
                                                 : 0;
  const std::string rule = "0 given: one micro-batch per data-parallel rank";
  out += row("global_batch_size", "global batch",
             global == 0               ? rule
             : c.global_batch_size > 0 ? std::to_string(global) + " sequences"
                                       : std::to_string(global) + " sequences (" + rule + ")");
  out += row("seq_length", "sequence length", std::to_string(c.seq_length) + " tokens");
  std::string recompute(to_string(c.recompute_granularity));
  if (c.recompute_granularity == Recompute::full) {
    recompute += ", method " + config_value(c, "recompute_method") + ", " + std::to_string(c.recompute_num_layers) +
                 (c.recompute_num_layers == 1 ? " layer" : " layers");
  } else if (c.recompute_granularity == Recompute::selective) {
    std::vector<std::string> modules;
    for (const RecomputeModule m : c.recompute_modules) modules.emplace_back(to_string(m));
    recompute += " (" + join(modules, ", ") + ")";
  }
  out += row("recompute_granularity", "recompute", recompute);
  std::string param(to_string(c.param_dtype));
  if (c.fp8_compute || c.param_dtype == DType::fp8)
    param += ", FP8 GEMMs (" + std::string(to_string(c.fp8_recipe)) + ")";
  out += row("param_dtype", "parameters", param);
  out += row("main_params_dtype", "main weights", c.main_params_dtype == "fp32" ? "fp32" : "none (auto)");
  out += row("main_grads_dtype", "gradients", resolved_dtype(main_grad_dtype(c), c.main_grads_dtype));
  out += row("grad_comm_dtype", "gradient communication", resolved_dtype(grad_comm_dtype(c), c.grad_comm_dtype));
  out += row("exp_avg_dtype", "optimizer states",
             "exp_avg " + std::string(to_string(c.exp_avg_dtype)) + ", exp_avg_sq " +
                 std::string(to_string(c.exp_avg_sq_dtype)));
  return out + "</tbody></table>\n";
}

// The step's collectives per kind and group (Report::collectives), as `fsdpsim simulate` prints them.
std::string collectives_table(const std::vector<CollectiveTotals>& collectives) {
  std::string out =
      "<table id=\"collectives\"><thead><tr><th>collective</th><th>group</th><th>ranks</th><th>domains</th>"
      "<th>calls per step</th><th>largest call</th><th>busy per step</th><th>NCCL algorithm</th>"
      "<th>busbw (largest call)</th></tr></thead><tbody>\n";
  const auto num = [](const std::string& v) { return "<td class=\"num\">" + v + "</td>"; };
  for (const CollectiveTotals& c : collectives) {
    out += "<tr><td>" + std::string(to_string(c.kind)) + "</td><td>" + html_escape(c.group) + "</td>" +
           num(std::to_string(c.ranks)) + num(std::to_string(c.domains)) + num(std::to_string(c.count)) +
           num(format_bytes(c.size_bytes)) + num(format_time_ns(c.busy_ns)) + "<td>" + html_escape(c.algorithm) +
           "</td>" + num(format_bandwidth(c.busbw_bytes_per_s)) + "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

// Under pipeline parallelism the page holds one rank of every stage: say whose memory the charts show, each stage's
// peak, and the bubble.
std::string pipeline_note(const Report& r) {
  std::string out = "<p id=\"pipeline\" class=\"note\">Pipeline: " + r.pipeline_schedule + ", " +
                    std::to_string(r.pipeline_stages) + " stages × " + std::to_string(r.virtual_stages) +
                    " model chunk" + (r.virtual_stages == 1 ? "" : "s") + "; bubble " +
                    html::seconds(r.pipeline_bubble_s) + " on stage 0";
  for (size_t k = 0; k < r.pipeline_stage_bubble_s.size(); ++k) {
    out += std::string(k == 0 ? " (per stage:" : ",") + " " + html::seconds(r.pipeline_stage_bubble_s[k]);
  }
  out += std::string(r.pipeline_stage_bubble_s.empty() ? "" : ")") + ". Peak reserved per stage:";
  for (size_t k = 0; k < r.stage_peak_reserved_bytes.size(); ++k) {
    out += std::string(k == 0 ? " " : ", ") + "stage " + std::to_string(k) + " " +
           format_bytes(r.stage_peak_reserved_bytes[k]);
  }
  return out + ". The memory chart, breakdown and verdict are stage " + std::to_string(r.memory_stage) +
         "'s, the fullest; the timeline has one group of lanes per stage (stage&lt;k&gt;.*).</p>\n";
}

std::string key_numbers(const Report& r) {
  const int64_t needed = r.peak_reserved_bytes + r.overheads.total();
  std::string out = "<div class=\"cards\" id=\"key-numbers\">\n";
  if (r.model_size.params > 0) {
    out += card("parameters",
                format_count(r.model_size.params) + " (" + format_count(r.model_size.active_params) + " active)");
    out += card("parameters per GPU", format_count(r.model_size.params_per_rank));
  }
  // A run that does not fit never reaches these figures: they stay (what it would do if it fit) but are marked, with
  // the note throughput_note() adds under the cards.
  const std::string if_fit = r.oom ? "if-it-fit" : "";
  const std::string mark = r.oom ? "<span class=\"if-it-fit-mark\">*</span>" : "";
  out += card("step time", html::seconds(r.step_time_s) + mark, if_fit);
  out += card("first step", html::seconds(r.first_step_time_s) + mark, if_fit);
  out += card("tokens/s per GPU", html::grouped(r.tokens_per_s_per_gpu) + mark, if_fit);
  out += card("TFLOP/s per GPU", html::fixed(r.tflops_per_gpu, 1) + mark, if_fit);
  out += card("MFU", html::percent(r.mfu) + mark, if_fit);
  out += card("exposed communication",
              html::seconds(r.exposed_comm_s) + " (" +
                  html::percent(r.step_time_s > 0 ? r.exposed_comm_s / r.step_time_s : 0) + ")" + mark,
              if_fit);
  out += card("peak allocated", format_bytes(r.peak_allocated_bytes));
  out += card("peak reserved", format_bytes(r.peak_reserved_bytes));
  out += card("needed (reserved + overheads)", format_bytes(needed));
  if (const std::string band = band_text(r.memory); !band.empty()) out += card("needed, published error band", band);
  out += card("GPU memory", format_bytes(r.gpu_memory_bytes));
  const MemoryFit fit = r.memory.fit;
  const std::string verdict_class = fit == MemoryFit::fits      ? "verdict-ok"
                                    : fit == MemoryFit::at_risk ? "verdict-risk"
                                                                : "verdict-oom";
  out += card("verdict",
              fit == MemoryFit::fits      ? "fits"
              : fit == MemoryFit::at_risk ? "at risk"
                                          : "OOM",
              verdict_class);
  out += "</div>\n";
  out += "<p id=\"verdict\" class=\"" + verdict_class + "\">" + html_escape(verdict_text(r.memory)) + "</p>\n";
  if (r.oom) out += "<p id=\"oom-reason\" class=\"verdict-oom\">Out of memory: " + html_escape(r.oom_reason) + "</p>\n";
  if (r.pipeline_stages > 1) out += pipeline_note(r);
  if (!r.simulated_rank.empty()) {
    out += "<p id=\"ranks-differ\" class=\"note\">Ranks differ: the figures are for " + html_escape(r.simulated_rank);
    if (r.straggler_cost_s > 0 && r.step_time_s > 0) {
      char cost[96];
      std::snprintf(cost, sizeof cost, "; the straggler costs every rank %.3f s per step (%.1f%% of it)",
                    r.straggler_cost_s, 100 * r.straggler_cost_s / r.step_time_s);
      out += html_escape(cost);
    }
    out += ".</p>\n";
  }
  return out;
}

// Under the key numbers of a run that does not fit: what the marked throughput figures mean.
std::string throughput_note(const Report& r) {
  if (!r.oom) return "";
  return "<p id=\"if-it-fit-note\" class=\"note\"><span class=\"if-it-fit-mark\">*</span> The run does not fit in "
         "memory; its throughput is what it would be if it did.</p>\n";
}

std::string advice_table(const std::vector<AdviceItem>& advice) {
  std::string out =
      "<table id=\"advice\"><thead><tr><th>#</th><th>change</th><th>verdict</th><th>needed memory</th>"
      "<th>peak allocated</th><th>step time</th><th>tokens/s per GPU</th><th>why</th></tr></thead>"
      "<tbody>\n";
  for (size_t i = 0; i < advice.size(); ++i) {
    const AdviceItem& a = advice[i];
    const SweepResult& r = a.result;
    const std::string cls = !r.valid ? "invalid" : r.fits() ? "fits" : "oom";
    out += "<tr class=\"" + cls + "\"><td class=\"num\">" + std::to_string(i + 1) + "</td><td><code>" +
           html_escape(a.change) + "</code></td>";
    if (!r.valid) {
      out += "<td colspan=\"5\">cannot be built: " + html_escape(r.invalid_reason) + "</td>";
    } else {
      out += "<td>" + verdict_label(r.memory.fit) + "</td><td class=\"num\">" + format_bytes(r.needed_bytes) +
             "</td><td class=\"num\">" + format_bytes(r.peak_allocated_bytes) + "</td><td class=\"num\">" +
             html::seconds(r.step_time_s) + "</td><td class=\"num\">" + html::grouped(r.tokens_per_s_per_gpu) + "</td>";
    }
    out += "<td>" + html_escape(a.explanation) +
           (a.assignments.empty() ? "" : "<br><code>--set " + html_escape(join(a.assignments, " --set ")) + "</code>") +
           "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

}  // namespace

std::string html_run_report(const Schedule& schedule, const RunRecord& run, const Report& report,
                            const std::vector<AdviceItem>& advice, const FsdpConfig* config) {
  FSDPSIM_CHECK(!run.steps.empty(), "html_run_report needs a run with at least one step");
  FSDPSIM_CHECK(run.steps.back().ops.size() == schedule.ops.size(), "the run's op timings do not match the schedule");
  std::string out = html::page_begin("fsdpsim: " + report.model + " on " + report.topology);
  out += "<p class=\"sub\">" +
         html_escape(report.implementation + ", " + report.strategy + ", " + std::to_string(report.world_size) + " × " +
                     report.gpu + ", " + std::to_string(report.micro_batches) +
                     (report.micro_batches == 1 ? " micro-batch" : " micro-batches") + " per step") +
         "</p>\n";
  out += job_table(report) + key_numbers(report) + throughput_note(report);
  if (config != nullptr) out += "<h2>Configuration</h2>\n" + config_table(*config, report, schedule);
  out += "<h2>Timeline of the steady step</h2>\n" + html::timeline_chart(schedule, run.steps.back());
  out += "<h2>Memory over time</h2>\n" + html::memory_chart(run, report);
  out +=
      "<h2>Memory at the peak</h2>\n<p class=\"note\">Live bytes per category when the steady step's allocated "
      "memory peaked";
  out +=
      report.peak_op.empty() ? "" : " (in " + html_escape(report.peak_op) + ", " + html_escape(report.peak_phase) + ")";
  out += ", plus the fixed overheads outside the caching allocator.</p>\n" + html::breakdown_chart(report);
  std::vector<html::SelfCheck> checks = {{"timeline-lanes", "#timeline [data-lane]", !schedule.streams.empty()},
                                         {"timeline-bars", "#timeline [data-bar]", !schedule.ops.empty()},
                                         {"memory-areas", "#memory [data-area]", true},
                                         {"memory-peak", "#memory [data-peak]", true},
                                         {"capacity-line", "#memory [data-capacity]", true},
                                         {"breakdown-segments", "#breakdown [data-segment]", true}};
  if (!report.collectives.empty()) {
    out += "<h2>Collectives per step</h2>\n" + collectives_table(report.collectives);
    checks.push_back({"collective-rows", "#collectives tbody tr", true, false});
  }
  if (!advice.empty()) {
    out +=
        "<h2>What would make it fit</h2>\n<p class=\"note\">Single changes to this configuration, each simulated; "
        "those that fit first.</p>\n" +
        advice_table(advice);
    checks.push_back({"advice-rows", "#advice tbody tr", true, false});
  }
  return out + html::page_end(checks, false);
}

}  // namespace fsdpsim
