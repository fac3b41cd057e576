// The steady step's timeline per stream as inline SVG.
#include <algorithm>
#include <array>

#include "common/units.h"
#include "plan/html_charts.h"
#include "plan/html_report.h"
#include "plan/html_svg.h"

namespace fsdpsim::html {
namespace {

constexpr double kTopPx = 8;
constexpr double kLaneHeightPx = 18;
constexpr double kLaneGapPx = 6;
constexpr double kAxisHeightPx = 30;
constexpr size_t kKindCount = kOpKindCount;

std::string kind_label(OpKind kind) {
  std::string s(to_string(kind));
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// Ops that follow each other within a pixel and are each narrower than a pixel, drawn as one bar.
struct Pending {
  double x0 = 0, x1 = 0;
  int32_t count = 0;
  OpId first, last;
  TimeNs busy_ns = 0;
  std::array<TimeNs, kKindCount> kind_ns{};
};

struct Lane {
  const Schedule* schedule = nullptr;
  const StepRun* step = nullptr;
  double y = 0;
  double scale = 0;  // px per ns
  std::string out;
  int64_t bars = 0, merged_bars = 0;
};

std::string op_title(const Op& op, const OpTiming& t, TimeNs step_start) {
  std::string title = op.name + "\n" + kind_label(op.kind) + ", " + std::string(to_string(op.phase));
  if (op.micro_batch >= 0) title += ", micro-batch " + std::to_string(op.micro_batch);
  title += "\nstart " + format_time_ns(t.start_ns - step_start) + ", duration " + format_time_ns(t.end_ns - t.start_ns);
  return html_escape(title);
}

void emit_rect(Lane& lane, OpKind kind, double x0, double x1, const std::string& extra, const std::string& title) {
  const double width = std::max(x1 - x0, 1.0);  // a bar is at least a pixel wide, so that it shows
  lane.out += "<rect data-bar=\"" + std::string(to_string(kind)) + "\"" + extra + " x=\"" + px(kMarginLeftPx + x0) +
              "\" y=\"" + px(lane.y) + "\" width=\"" + px(width) + "\" height=\"" + px(kLaneHeightPx) + "\" fill=\"" +
              std::string(op_kind_colour(kind)) + "\"><title>" + title + "</title></rect>\n";
  ++lane.bars;
}

void flush(Lane& lane, Pending& p) {
  if (p.count == 0) return;
  const Schedule& s = *lane.schedule;
  const OpTiming& first = lane.step->ops[p.first];
  if (p.count == 1) {
    const Op& op = s.ops[p.first];
    emit_rect(lane, op.kind, p.x0, p.x1, "", op_title(op, first, lane.step->start_ns));
  } else {
    // The merged bar takes the colour of the kind that kept the stream busiest within it (ties: the first kind).
    size_t kind = 0;
    for (size_t k = 1; k < kKindCount; ++k) {
      if (p.kind_ns[k] > p.kind_ns[kind]) kind = k;
    }
    const OpTiming& last = lane.step->ops[p.last];
    const std::string title =
        html_escape(std::to_string(p.count) + " ops merged (each under a pixel): " + s.ops[p.first].name + " … " +
                    s.ops[p.last].name + "\nbusy " + format_time_ns(p.busy_ns) + " of " +
                    format_time_ns(last.end_ns - first.start_ns) + ", from " +
                    format_time_ns(first.start_ns - lane.step->start_ns));
    // A merged bar is as opaque as the stream was busy within it, so sparse sub-pixel traffic does not look solid.
    const TimeNs span_ns = std::max<TimeNs>(1, last.end_ns - first.start_ns);
    const double busy = static_cast<double>(p.busy_ns) / static_cast<double>(span_ns);
    std::string extra = " data-merged=\"" + std::to_string(p.count) + "\"";
    if (busy < 0.995) extra += " fill-opacity=\"" + fixed(std::max(0.3, busy), 2) + "\"";
    emit_rect(lane, static_cast<OpKind>(kind), p.x0, p.x1, extra, title);
    ++lane.merged_bars;
  }
  p = Pending{};
}

void draw_lane(Lane& lane, StreamId stream) {
  const Schedule& s = *lane.schedule;
  Pending p;
  for (const Op& op : s.ops) {  // ops on one stream run in id order
    if (op.stream != stream) continue;
    const OpTiming& t = lane.step->ops[op.id];
    if (t.start_ns < 0 || t.end_ns <= t.start_ns) continue;  // did not run, or took no time (sync)
    const double x0 = static_cast<double>(t.start_ns - lane.step->start_ns) * lane.scale;
    const double x1 = static_cast<double>(t.end_ns - lane.step->start_ns) * lane.scale;
    const bool narrow = x1 - x0 < 1.0;
    if (!narrow || p.count == 0 || x0 - p.x1 >= 1.0) flush(lane, p);
    if (p.count == 0) {
      p.x0 = x0;
      p.first = op.id;
    }
    p.x1 = std::max(p.x1, x1);
    p.last = op.id;
    ++p.count;
    p.busy_ns += t.end_ns - t.start_ns;
    p.kind_ns[static_cast<size_t>(op.kind)] += t.end_ns - t.start_ns;
    if (!narrow) flush(lane, p);
  }
  flush(lane, p);
}

std::string kinds_legend(const Schedule& s, const StepRun& step) {
  std::array<bool, kKindCount> present{};
  for (const Op& op : s.ops) {
    const OpTiming& t = step.ops[op.id];
    if (t.start_ns >= 0 && t.end_ns > t.start_ns) present[static_cast<size_t>(op.kind)] = true;
  }
  std::vector<std::pair<std::string, std::string>> entries;
  for (const OpKind k : all_op_kinds()) {
    if (present[static_cast<size_t>(k)]) entries.emplace_back(std::string(op_kind_colour(k)), kind_label(k));
  }
  return legend(entries);
}

}  // namespace

std::string timeline_chart(const Schedule& schedule, const StepRun& step) {
  const TimeNs span_ns = std::max<TimeNs>(1, step.end_ns - step.start_ns);
  const size_t lanes = schedule.streams.size();
  const double axis_y = kTopPx + static_cast<double>(lanes) * (kLaneHeightPx + kLaneGapPx);
  const double width = kMarginLeftPx + kPlotWidthPx + kMarginRightPx;
  const double height = axis_y + kAxisHeightPx;
  std::string lanes_svg, bars_svg;  // backgrounds and labels under the grid, bars over it
  int64_t bars = 0, merged = 0;
  for (size_t i = 0; i < lanes; ++i) {
    Lane lane{&schedule,
              &step,
              kTopPx + static_cast<double>(i) * (kLaneHeightPx + kLaneGapPx),
              kPlotWidthPx / static_cast<double>(span_ns),
              "",
              0,
              0};
    // A pipeline's lanes say their stage, so a reader (or a check) can take one stage's group.
    const std::string stage = schedule.info.pipeline_stages > 1
                                  ? " data-stage=\"" + std::to_string(schedule.streams[i].stage) + "\""
                                  : std::string();
    lanes_svg += "<rect data-lane=\"" + html_escape(schedule.streams[i].name) + "\"" + stage + " x=\"" +
                 px(kMarginLeftPx) + "\" y=\"" + px(lane.y) + "\" width=\"" + px(kPlotWidthPx) + "\" height=\"" +
                 px(kLaneHeightPx) + "\" fill=\"#f6f6f6\"/>\n<text x=\"" + px(kMarginLeftPx - 6) + "\" y=\"" +
                 px(lane.y + kLaneHeightPx * 0.7) + "\" text-anchor=\"end\">" + html_escape(schedule.streams[i].name) +
                 "</text>\n";
    draw_lane(lane, StreamId(static_cast<int32_t>(i)));
    bars_svg += lane.out;
    bars += lane.bars;
    merged += lane.merged_bars;
  }
  std::string out =
      "<div id=\"timeline\">\n<p class=\"note\">The steady (last simulated) step: " + format_time_ns(span_ns) + ", " +
      std::to_string(schedule.ops.size()) + " ops on " + std::to_string(lanes) + " streams" +
      (schedule.info.pipeline_stages > 1
           ? " of " + std::to_string(schedule.info.pipeline_stages) + " pipeline stages (one rank each)"
           : std::string()) +
      "; " + std::to_string(bars) + " bars, " + std::to_string(merged) +
      " of them merging consecutive ops narrower than a pixel. Hover a bar for its op.</p>\n";
  out += kinds_legend(schedule, step);
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width) + "\" height=\"" + px(height) +
         "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" role=\"img\" aria-label=\"timeline per stream\">\n";
  out += lanes_svg + time_axis(axis_y, static_cast<double>(span_ns), axis_y - kTopPx) + bars_svg;
  return out + "</svg>\n</div>\n";
}

}  // namespace fsdpsim::html
