#pragma once
/// Building blocks of the HTML reports (internal to plan/ and its tests): number formatting that gives the same bytes
/// on every run, the colour of each op kind and memory category, axis ticks, legends, the page frame and the inline
/// self-check script that counts what the browser drew.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim::html {

/// Width of every chart's plot area in SVG pixels (the unit the timeline merges narrow bars by).
inline constexpr double kPlotWidthPx = 1000;
/// Left margin of every chart: lane labels and y-axis labels.
inline constexpr double kMarginLeftPx = 120;
/// Right margin of every chart.
inline constexpr double kMarginRightPx = 30;

/// `value` with `decimals` digits after the point ("%.*f"), never "-0.0".
std::string fixed(double value, int decimals);
/// An SVG coordinate: one decimal.
std::string px(double value);
/// A whole number with thousands separators ("12,345").
std::string grouped(double value);
/// A ratio as a percentage with one decimal ("41.3 %").
std::string percent(double ratio);
/// Seconds as the units.h time format ("1.234 s", "12.50 ms").
std::string seconds(double value_s);

/// Fill colour of an op kind (the timeline's bars and legend).
std::string_view op_kind_colour(OpKind kind);
/// Fill colour of a memory category name (BufferCategory names and the overheads cuda_context, cublas_workspace,
/// nccl); grey for any other name.
std::string_view category_colour(std::string_view name);

/// Tick positions 0, step, 2·step, ... ≤ `max_value`, with a 1-2-5 step giving about `target` ticks.
std::vector<double> nice_ticks(double max_value, int target);
/// A time tick label for `ns` when ticks are `step_ns` apart: the unit follows the step ("250 ms", "1.5 s").
std::string time_tick_label(double ns, double step_ns);

/// A horizontal time axis at `y` under the plot area spanning `span_ns`, with labelled ticks and grid lines
/// `grid_height_px` tall above it.
std::string time_axis(double y, double span_ns, double grid_height_px);

/// An HTML legend: a swatch and a label per (colour, label) entry; labels are escaped.
std::string legend(const std::vector<std::pair<std::string, std::string>>& entries);

/// One count the self-check script makes: elements matching `selector` that the browser drew (an SVG shape with a
/// non-empty bounding box, or an HTML element with a non-empty layout box).
struct SelfCheck {
  std::string name;      ///< "timeline-bars"
  std::string selector;  ///< "#timeline [data-bar]" (a constant of ours, never input text)
  bool required = true;  ///< the page is "ok" only when every required count is non-zero
  bool svg = true;       ///< count only SVG shapes (markup the browser did not parse as SVG draws nothing)
};

/// The document up to and including the opening <body> and the page title; `title` is escaped.
std::string page_begin(const std::string& title);
/// The self-check <pre id="fsdpsim-selfcheck"> (hidden from readers by the page's style; a dumped DOM shows what the
/// script wrote there) and its script, then the end of the document. With `list_pareto` the script also lists the
/// data-index of every element marked data-pareto="1" ("pareto-indices=0,2,5").
std::string page_end(const std::vector<SelfCheck>& checks, bool list_pareto);

}  // namespace fsdpsim::html
