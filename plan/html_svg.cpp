#include "plan/html_svg.h"

#include <cmath>
#include <cstdio>

#include "common/units.h"
#include "plan/html_report.h"

namespace fsdpsim {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace html {
namespace {

// Inline style: system fonts only (no web fonts, nothing fetched), light colours that print well. The self-check's
// <pre> is for tests reading a dumped DOM, not for people: display:none keeps it off the page (and out of print) while
// the script still writes into it; its tag stays bare because tests match it exactly. Throughput figures of a run
// that does not fit (if-it-fit) are greyed and starred.
constexpr const char* kStyle = R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px;color:#222;
background:#fff;max-width:1240px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
.sub{color:#666;margin:0 0 14px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.fits td:first-child{border-left:4px solid #59a14f}tr.oom td:first-child{border-left:4px solid #e15759}
tr.invalid{color:#999}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.card{border:1px solid #ddd;border-radius:4px;padding:6px 10px;min-width:130px}
.card .k{font-size:11px;color:#666;text-transform:uppercase}.card .v{font-size:18px;font-weight:600}
.verdict-ok{color:#2e7d32}.verdict-risk{color:#b26a00}.verdict-oom{color:#c62828}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:4px 0 4px 120px}
.sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border:1px solid #0003}
svg{max-width:100%;height:auto;font-size:11px}
.note{font-size:12px;color:#666}
.card .v.if-it-fit{color:#888}.if-it-fit-mark{color:#c62828;font-weight:600;margin-left:2px}
pre#fsdpsim-selfcheck{display:none}
</style>
)";

// A JavaScript string literal (double quotes) of `text`.
std::string js_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Counts each check's elements that the browser drew: SVG shapes with a non-empty bounding box (markup that was not
// parsed as SVG is not an SVGGraphicsElement and counts nothing), HTML elements with a layout box. Writes the result
// where a dumped DOM shows it.
constexpr const char* kSelfCheckBody = R"(  function drawn(e, svg) {
    if (svg) {
      if (!(e instanceof SVGGraphicsElement)) return false;
      var b = e.getBBox();
      return b.width > 0 || b.height > 0;
    }
    var r = e.getBoundingClientRect();
    return r.width > 0 || r.height > 0;
  }
  function run() {
    var ok = true, parts = [];
    for (var i = 0; i < checks.length; ++i) {
      var els = document.querySelectorAll(checks[i][1]), n = 0;
      for (var j = 0; j < els.length; ++j) {
        if (drawn(els[j], checks[i][3])) ++n;
      }
      if (checks[i][2] && n === 0) ok = false;
      parts.push(checks[i][0] + "=" + n);
    }
    if (listPareto) {
      var idx = [], marked = document.querySelectorAll("[data-pareto='1']");
      for (var k = 0; k < marked.length; ++k) idx.push(Number(marked[k].getAttribute("data-index")));
      idx.sort(function (a, b) { return a - b; });
      parts.push("pareto-indices=" + (idx.length ? idx.join(",") : "none"));
    }
    document.getElementById("fsdpsim-selfcheck").textContent = (ok ? "ok " : "FAIL ") + parts.join(" ");
  }
  if (document.readyState === "complete") run(); else window.addEventListener("load", run);
)";

}  // namespace

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s.size() > 1 && s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string px(double value) {
  return fixed(value, 1);
}

std::string grouped(double value) {
  std::string digits = fixed(std::fabs(value), 0);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (value < 0 && out != "0" ? "-" : "") + out;
}

std::string percent(double ratio) {
  return fixed(ratio * 100.0, 1) + " %";
}

std::string seconds(double value_s) {
  return format_time_ns(std::llround(value_s * 1e9));
}

std::string_view op_kind_colour(OpKind kind) {
  switch (kind) {
    case OpKind::compute:
      return "#4e79a7";
    case OpKind::all_gather:
      return "#59a14f";
    case OpKind::reduce_scatter:
      return "#e15759";
    case OpKind::all_reduce:
      return "#f28e2b";
    case OpKind::all_to_all:
      return "#b07aa1";
    case OpKind::copy:
      return "#9c755f";
    case OpKind::optimizer:
      return "#edc948";
    case OpKind::sync:
      return "#bab0ac";
    case OpKind::send:
    case OpKind::recv:
      return "#86bcb6";
  }
  return "#bab0ac";
}

std::string_view category_colour(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kColours[] = {
      {"param_shard", "#4e79a7"},    {"main_weight", "#a0cbe8"},    {"optimizer_state", "#f28e2b"},
      {"grad_shard", "#ffbe7d"},     {"unsharded_grad", "#e15759"}, {"weight_grad", "#ff9d9a"},
      {"gathered_param", "#59a14f"}, {"activation", "#b07aa1"},     {"workspace", "#9c755f"},
      {"comm_staging", "#76b7b2"},   {"cuda_context", "#79706e"},   {"cublas_workspace", "#a9a19e"},
      {"nccl", "#d4ccc9"},
  };
  for (const auto& [key, colour] : kColours) {
    if (key == name) return colour;
  }
  return "#cccccc";
}

std::vector<double> nice_ticks(double max_value, int target) {
  if (!(max_value > 0) || target < 1) return {0.0};
  const double raw = max_value / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (int k = 0; k * step <= max_value * (1 + 1e-9); ++k) ticks.push_back(k * step);
  return ticks;
}

std::string time_tick_label(double ns, double step_ns) {
  // The unit is the largest one in which the step is at least 1, so 1-2-5 steps print as whole numbers.
  if (step_ns >= 1e9) return fixed(ns / 1e9, 0) + " s";
  if (step_ns >= 1e6) return fixed(ns / 1e6, 0) + " ms";
  if (step_ns >= 1e3) return fixed(ns / 1e3, 0) + " us";
  return fixed(ns, 0) + " ns";
}

std::string time_axis(double y, double span_ns, double grid_height_px) {
  std::string out = "<line x1=\"" + px(kMarginLeftPx) + "\" y1=\"" + px(y) + "\" x2=\"" +
                    px(kMarginLeftPx + kPlotWidthPx) + "\" y2=\"" + px(y) + "\" stroke=\"#333\"/>\n";
  const std::vector<double> ticks = nice_ticks(span_ns, 10);
  const double step = ticks.size() > 1 ? ticks[1] : span_ns;
  for (const double t : ticks) {
    const double x = kMarginLeftPx + t / span_ns * kPlotWidthPx;
    out += "<line data-tick=\"1\" x1=\"" + px(x) + "\" y1=\"" + px(y - grid_height_px) + "\" x2=\"" + px(x) +
           "\" y2=\"" + px(y + 4) + "\" stroke=\"#0002\"/>\n<text x=\"" + px(x) + "\" y=\"" + px(y + 16) +
           "\" text-anchor=\"middle\">" + time_tick_label(t, step) + "</text>\n";
  }
  return out;
}

std::string legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [colour, label] : entries) {
    out += "<span><span class=\"sw\" style=\"background:" + colour + "\"></span>" + html_escape(label) + "</span>";
  }
  return out + "</div>\n";
}

std::string page_begin(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         html_escape(title) + "</title>\n" + kStyle + "</head>\n<body>\n<h1>" + html_escape(title) + "</h1>\n";
}

std::string page_end(const std::vector<SelfCheck>& checks, bool list_pareto) {
  std::string out =
      "<pre id=\"fsdpsim-selfcheck\">self-check did not run</pre>\n<script>\n(function () {\n"
      "  var checks = [\n";
  for (const SelfCheck& c : checks) {
    out += "    [" + js_quote(c.name) + ", " + js_quote(c.selector) + ", " + (c.required ? "1" : "0") + ", " +
           (c.svg ? "1" : "0") + "],\n";
  }
  out += "  ];\n  var listPareto = " + std::string(list_pareto ? "true" : "false") + ";\n";
  out += kSelfCheckBody;
  return out + "})();\n</script>\n</body>\n</html>\n";
}

}  // namespace html
}  // namespace fsdpsim
