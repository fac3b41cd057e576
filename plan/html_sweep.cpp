// The sweep report: the ranked table, and needed memory against throughput with the Pareto front.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "common/text.h"
#include "common/units.h"
#include "plan/html_charts.h"
#include "plan/html_report.h"
#include "plan/html_svg.h"

namespace fsdpsim {
namespace html {
namespace {

constexpr double kTopPx = 14;
constexpr double kPlotHeightPx = 380;
constexpr double kAxisHeightPx = 44;
constexpr const char* kFitsColour = "#59a14f";
constexpr const char* kRiskColour = "#f28e2b";
constexpr const char* kOomColour = "#e15759";
constexpr const char* kFrontColour = "#000000";
constexpr const char* kGpuMemoryColour = "#777777";
constexpr size_t kTableRows = 50;

struct Frame {
  double xmax_bytes = 1;
  double ymin = 0;  // tokens/s per GPU
  double ymax = 1;
  /// Memory beyond the axis is drawn at its right edge (see off_chart()).
  [[nodiscard]] double x(double bytes) const {
    return kMarginLeftPx + std::min(bytes, xmax_bytes) / xmax_bytes * kPlotWidthPx;
  }
  [[nodiscard]] double y(double tps) const { return kTopPx + kPlotHeightPx * (1.0 - (tps - ymin) / (ymax - ymin)); }
  [[nodiscard]] bool off_chart(int64_t bytes) const { return static_cast<double>(bytes) > xmax_bytes; }
};

// The throughput axis starts at 0 when the points spread over more than half of it; when they sit close together
// (797-823 tokens/s) a zero-based axis draws them as one flat line, so it then spans the points with a tenth of their
// spread to spare on each side, cut at round ticks. The tick labels show where it starts.
void fit_throughput_axis(double low, double high, Frame* f) {
  if (!(high > 0) || !(low >= 0.5 * high)) return;
  const double spread = high > low ? high - low : 0.1 * high;
  const double pad = 0.1 * spread;
  const std::vector<double> steps = nice_ticks(spread + 2 * pad, 6);
  const double step = steps.size() > 1 ? steps[1] : spread;
  f->ymin = std::max(0.0, std::floor((low - pad) / step) * step);
  f->ymax = std::ceil((high + pad) / step) * step;
}

// The tick values of the throughput axis: multiples of a 1-2-5 step from ymin to ymax.
std::vector<double> throughput_ticks(const Frame& f) {
  const std::vector<double> steps = nice_ticks(f.ymax - f.ymin, 6);
  const double step = steps.size() > 1 ? steps[1] : f.ymax - f.ymin;
  std::vector<double> ticks;
  for (double v = std::ceil(f.ymin / step) * step; v <= f.ymax * (1 + 1e-9); v += step) ticks.push_back(v);
  return ticks;
}

// The memory axis spans the fitting points and the GPU memory lines, with 10 % to spare: a reader chooses among the
// fitting points, and one OOM point needing many times the memory would squash them all against the left edge. Points
// beyond the axis are drawn clipped at its right edge. Only with no fitting point and no known GPU memory do the OOM
// points set the axis.
Frame scatter_frame(const std::vector<SweepResult>& results) {
  double fitting_x = 0, any_x = 0, y_low = std::numeric_limits<double>::infinity(), y_high = 0;
  for (const SweepResult& r : results) {
    if (!r.valid) continue;
    any_x = std::max(any_x, static_cast<double>(r.needed_bytes));
    fitting_x = std::max(fitting_x, static_cast<double>(r.gpu_memory_bytes));
    if (r.fits()) fitting_x = std::max(fitting_x, static_cast<double>(r.needed_bytes));
    y_low = std::min(y_low, r.tokens_per_s_per_gpu);
    y_high = std::max(y_high, r.tokens_per_s_per_gpu);
  }
  const double x = fitting_x > 0 ? fitting_x : any_x;
  Frame f{x > 0 ? x * 1.1 : 1.0, 0.0, y_high > 0 ? y_high * 1.1 : 1.0};
  fit_throughput_axis(y_low, y_high, &f);
  return f;
}

std::string axes(const Frame& f) {
  const double bottom = kTopPx + kPlotHeightPx;
  const double unit = f.xmax_bytes >= 2.0 * kGiB ? kGiB : f.xmax_bytes >= 2.0 * kMiB ? kMiB : kKiB;
  const char* unit_name = unit == kGiB ? " GiB" : unit == kMiB ? " MiB" : " KiB";
  std::string out = "<line x1=\"" + px(kMarginLeftPx) + "\" y1=\"" + px(bottom) + "\" x2=\"" +
                    px(kMarginLeftPx + kPlotWidthPx) + "\" y2=\"" + px(bottom) + "\" stroke=\"#333\"/>\n<line x1=\"" +
                    px(kMarginLeftPx) + "\" y1=\"" + px(kTopPx) + "\" x2=\"" + px(kMarginLeftPx) + "\" y2=\"" +
                    px(bottom) + "\" stroke=\"#333\"/>\n";
  const std::vector<double> xt = nice_ticks(f.xmax_bytes / unit, 10);
  const int xdec = xt.size() > 1 && xt[1] < 1 ? 1 : 0;
  for (const double v : xt) {
    const std::string x = px(f.x(v * unit));
    out += "<line x1=\"" + x + "\" y1=\"" + px(kTopPx) + "\" x2=\"" + x + "\" y2=\"" + px(bottom + 4) +
           "\" stroke=\"#0001\"/>\n<text x=\"" + x + "\" y=\"" + px(bottom + 16) + "\" text-anchor=\"middle\">" +
           fixed(v, xdec) + unit_name + "</text>\n";
  }
  for (const double v : throughput_ticks(f)) {
    const std::string y = px(f.y(v));
    out += "<line x1=\"" + px(kMarginLeftPx - 4) + "\" y1=\"" + y + "\" x2=\"" + px(kMarginLeftPx + kPlotWidthPx) +
           "\" y2=\"" + y + "\" stroke=\"#0001\"/>\n<text x=\"" + px(kMarginLeftPx - 6) + "\" y=\"" + y +
           "\" dy=\"4\" text-anchor=\"end\">" + grouped(v) + "</text>\n";
  }
  out += "<text x=\"" + px(kMarginLeftPx + kPlotWidthPx / 2) + "\" y=\"" + px(bottom + 36) +
         "\" text-anchor=\"middle\">needed memory per GPU (peak reserved + overheads)</text>\n<text x=\"14\" y=\"" +
         px(kTopPx + kPlotHeightPx / 2) + "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " +
         px(kTopPx + kPlotHeightPx / 2) + ")\">tokens/s per GPU</text>\n";
  return out;
}

std::string gpu_memory_lines(const std::vector<SweepResult>& results, const Frame& f) {
  std::set<int64_t> sizes;  // ordered: the same bytes every run
  for (const SweepResult& r : results) {
    if (r.valid && r.gpu_memory_bytes > 0) sizes.insert(r.gpu_memory_bytes);
  }
  std::string out;
  for (const int64_t bytes : sizes) {
    const std::string x = px(f.x(static_cast<double>(bytes)));
    out += "<line data-gpu-memory=\"" + std::to_string(bytes) + "\" x1=\"" + x + "\" y1=\"" + px(kTopPx) + "\" x2=\"" +
           x + "\" y2=\"" + px(kTopPx + kPlotHeightPx) + "\" stroke=\"" + kGpuMemoryColour +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n<text x=\"" + x + "\" y=\"" + px(kTopPx + 10) +
           "\" dx=\"-4\" text-anchor=\"end\" fill=\"" + kGpuMemoryColour + "\">GPU memory " + format_bytes(bytes) +
           "</text>\n";
  }
  return out;
}

std::string point_title(const std::vector<SweepResult>& results, size_t i, bool off_chart) {
  const SweepResult& r = results[i];
  return html_escape("#" + std::to_string(i) + " " + join(r.assignments, " ") + "\nneeds " +
                     format_bytes(r.needed_bytes) + " (" + verdict_label(r.memory.fit) + ")" +
                     (off_chart ? ", off the chart: drawn at its right edge" : "") + "\n" +
                     grouped(r.tokens_per_s_per_gpu) + " tokens/s per GPU, step " + seconds(r.step_time_s));
}

const char* point_colour(const SweepResult& r) {
  return r.memory.fit == MemoryFit::fits ? kFitsColour : r.memory.fit == MemoryFit::at_risk ? kRiskColour : kOomColour;
}

std::string points(const std::vector<SweepResult>& results, const std::vector<size_t>& front, const Frame& f) {
  std::vector<bool> on_front(results.size(), false);
  for (const size_t i : front) on_front[i] = true;
  std::string out;
  for (const bool front_pass : {false, true}) {  // the front's points last, on top
    for (size_t i = 0; i < results.size(); ++i) {
      const SweepResult& r = results[i];
      if (!r.valid || on_front[i] != front_pass) continue;
      // A point clipped at the right edge is outlined dashed, so it does not pass for one that needs that memory.
      const bool off = f.off_chart(r.needed_bytes);
      const std::string stroke = front_pass ? "stroke=\"" + std::string(kFrontColour) + "\" stroke-width=\"2\""
                                 : off      ? "stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"2 1.5\""
                                            : "stroke=\"#fff\" stroke-width=\"0.5\"";
      out += "<circle data-point=\"1\" data-index=\"" + std::to_string(i) + "\" data-fits=\"" + (r.fits() ? "1" : "0") +
             "\" data-pareto=\"" + (front_pass ? "1" : "0") + "\"" + (off ? " data-off-chart=\"1\"" : "") + " cx=\"" +
             px(f.x(static_cast<double>(r.needed_bytes))) + "\" cy=\"" + px(f.y(r.tokens_per_s_per_gpu)) + "\" r=\"" +
             (front_pass ? "6" : "4") + "\" fill=\"" + point_colour(r) + "\" " + stroke +
             "><title>" + point_title(results, i, off) + "</title></circle>\n";
    }
  }
  return out;
}

std::string front_line(const std::vector<SweepResult>& results, const std::vector<size_t>& front, const Frame& f) {
  if (front.empty()) return "";
  std::string pts;
  for (const size_t i : front) {
    pts += px(f.x(static_cast<double>(results[i].needed_bytes))) + "," + px(f.y(results[i].tokens_per_s_per_gpu)) + " ";
  }
  pts.pop_back();
  return "<polyline data-pareto-line=\"1\" fill=\"none\" stroke=\"" + std::string(kFrontColour) +
         "\" stroke-width=\"1.5\" points=\"" + pts +
         "\"><title>Pareto front: no other point needs less memory and "
         "gives more tokens/s</title></polyline>\n";
}

std::string front_table(const std::vector<SweepResult>& results, const std::vector<size_t>& front) {
  std::string out =
      "<table id=\"pareto\"><thead><tr><th>#</th><th>configuration</th>"
      "<th>needed memory</th><th>tokens/s per GPU</th><th>step time</th></tr></thead><tbody>\n";
  for (const size_t i : front) {  // every point of the front fits
    const SweepResult& r = results[i];
    out += "<tr class=\"fits\"><td class=\"num\">" + std::to_string(i) + "</td><td>" +
           html_escape(join(r.assignments, " ")) + "</td><td class=\"num\">" + format_bytes(r.needed_bytes) +
           "</td><td class=\"num\">" + grouped(r.tokens_per_s_per_gpu) + "</td><td class=\"num\">" +
           seconds(r.step_time_s) + "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string ranked_row(const SweepResult& r, size_t rank, size_t index) {
  const std::string cls = !r.valid ? "invalid" : r.fits() ? "fits" : "oom";
  std::string out = "<tr class=\"" + cls + "\" data-index=\"" + std::to_string(index) + "\"><td class=\"num\">" +
                    std::to_string(rank) + "</td><td class=\"num\">" + std::to_string(index) + "</td><td>" +
                    html_escape(join(r.assignments, " ")) + "</td>";
  if (!r.valid) return out + "<td colspan=\"11\">invalid: " + html_escape(r.invalid_reason) + "</td></tr>\n";
  const auto num = [](const std::string& v) { return "<td class=\"num\">" + v + "</td>"; };
  const std::string verdict = sweep_verdict_label(r);
  const std::string verdict_cell = verdict.back() == '*' ? "<td title=\"" + html_escape(kAllocatorFailedNote) + "\">" + verdict + "</td>"
                                                          : "<td>" + verdict + "</td>";
  return out + verdict_cell + num(std::to_string(r.gpus)) +
         num(std::to_string(r.micro_batches)) + num(seconds(r.step_time_s)) + num(grouped(r.tokens_per_s_per_gpu)) +
         num(fixed(r.tflops_per_gpu, 1)) + num(percent(r.mfu)) + num(seconds(r.exposed_comm_s)) +
         num(format_bytes(r.needed_bytes)) + num(format_bytes(r.gpu_memory_bytes)) +
         num(fixed(r.gpu_seconds_per_million_tokens, 1)) + "</tr>\n";
}

std::string ranked_table(const std::vector<SweepResult>& results, const std::vector<size_t>& order) {
  const size_t rows = std::min(order.size(), kTableRows);
  std::string out = "<p class=\"note\">The first " + std::to_string(rows) + " of " + std::to_string(order.size()) +
                    " ranked points (fitting first).</p>\n<table id=\"ranked\"><thead><tr><th>rank</th><th>#</th>"
                    "<th>configuration</th><th>fits</th><th>GPUs</th><th>micro-batches</th><th>step time</th>"
                    "<th>tokens/s per GPU</th><th>TFLOP/s per GPU</th><th>MFU</th><th>exposed comm</th>"
                    "<th>needed memory</th><th>GPU memory</th><th>GPU·s per M tokens</th></tr></thead><tbody>\n";
  for (size_t k = 0; k < rows; ++k) {
    FSDPSIM_CHECK(order[k] < results.size(), "sweep order names a result that does not exist");
    out += ranked_row(results[order[k]], k + 1, order[k]);
  }
  return out + "</tbody></table>\n";
}

}  // namespace

std::string scatter_chart(const std::vector<SweepResult>& results, const std::vector<size_t>& front) {
  const Frame f = scatter_frame(results);
  const double width = kMarginLeftPx + kPlotWidthPx + kMarginRightPx;
  const double height = kTopPx + kPlotHeightPx + kAxisHeightPx;
  std::string out = "<div id=\"scatter\">\n" + legend({{kFitsColour, "fits"},
                                                       {kRiskColour, "at risk (within the margin of GPU memory)"},
                                                       {kOomColour, "does not fit (OOM)"},
                                                       {kFrontColour, "Pareto front of the fitting points (outlined)"},
                                                       {kGpuMemoryColour, "GPU memory"}});
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width) + "\" height=\"" + px(height) +
         "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" data-memory-axis-bytes=\"" + fixed(f.xmax_bytes, 0) +
         "\" data-throughput-axis=\"" + fixed(f.ymin, 0) + " " + fixed(f.ymax, 0) +
         "\" role=\"img\" aria-label=\"memory against throughput\">\n";
  out += axes(f) + gpu_memory_lines(results, f) + front_line(results, front, f) + points(results, front, f);
  out += "</svg>\n";
  size_t off = 0;
  int64_t most = 0;
  for (const SweepResult& r : results) {
    if (!r.valid || !f.off_chart(r.needed_bytes)) continue;
    ++off;
    most = std::max(most, r.needed_bytes);
  }
  if (off > 0) {
    out += "<p id=\"off-chart\" class=\"note\">" + std::to_string(off) + (off == 1 ? " point needs" : " points need") +
           " more memory than the axis shows (up to " + format_bytes(most) +
           "): drawn at its right edge, outlined dashed.</p>\n";
  }
  return out + front_table(results, front) + "</div>\n";
}

}  // namespace html

std::vector<size_t> pareto_front(const std::vector<SweepResult>& results) {
  std::vector<size_t> fitting;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].fits()) fitting.push_back(i);
  }
  std::sort(fitting.begin(), fitting.end(), [&](size_t a, size_t b) {
    const SweepResult& ra = results[a];
    const SweepResult& rb = results[b];
    if (ra.needed_bytes != rb.needed_bytes) return ra.needed_bytes < rb.needed_bytes;
    if (ra.tokens_per_s_per_gpu != rb.tokens_per_s_per_gpu) return ra.tokens_per_s_per_gpu > rb.tokens_per_s_per_gpu;
    return a < b;
  });
  // Walking up in memory, a point is on the front when it is the fastest at its memory and faster than every point
  // that needs less; points equal to it are kept with it.
  std::vector<size_t> front;
  double best = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < fitting.size();) {
    size_t j = i;
    const double fastest = results[fitting[i]].tokens_per_s_per_gpu;
    while (j < fitting.size() && results[fitting[j]].needed_bytes == results[fitting[i]].needed_bytes) ++j;
    if (fastest > best) {
      for (size_t k = i; k < j && results[fitting[k]].tokens_per_s_per_gpu == fastest; ++k) front.push_back(fitting[k]);
      best = fastest;
    }
    i = j;
  }
  return front;
}

std::string html_sweep_report(const std::vector<SweepResult>& results, const std::vector<size_t>& order,
                              const std::string& title, const std::string& fixed_settings) {
  size_t valid = 0, fitting = 0;
  for (const SweepResult& r : results) {
    valid += r.valid ? 1 : 0;
    fitting += r.fits() ? 1 : 0;
  }
  const std::vector<size_t> front = pareto_front(results);
  std::string out = html::page_begin(title);
  out += "<p class=\"sub\">" + std::to_string(results.size()) + " points: " + std::to_string(valid) + " valid, " +
         std::to_string(fitting) + " fit, " + std::to_string(valid - fitting) + " do not fit, " +
         std::to_string(results.size() - valid) + " invalid; " + std::to_string(front.size()) +
         " fitting on the Pareto front of memory and throughput.</p>\n";
  if (!fixed_settings.empty()) {
    out += "<p class=\"sub\" id=\"fixed\">Every point shares: " + html_escape(fixed_settings) + "</p>\n";
  }
  out += "<h2>Ranking</h2>\n" + html::ranked_table(results, order);
  out +=
      "<h2>Memory against throughput</h2>\n<p class=\"note\">Every valid point; a fitting point is on the Pareto "
      "front when no other fitting point needs less memory and gives more tokens/s per GPU. Points that do not fit "
      "are left off the front: their throughput cannot be had.</p>\n" +
      html::scatter_chart(results, front);
  // The front's line has an area only when it joins two different points.
  const bool line_drawn =
      front.size() >= 2 && (results[front.front()].needed_bytes != results[front.back()].needed_bytes ||
                            results[front.front()].tokens_per_s_per_gpu != results[front.back()].tokens_per_s_per_gpu);
  out += html::page_end({{"points", "#scatter [data-point]", valid > 0},
                         {"fitting", "#scatter [data-point][data-fits='1']", false},
                         {"oom", "#scatter [data-point][data-fits='0']", false},
                         {"pareto", "#scatter [data-point][data-pareto='1']", fitting > 0},
                         {"pareto-line", "#scatter [data-pareto-line]", line_drawn},
                         {"gpu-memory-lines", "#scatter [data-gpu-memory]", valid > 0},
                         {"table-rows", "#ranked tbody tr", !order.empty(), false}},
                        true);
  return out;
}

}  // namespace fsdpsim
