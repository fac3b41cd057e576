#pragma once
/// One self-contained HTML file (inline SVG and a little inline script, no network) that people look at: the step's
/// timeline per stream, the memory timeline stacked by category with the capacity line and the peak marked, the
/// breakdown at the peak, the OOM advice, and for sweeps a chart of memory against throughput with the Pareto front.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/fsdp_config.h"
#include "plan/advice.h"
#include "plan/sweep.h"
#include "report/report.h"
#include "schedule/ir.h"
#include "sim/engine.h"

namespace fsdpsim {

/// The report of one run (simulated or measured): `run` must hold the steps and the memory timeline; `advice` may be
/// empty. `config` is the job's resolved configuration, shown as a table; null (a schedule read from a file, which
/// keeps no configuration) leaves the table out.
std::string html_run_report(const Schedule& schedule, const RunRecord& run, const Report& report,
                            const std::vector<AdviceItem>& advice, const FsdpConfig* config = nullptr);

/// The report of a sweep: the ranked table and memory against throughput with the Pareto front. `fixed_settings`
/// ("seq_length=8192 global_batch_size=512 ...") says what every point shares; empty leaves it out.
std::string html_sweep_report(const std::vector<SweepResult>& results, const std::vector<size_t>& order,
                              const std::string& title, const std::string& fixed_settings = "");

/// Indices of the fitting results (valid and fits) on the Pareto front of needed memory (less is better) and tokens/s
/// per GPU (more is better): those that no other fitting result dominates (needs no more memory, gives no fewer
/// tokens/s, and is strictly better in one). An OOM result's throughput cannot be had, so it neither joins the front
/// nor pushes a fitting result off it. Ordered by needed memory, then index; results equal in both are all kept.
std::vector<size_t> pareto_front(const std::vector<SweepResult>& results);

/// `text` safe inside HTML text and quoted attribute values: & < > " ' become entities.
std::string html_escape(std::string_view text);

}  // namespace fsdpsim
