#pragma once
/// The charts of the HTML reports as HTML fragments with inline SVG (internal to plan/ and its tests). Each chart
/// marks what it draws with data attributes the page's self-check counts: data-bar (timeline bars), data-area
/// (memory categories), data-segment (breakdown), data-point / data-pareto (sweep scatter).

#include <string>
#include <vector>

#include "plan/sweep.h"
#include "report/report.h"
#include "schedule/ir.h"
#include "sim/engine.h"

namespace fsdpsim::html {

/// The steady step's timeline: one lane per IR stream, a bar per op coloured by kind (ops narrower than a pixel that
/// follow each other within a pixel merge into one bar), a legend and a time axis. Wrapped in <div id="timeline">.
std::string timeline_chart(const Schedule& schedule, const StepRun& step);

/// Memory over every step of `run`, stacked by buffer category, with the reserved bytes, the usable capacity (GPU
/// memory minus the overheads), the step boundaries and the steady step's peak. Wrapped in <div id="memory">.
std::string memory_chart(const RunRecord& run, const Report& report);

/// The breakdown at the peak (report.memory_breakdown): a horizontal stacked bar and a table.
/// Wrapped in <div id="breakdown">.
std::string breakdown_chart(const Report& report);

/// Needed memory against tokens/s per GPU for every valid result: fitting and OOM points, the GPU memory as a
/// vertical line, the Pareto front of the fitting points (`front`, from pareto_front()) as a connected, highlighted
/// line. The memory axis spans the fitting points and the GPU memory; points needing more are drawn at its right edge
/// (data-off-chart, outlined dashed) and counted in a note under the chart. Wrapped in <div id="scatter">.
std::string scatter_chart(const std::vector<SweepResult>& results, const std::vector<size_t>& front);

}  // namespace fsdpsim::html
