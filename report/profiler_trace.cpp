#include "report/profiler_trace.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/error.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::json;
using Interval = std::pair<double, double>;  // [start, end) in microseconds

[[noreturn]] void not_a_trace(const std::string& source, const std::string& problem) {
  throw ConfigError(SourceLocation{source, 0, 0}, "traceEvents", problem,
                    "export the trace with torch.profiler (tensorboard_trace_handler or prof.export_chrome_trace) "
                    "with ProfilerActivity.CUDA");
}

// The length of the union of intervals, and the union itself (sorted, disjoint).
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double total = 0;
  for (const Interval& i : v) total += i.second - i.first;
  return total;
}

// The part of the disjoint sorted intervals `a` that no interval of the disjoint sorted `b` covers.
double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  size_t j = 0;
  for (const Interval& i : a) {
    double at = i.first;
    while (j < b.size() && b[j].second <= at) ++j;
    for (size_t k = j; k < b.size() && b[k].first < i.second; ++k) {
      if (b[k].first > at) total += b[k].first - at;
      at = std::max(at, b[k].second);
      if (at >= i.second) break;
    }
    if (at < i.second) total += i.second - at;
  }
  return total;
}

bool has(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

std::string nccl_kernel_kind(const std::string& name) {
  if (!has(name, "nccl")) return "";
  if (has(name, "AllGather")) return "all_gather";
  if (has(name, "ReduceScatter")) return "reduce_scatter";
  if (has(name, "AllReduce")) return "all_reduce";
  if (has(name, "SendRecv") || has(name, "Send") || has(name, "Recv")) return "send_recv";
  if (has(name, "Broadcast")) return "broadcast";
  if (has(name, "AllToAll")) return "all_to_all";
  return "other_nccl";
}

TraceStep read_profiler_trace(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {  // a syntax error, or a number beyond a double (out_of_range)
    not_a_trace(source, std::string("not JSON: ") + e.what());
  }
  const Json* events = nullptr;
  if (j.is_object() && j.contains("traceEvents")) events = &j["traceEvents"];
  if (j.is_array()) events = &j;
  if (events == nullptr || !events->is_array()) not_a_trace(source, "no traceEvents list: this is not a Chrome trace");

  struct Kernel {
    Interval span;
    std::string kind;  // empty: compute
  };
  std::vector<Kernel> kernels;
  std::vector<std::pair<std::string, Interval>> steps;  // GPU-side ProfilerStep ranges
  for (const Json& e : *events) {
    if (!e.is_object() || !e.contains("cat") || !e["cat"].is_string()) continue;
    if (!e.contains("ts") || !e.contains("dur") || !e["ts"].is_number() || !e["dur"].is_number()) continue;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (!(dur >= 0) || !(ts >= -1e18 && ts <= 1e18) || !(dur <= 1e12)) continue;  // not finite, or absurd
    const std::string cat = e["cat"].get<std::string>();
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    if (cat == "kernel") {
      kernels.push_back({{ts, ts + dur}, nccl_kernel_kind(name)});
    } else if (cat == "gpu_user_annotation" && name.rfind("ProfilerStep#", 0) == 0) {
      steps.emplace_back(name, Interval{ts, ts + dur});
    }
  }
  if (kernels.empty()) not_a_trace(source, "the trace has no GPU kernels (\"cat\": \"kernel\")");

  TraceStep step;
  Interval window{kernels.front().span.first, kernels.front().span.second};
  for (const Kernel& k : kernels) {
    window.first = std::min(window.first, k.span.first);
    window.second = std::max(window.second, k.span.second);
  }
  step.step_name = "whole trace";
  if (!steps.empty()) {
    // The last step that started: the steady state when a few were recorded.
    const auto last = std::max_element(steps.begin(), steps.end(),
                                       [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    step.step_name = last->first;
    window = last->second;
  }
  std::vector<Interval> compute, comm;
  std::map<std::string, std::vector<Interval>> by_kind;
  for (const Kernel& k : kernels) {
    const Interval clipped{std::max(k.span.first, window.first), std::min(k.span.second, window.second)};
    if (clipped.second <= clipped.first) continue;
    ++step.kernels;
    if (k.kind.empty()) {
      compute.push_back(clipped);
    } else {
      comm.push_back(clipped);
      by_kind[k.kind].push_back(clipped);
      ++step.collectives[k.kind].kernels;
    }
  }
  const std::vector<Interval> compute_union = merged(compute), comm_union = merged(comm);
  step.step_time_s = (window.second - window.first) * 1e-6;
  step.compute_busy_s = length(compute_union) * 1e-6;
  step.comm_busy_s = length(comm_union) * 1e-6;
  step.exposed_comm_s = uncovered(comm_union, compute_union) * 1e-6;
  for (auto& [kind, intervals] : by_kind) step.collectives[kind].busy_s = length(merged(intervals)) * 1e-6;
  return step;
}

std::string trace_comparison_text(const Report& predicted, const TraceStep& measured) {
  std::string out = "time: the prediction against the profiler trace (" + measured.step_name + ", " +
                    std::to_string(measured.kernels) + " GPU kernels)\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-22s %12s %12s %8s\n", "", "predicted", "measured", "error");
  out += line;
  const auto row = [&](const char* what, double p, double m) {
    char error[32] = "-";
    if (m > 0) std::snprintf(error, sizeof error, "%+.1f%%", 100.0 * (p - m) / m);
    std::snprintf(line, sizeof line, "  %-22s %11.3fs %11.3fs %8s\n", what, p, m, error);
    out += line;
  };
  row("step time", predicted.step_time_s, measured.step_time_s);
  row("exposed communication", predicted.exposed_comm_s, measured.exposed_comm_s);
  std::snprintf(line, sizeof line, "  measured: compute kernels busy %.3f s, NCCL kernels busy %.3f s\n",
                measured.compute_busy_s, measured.comm_busy_s);
  out += line;
  for (const auto& [kind, c] : measured.collectives) {
    std::snprintf(line, sizeof line, "    %-20s %6lld kernels, busy %.3f s\n", kind.c_str(),
                  static_cast<long long>(c.kernels), c.busy_s);
    out += line;
  }
  return out;
}

}  // namespace fsdpsim
