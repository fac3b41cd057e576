// The report of one run: the job and its key numbers, the timeline per stream, memory over time, the breakdown at the
// peak and the OOM advice, in one self-contained HTML file.
#include "plan/html_report.h"

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"
#include "plan/html_charts.h"
#include "plan/html_svg.h"

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
  return "<table id=\"job\"><tbody>\n" + row("model", r.model) + row("implementation", r.implementation) +
         row("sharding strategy", r.strategy) + row("topology", r.topology + " (" + r.gpu + ")") +
         row("GPUs",
             std::to_string(r.world_size) + " on " + std::to_string(r.nodes) + " node" + (r.nodes == 1 ? "" : "s")) +
         row("micro-batches per step", std::to_string(r.micro_batches)) + row("source", r.source) +
         "</tbody></table>\n";
}

std::string key_numbers(const Report& r) {
  const int64_t needed = r.peak_reserved_bytes + r.overheads.total();
  std::string out = "<div class=\"cards\" id=\"key-numbers\">\n";
  if (r.model_size.params > 0) {
    out += card("parameters",
                format_count(r.model_size.params) + " (" + format_count(r.model_size.active_params) + " active)");
    out += card("parameters per GPU", format_count(r.model_size.params_per_rank));
  }
  out += card("step time", html::seconds(r.step_time_s));
  out += card("first step", html::seconds(r.first_step_time_s));
  out += card("tokens/s per GPU", html::grouped(r.tokens_per_s_per_gpu));
  out += card("TFLOP/s per GPU", html::fixed(r.tflops_per_gpu, 1));
  out += card("MFU", html::percent(r.mfu));
  out +=
      card("exposed communication", html::seconds(r.exposed_comm_s) + " (" +
                                        html::percent(r.step_time_s > 0 ? r.exposed_comm_s / r.step_time_s : 0) + ")");
  out += card("peak allocated", format_bytes(r.peak_allocated_bytes));
  out += card("peak reserved", format_bytes(r.peak_reserved_bytes));
  out += card("needed (reserved + overheads)", format_bytes(needed));
  out += card("GPU memory", format_bytes(r.gpu_memory_bytes));
  out += card("verdict", r.oom ? "OOM" : "fits", r.oom ? "verdict-oom" : "verdict-ok");
  out += "</div>\n";
  if (r.oom) out += "<p id=\"oom-reason\" class=\"verdict-oom\">Out of memory: " + html_escape(r.oom_reason) + "</p>\n";
  return out;
}

std::string advice_table(const std::vector<AdviceItem>& advice) {
  std::string out =
      "<table id=\"advice\"><thead><tr><th>#</th><th>change</th><th>fits?</th><th>needed memory</th>"
      "<th>peak allocated</th><th>step time</th><th>tokens/s per GPU</th><th>why</th></tr></thead>"
      "<tbody>\n";
  for (size_t i = 0; i < advice.size(); ++i) {
    const AdviceItem& a = advice[i];
    const SweepResult& r = a.result;
    const std::string cls = !r.valid ? "invalid" : r.fits ? "fits" : "oom";
    out += "<tr class=\"" + cls + "\"><td class=\"num\">" + std::to_string(i + 1) + "</td><td><code>" +
           html_escape(a.change) + "</code></td>";
    if (!r.valid) {
      out += "<td colspan=\"5\">cannot be built: " + html_escape(r.invalid_reason) + "</td>";
    } else {
      out += std::string("<td>") + (r.fits ? "yes" : "no") + "</td><td class=\"num\">" + format_bytes(r.needed_bytes) +
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
                            const std::vector<AdviceItem>& advice) {
  FSDPSIM_CHECK(!run.steps.empty(), "html_run_report needs a run with at least one step");
  FSDPSIM_CHECK(run.steps.back().ops.size() == schedule.ops.size(), "the run's op timings do not match the schedule");
  std::string out = html::page_begin("fsdpsim: " + report.model + " on " + report.topology);
  out += "<p class=\"sub\">" +
         html_escape(report.implementation + ", " + report.strategy + ", " + std::to_string(report.world_size) + " × " +
                     report.gpu + ", " + std::to_string(report.micro_batches) +
                     (report.micro_batches == 1 ? " micro-batch" : " micro-batches") + " per step") +
         "</p>\n";
  out += job_table(report) + key_numbers(report);
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
