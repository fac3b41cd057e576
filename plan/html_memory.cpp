// Memory over time stacked by buffer category, and the breakdown at the peak, as inline SVG.
#include <algorithm>
#include <cmath>

#include "common/units.h"
#include "plan/html_charts.h"
#include "plan/html_report.h"
#include "plan/html_svg.h"

namespace fsdpsim::html {
namespace {

constexpr double kTopPx = 26;  // room for the step labels
constexpr double kPlotHeightPx = 300;
constexpr double kAxisHeightPx = 30;
constexpr const char* kCapacityColour = "#c62828";
constexpr const char* kReservedColour = "#333333";

// Pixel space of the memory chart.
struct Frame {
  TimeNs t0_ns = 0;
  double span_ns = 1;
  double ymax_bytes = 1;
  [[nodiscard]] double x(double t_ns) const {
    return kMarginLeftPx + (t_ns - static_cast<double>(t0_ns)) / span_ns * kPlotWidthPx;
  }
  [[nodiscard]] double y(double bytes) const { return kTopPx + kPlotHeightPx * (1.0 - bytes / ymax_bytes); }
};

// Consecutive pixel columns drawn from the same sample (-1: before the first sample, nothing live).
struct Run {
  double x0 = 0, x1 = 0;
  int32_t sample = -1;
  int64_t reserved_bytes = 0;
};

int64_t total_bytes(const MemorySample& s) {
  int64_t total = 0;
  for (const int64_t b : s.bytes) total += b;
  return total;
}

// One column per pixel; each column shows the sample with the most live bytes among those that hold during it, so
// no peak disappears however many samples share a pixel.
std::vector<Run> column_runs(const std::vector<MemorySample>& samples, const Frame& f, TimeNs end_ns) {
  const auto columns = static_cast<int64_t>(kPlotWidthPx);
  std::vector<int32_t> best(static_cast<size_t>(columns), -1);
  std::vector<int64_t> reserved(static_cast<size_t>(columns), 0);
  const auto column = [&](TimeNs t) {
    const auto c = static_cast<int64_t>(std::floor(static_cast<double>(t - f.t0_ns) / f.span_ns * kPlotWidthPx));
    return static_cast<size_t>(std::clamp<int64_t>(c, 0, columns - 1));
  };
  for (size_t i = 0; i < samples.size(); ++i) {
    const TimeNs until = i + 1 < samples.size() ? samples[i + 1].time_ns : end_ns;
    const size_t c1 = column(std::max(samples[i].time_ns, until - 1));
    for (size_t c = column(samples[i].time_ns); c <= c1; ++c) {
      if (best[c] < 0 || total_bytes(samples[i]) > total_bytes(samples[static_cast<size_t>(best[c])])) {
        best[c] = static_cast<int32_t>(i);
      }
      reserved[c] = std::max(reserved[c], samples[i].reserved_bytes);
    }
  }
  std::vector<Run> runs;
  for (size_t c = 0; c < best.size(); ++c) {
    const double x = kMarginLeftPx + static_cast<double>(c);
    if (!runs.empty() && runs.back().sample == best[c] && runs.back().reserved_bytes == reserved[c]) {
      runs.back().x1 = x + 1;
    } else {
      runs.push_back(Run{x, x + 1, best[c], reserved[c]});
    }
  }
  return runs;
}

// The band of category `k`: bottom = the categories below it, top = bottom + its bytes.
std::pair<int64_t, int64_t> band(const std::vector<MemorySample>& samples, const Run& r, size_t k) {
  if (r.sample < 0) return {0, 0};
  const CategoryBytes& b = samples[static_cast<size_t>(r.sample)].bytes;
  int64_t bottom = 0;
  for (size_t j = 0; j < k; ++j) bottom += b[j];
  return {bottom, bottom + b[k]};
}

// One polygon per category with live bytes: its top edge left to right, then its bottom edge back.
std::string category_areas(const std::vector<MemorySample>& samples, const std::vector<Run>& runs, const Frame& f,
                           const Report& report, std::vector<std::pair<std::string, std::string>>* legend_entries) {
  std::string out;
  for (const BufferCategory c : all_buffer_categories()) {
    const auto k = static_cast<size_t>(c);
    std::vector<Run> merged;  // runs where this band does not change
    std::vector<std::pair<int64_t, int64_t>> bands;
    int64_t most = 0;
    for (const Run& r : runs) {
      const auto b = band(samples, r, k);
      most = std::max(most, b.second - b.first);
      if (!bands.empty() && bands.back() == b) {
        merged.back().x1 = r.x1;
      } else {
        merged.push_back(r);
        bands.push_back(b);
      }
    }
    if (most == 0) continue;
    std::string points;
    for (size_t i = 0; i < merged.size(); ++i) {
      const std::string y = px(f.y(static_cast<double>(bands[i].second)));
      points += px(merged[i].x0) + "," + y + " " + px(merged[i].x1) + "," + y + " ";
    }
    for (size_t i = merged.size(); i-- > 0;) {
      const std::string y = px(f.y(static_cast<double>(bands[i].first)));
      points += px(merged[i].x1) + "," + y + " " + px(merged[i].x0) + "," + y + " ";
    }
    points.pop_back();
    const std::string name(to_string(c));
    const auto at_peak = report.memory_breakdown.find(name);
    out += "<polygon data-area=\"" + name + "\" fill=\"" + std::string(category_colour(name)) +
           "\" fill-opacity=\"0.9\" points=\"" + points + "\"><title>" + name + ": up to " + format_bytes(most) +
           (at_peak != report.memory_breakdown.end() ? ", " + format_bytes(at_peak->second) + " at the peak" : "") +
           "</title></polygon>\n";
    legend_entries->emplace_back(std::string(category_colour(name)), name);
  }
  return out;
}

std::string reserved_line(const std::vector<Run>& runs, const Frame& f) {
  std::string points;
  for (const Run& r : runs) {
    const std::string y = px(f.y(static_cast<double>(r.reserved_bytes)));
    points += px(r.x0) + "," + y + " " + px(r.x1) + "," + y + " ";
  }
  if (!points.empty()) points.pop_back();
  return "<polyline data-reserved=\"1\" fill=\"none\" stroke=\"" + std::string(kReservedColour) +
         "\" stroke-width=\"1\" stroke-dasharray=\"3 2\" points=\"" + points +
         "\"><title>reserved by the caching allocator</title></polyline>\n";
}

std::string y_axis(const Frame& f) {
  const double unit = f.ymax_bytes >= 2.0 * kGiB ? kGiB : f.ymax_bytes >= 2.0 * kMiB ? kMiB : kKiB;
  const char* unit_name = unit == kGiB ? " GiB" : unit == kMiB ? " MiB" : " KiB";
  const std::vector<double> ticks = nice_ticks(f.ymax_bytes / unit, 6);
  const int decimals = ticks.size() > 1 && ticks[1] < 1 ? 1 : 0;
  std::string out;
  for (const double v : ticks) {
    const std::string y = px(f.y(v * unit));
    out += "<line x1=\"" + px(kMarginLeftPx - 4) + "\" y1=\"" + y + "\" x2=\"" + px(kMarginLeftPx + kPlotWidthPx) +
           "\" y2=\"" + y + "\" stroke=\"#0001\"/>\n<text x=\"" + px(kMarginLeftPx - 6) + "\" y=\"" + y +
           "\" dy=\"4\" text-anchor=\"end\">" + fixed(v, decimals) + unit_name + "</text>\n";
  }
  return out;
}

std::string step_marks(const RunRecord& run, const Frame& f) {
  std::string out;
  for (size_t k = 0; k < run.steps.size(); ++k) {
    const std::string x = px(f.x(static_cast<double>(run.steps[k].start_ns)));
    const char* what = k + 1 == run.steps.size() ? " (steady)" : k == 0 ? " (first)" : "";
    out += "<line data-step=\"" + std::to_string(k + 1) + "\" x1=\"" + x + "\" y1=\"" + px(kTopPx - 14) + "\" x2=\"" +
           x + "\" y2=\"" + px(kTopPx + kPlotHeightPx) + "\" stroke=\"#888\" stroke-dasharray=\"2 3\"/>\n<text x=\"" +
           x + "\" y=\"" + px(kTopPx - 16) + "\" dx=\"4\">step " + std::to_string(k + 1) + what + "</text>\n";
  }
  return out;
}

std::string capacity_and_peak(const RunRecord& run, const Report& report, const Frame& f) {
  const int64_t capacity = report.gpu_memory_bytes - report.overheads.total();
  const std::string yc = px(f.y(static_cast<double>(capacity)));
  std::string out = "<line data-capacity=\"1\" x1=\"" + px(kMarginLeftPx) + "\" y1=\"" + yc + "\" x2=\"" +
                    px(kMarginLeftPx + kPlotWidthPx) + "\" y2=\"" + yc + "\" stroke=\"" + kCapacityColour +
                    "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n<text x=\"" +
                    px(kMarginLeftPx + kPlotWidthPx - 4) + "\" y=\"" + yc + "\" dy=\"-4\" text-anchor=\"end\" fill=\"" +
                    kCapacityColour + "\">usable " + format_bytes(capacity) + " = GPU " +
                    format_bytes(report.gpu_memory_bytes) + " − overheads " + format_bytes(report.overheads.total()) +
                    "</text>\n";
  const double t_ns = static_cast<double>(run.steps.back().start_ns) + report.peak_time_s * 1e9;
  const double x = f.x(t_ns), y = f.y(static_cast<double>(report.peak_allocated_bytes));
  const bool right_half = x > kMarginLeftPx + kPlotWidthPx * 0.6;
  const std::string label =
      html_escape("peak " + format_bytes(report.peak_allocated_bytes) + " at " + seconds(report.peak_time_s) +
                  " into the steady step" + (report.peak_op.empty() ? "" : ", " + report.peak_op));
  out += "<line x1=\"" + px(x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(x) + "\" y2=\"" + px(kTopPx + kPlotHeightPx) +
         "\" stroke=\"#000\" stroke-dasharray=\"1 2\"/>\n<circle data-peak=\"1\" cx=\"" + px(x) + "\" cy=\"" + px(y) +
         "\" r=\"4.5\" fill=\"#fff\" stroke=\"#000\" stroke-width=\"2\"><title>" + label +
         "</title></circle>\n<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" dx=\"" + (right_half ? "-8" : "8") +
         "\" dy=\"-6\" text-anchor=\"" + (right_half ? "end" : "start") +
         "\" font-weight=\"600\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"3\">" + label + "</text>\n";
  return out;
}

// The breakdown's entries in a fixed order: the buffer categories as declared, the overheads, then any other key.
std::vector<std::pair<std::string, int64_t>> breakdown_items(const Report& report) {
  std::vector<std::string> order;
  for (const BufferCategory c : all_buffer_categories()) order.emplace_back(to_string(c));
  for (const char* overhead : {"cuda_context", "cublas_workspace", "nccl"}) order.emplace_back(overhead);
  std::vector<std::pair<std::string, int64_t>> items;
  for (const std::string& name : order) {
    const auto it = report.memory_breakdown.find(name);
    if (it != report.memory_breakdown.end()) items.emplace_back(name, it->second);
  }
  for (const auto& [name, bytes] : report.memory_breakdown) {
    if (std::find(order.begin(), order.end(), name) == order.end()) items.emplace_back(name, bytes);
  }
  return items;
}

Frame memory_frame(const RunRecord& run, const Report& report) {
  Frame f;
  f.t0_ns = std::min(run.steps.front().start_ns, run.timeline.front().time_ns);
  f.span_ns = static_cast<double>(
      std::max<TimeNs>(1, std::max(run.steps.back().end_ns, run.timeline.back().time_ns) - f.t0_ns));
  int64_t top = std::max({report.peak_allocated_bytes, report.peak_reserved_bytes,
                          report.gpu_memory_bytes - report.overheads.total(), int64_t{1}});
  for (const MemorySample& s : run.timeline) top = std::max({top, total_bytes(s), s.reserved_bytes});
  f.ymax_bytes = static_cast<double>(top) * 1.08;  // headroom for the labels
  return f;
}

}  // namespace

std::string memory_chart(const RunRecord& run, const Report& report) {
  if (run.timeline.empty() || run.steps.empty()) {
    return "<div id=\"memory\"><p class=\"note\">No memory timeline was recorded for this run.</p></div>\n";
  }
  const Frame f = memory_frame(run, report);
  const TimeNs end_ns = f.t0_ns + static_cast<TimeNs>(f.span_ns);
  const std::vector<Run> runs = column_runs(run.timeline, f, end_ns);
  std::vector<std::pair<std::string, std::string>> entries;
  const std::string areas = category_areas(run.timeline, runs, f, report, &entries);
  entries.emplace_back(kReservedColour, "reserved (caching allocator)");
  entries.emplace_back(kCapacityColour, "usable capacity");
  const double width = kMarginLeftPx + kPlotWidthPx + kMarginRightPx;
  const double height = kTopPx + kPlotHeightPx + kAxisHeightPx;
  std::string out = "<div id=\"memory\">\n<p class=\"note\">Live bytes per buffer category over all " +
                    std::to_string(run.steps.size()) + " simulated steps (" + std::to_string(run.timeline.size()) +
                    " samples; each pixel shows its fullest moment), the allocator's reserved bytes, and the "
                    "capacity the allocator may reserve.</p>\n" +
                    legend(entries);
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width) + "\" height=\"" + px(height) +
         "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" role=\"img\" aria-label=\"memory timeline\">\n";
  out += y_axis(f) + time_axis(kTopPx + kPlotHeightPx, f.span_ns, 0) + areas + reserved_line(runs, f) +
         step_marks(run, f) + capacity_and_peak(run, report, f);
  return out + "</svg>\n</div>\n";
}

std::string breakdown_chart(const Report& report) {
  const std::vector<std::pair<std::string, int64_t>> items = breakdown_items(report);
  int64_t total = 0;
  for (const auto& item : items) total += item.second;
  std::string bar, rows, out = "<div id=\"breakdown\">\n";
  double x = kMarginLeftPx;
  for (const auto& [name, bytes] : items) {
    const double share = total > 0 ? static_cast<double>(bytes) / static_cast<double>(total) : 0;
    const std::string label = html_escape(name) + ": " + format_bytes(bytes) + " (" + percent(share) + ")";
    rows += "<tr><td><span class=\"sw\" style=\"background:" + std::string(category_colour(name)) + "\"></span>" +
            html_escape(name) + "</td><td class=\"num\">" + format_bytes(bytes) + "</td><td class=\"num\">" +
            grouped(static_cast<double>(bytes)) + "</td><td class=\"num\">" + percent(share) + "</td></tr>\n";
    if (bytes <= 0) continue;
    const double w = share * kPlotWidthPx;
    bar += "<rect data-segment=\"" + html_escape(name) + "\" x=\"" + px(x) + "\" y=\"4\" width=\"" + px(w) +
           "\" height=\"28\" fill=\"" + std::string(category_colour(name)) + "\" stroke=\"#fff\"><title>" + label +
           "</title></rect>\n";
    if (w >= 80) {
      bar += "<text x=\"" + px(x + 4) + "\" y=\"22\">" + html_escape(name) + "</text>\n";
    }
    x += w;
  }
  const double width = kMarginLeftPx + kPlotWidthPx + kMarginRightPx;
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width) + "\" height=\"36\" viewBox=\"0 0 " +
         px(width) + " 36\" role=\"img\" aria-label=\"memory at the peak\">\n<text x=\"" + px(kMarginLeftPx - 6) +
         "\" y=\"22\" text-anchor=\"end\">" + format_bytes(total) + "</text>\n" + bar + "</svg>\n";
  out += "<table><thead><tr><th>category</th><th>size</th><th>bytes</th><th>share</th></tr></thead><tbody>\n" + rows +
         "<tr><th>total</th><th class=\"num\">" + format_bytes(total) + "</th><th class=\"num\">" +
         grouped(static_cast<double>(total)) + "</th><th class=\"num\">" + percent(total > 0 ? 1.0 : 0.0) +
         "</th></tr>\n</tbody></table>\n";
  return out + "</div>\n";
}

}  // namespace fsdpsim::html
