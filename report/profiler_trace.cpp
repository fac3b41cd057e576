// A PyTorch profiler trace (Kineto's Chrome JSON) read down to one step's figures (the step's GPU window, busy and
// exposed times, the collectives by kind and size, compute by range and by phase), and set against a prediction.
#include "report/profiler_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
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

// Bytes per element of the dtype names PyTorch writes in record_param_comms ("BFloat16", "Float", ...); 0: unknown.
int64_t dtype_size_bytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> sizes{{"Float", 4},
                                                    {"BFloat16", 2},
                                                    {"Half", 2},
                                                    {"Double", 8},
                                                    {"Float8_e4m3fn", 1},
                                                    {"Float8_e5m2", 1},
                                                    {"Float8_e4m3fnuz", 1},
                                                    {"Float8_e5m2fnuz", 1},
                                                    {"Byte", 1},
                                                    {"Char", 1},
                                                    {"Bool", 1},
                                                    {"Short", 2},
                                                    {"Int", 4},
                                                    {"Long", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// A call's group size and size in bytes (the larger of its input and output) from a kernel's args; both 0 when the
// metadata is missing or malformed.
void call_size(const Json& args, int32_t& group_size, int64_t& bytes) {
  group_size = 0;
  bytes = 0;
  const auto count = [&](const char* key) -> int64_t {
    if (!args.contains(key) || !args[key].is_number_integer()) return -1;
    const int64_t n = args[key].get<int64_t>();
    return n >= 0 && n <= (int64_t{1} << 50) ? n : -1;
  };
  const int64_t in = count("In msg nelems"), out = count("Out msg nelems"), group = count("Group size");
  if (in < 0 || out < 0 || group < 1 || group > (1 << 24)) return;
  if (!args.contains("dtype") || !args["dtype"].is_string()) return;
  const int64_t element = dtype_size_bytes(args["dtype"].get<std::string>());
  if (element == 0) return;
  group_size = static_cast<int32_t>(group);
  bytes = std::max(in, out) * element;
}

// nccl-tests' bus factor of a call of `n` ranks.
double bus_factor(const std::string& kind, int32_t n) {
  const double share = n > 0 ? static_cast<double>(n - 1) / n : 0;
  if (kind == "all_reduce") return 2 * share;
  if (kind == "all_gather" || kind == "reduce_scatter" || kind == "all_to_all") return share;
  return 1;
}

// The thread of a trace event ("tid" is a number in Kineto's traces, a string in some exporters).
int64_t tid_of(const Json& e) {
  if (!e.contains("tid")) return 0;
  if (e["tid"].is_number_integer()) return e["tid"].get<int64_t>();
  if (e["tid"].is_string()) return static_cast<int64_t>(std::hash<std::string>{}(e["tid"].get<std::string>()));
  return 0;
}

// True when `t` falls in one of `intervals` (sorted and disjoint, as merged() gives them).
bool inside(const std::vector<Interval>& intervals, double t) {
  const auto after =
      std::upper_bound(intervals.begin(), intervals.end(), t, [](double v, const Interval& i) { return v < i.first; });
  return after != intervals.begin() && t <= std::prev(after)->second;
}

// A kernel placed for attribution: `at_us` is the moment that decides its range (its launch on the CPU, or its start
// on the GPU), `span` its GPU interval.
struct PlacedKernel {
  double at_us = 0;
  Interval span;
};

// Each kernel into the innermost of `ranges` open at its `at_us` (the range that contains that moment and began
// last), sweeping ranges and kernels in time order with a stack of the open ranges.
void attribute_to_ranges(std::vector<PlacedKernel> kernels, std::vector<std::pair<std::string, Interval>> ranges,
                         TraceStep& step, std::vector<Interval>& optimizer) {
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.at_us < b.at_us; });
  std::stable_sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return a.second.first != b.second.first ? a.second.first < b.second.first : a.second.second > b.second.second;
  });
  std::vector<const std::pair<std::string, Interval>*> open;
  size_t r = 0;
  for (const PlacedKernel& k : kernels) {
    while (r < ranges.size() && ranges[r].second.first <= k.at_us) open.push_back(&ranges[r++]);
    while (!open.empty() && open.back()->second.second <= k.at_us) open.pop_back();
    // A range that closed under an inner one still open is skipped when it reaches the top.
    const std::pair<std::string, Interval>* innermost = nullptr;
    for (size_t i = open.size(); i-- > 0;) {
      if (open[i]->second.second > k.at_us) {
        innermost = open[i];
        break;
      }
    }
    if (innermost == nullptr) {
      ++step.unranged_kernels;
      continue;
    }
    TraceRange& range = step.ranges[innermost->first];
    ++range.kernels;
    range.busy_s += (k.span.second - k.span.first) * 1e-6;
    if (innermost->first.rfind("Optimizer.step#", 0) == 0) optimizer.push_back(k.span);
  }
}

// A GPU kernel of the trace.
struct Kernel {
  Interval span;
  std::string kind;        // empty: compute
  int32_t group_size = 0;  // NCCL kernels with record_param_comms metadata
  int64_t bytes = 0;
  int64_t correlation = -1;  // the launch's id (Kineto's args.correlation)
};

// The CPU call that launched a kernel.
struct Launch {
  double at_us = 0;
  int64_t tid = 0;
};

// A CPU-side ProfilerStep range.
struct CpuStep {
  std::string name;
  Interval span;
  int64_t tid = 0;  // the training loop's thread
};

using NamedRange = std::pair<std::string, Interval>;

// What the step's figures are made of, gathered in one pass over the trace's events.
struct TraceContents {
  std::vector<Kernel> kernels;
  std::unordered_map<int64_t, Launch> launches;  // correlation → the launch call on the CPU
  std::vector<CpuStep> cpu_steps;
  // CPU-side record_function ranges by thread: a kernel belongs to the innermost range open on the thread that
  // launched it (GPU-side ranges overlap across streams and threads).
  std::map<int64_t, std::vector<NamedRange>> cpu_ranges;
  std::map<int64_t, std::vector<Interval>> autograd_ops;  // by thread: the autograd engine's backward ops, merged
  std::vector<NamedRange> gpu_steps;                      // GPU-side ProfilerStep ranges
  std::vector<NamedRange> gpu_ranges;                     // every other GPU-side range
};

// The trace's events: the top-level array, or the object's "traceEvents" list.
Json trace_events(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {  // a syntax error, or a number beyond a double (out_of_range)
    not_a_trace(source, std::string("not JSON: ") + e.what());
  }
  Json events;  // null: no list found
  if (j.is_object() && j.contains("traceEvents")) events = std::move(j["traceEvents"]);
  if (j.is_array()) events = std::move(j);
  if (!events.is_array()) not_a_trace(source, "no traceEvents list: this is not a Chrome trace");
  return events;
}

// An event with a category and a sane time span, as add_event sorts it.
struct SpanEvent {
  std::string cat;
  std::string name;
  Interval span;
  const Json* args = nullptr;
  int64_t correlation = -1;
};

std::optional<SpanEvent> span_event(const Json& e) {
  if (!e.is_object() || !e.contains("cat") || !e["cat"].is_string()) return std::nullopt;
  if (!e.contains("ts") || !e.contains("dur") || !e["ts"].is_number() || !e["dur"].is_number()) return std::nullopt;
  const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
  if (!(dur >= 0) || !(ts >= -1e18 && ts <= 1e18) || !(dur <= 1e12)) return std::nullopt;  // not finite, or absurd
  SpanEvent out;
  // The profiler writes microseconds to the nanosecond (three decimals): the end is ts + dur to the nanosecond, as
  // binary floating point would not keep it (a kernel starting the very nanosecond a range ends must not land in it).
  out.span = {ts, std::abs(ts + dur) < 9e12 ? std::round((ts + dur) * 1e3) / 1e3 : ts + dur};
  out.cat = e["cat"].get<std::string>();
  out.name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
  out.args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
  out.correlation =
      out.args != nullptr && out.args->contains("correlation") && (*out.args)["correlation"].is_number_integer()
          ? (*out.args)["correlation"].get<int64_t>()
          : -1;
  return out;
}

// Files one event under what it is: a kernel, a launch, a step or another range, an autograd op; others are dropped.
void add_event(const Json& e, TraceContents& t) {
  const std::optional<SpanEvent> found = span_event(e);
  if (!found) return;
  const SpanEvent& ev = *found;
  const std::string& cat = ev.cat;
  if (cat == "kernel") {
    Kernel k{ev.span, nccl_kernel_kind(ev.name)};
    if (!k.kind.empty() && ev.args != nullptr) call_size(*ev.args, k.group_size, k.bytes);
    k.correlation = ev.correlation;
    t.kernels.push_back(std::move(k));
  } else if ((cat == "cuda_runtime" || cat == "cuda_driver") && ev.correlation >= 0) {
    t.launches.emplace(ev.correlation, Launch{ev.span.first, tid_of(e)});
  } else if (cat == "user_annotation" && ev.name.rfind("ProfilerStep#", 0) == 0) {
    t.cpu_steps.push_back(CpuStep{ev.name, ev.span, tid_of(e)});
  } else if (cat == "user_annotation") {
    t.cpu_ranges[tid_of(e)].emplace_back(ev.name, ev.span);
  } else if (cat == "cpu_op" && ev.name.rfind("autograd::engine::evaluate_function", 0) == 0) {
    t.autograd_ops[tid_of(e)].push_back(ev.span);
  } else if (cat == "gpu_user_annotation" && ev.name.rfind("ProfilerStep#", 0) == 0) {
    t.gpu_steps.emplace_back(ev.name, ev.span);
  } else if (cat == "gpu_user_annotation") {
    t.gpu_ranges.emplace_back(ev.name, ev.span);
  }
}

TraceContents read_contents(const Json& events) {
  TraceContents t;
  for (const Json& e : events) add_event(e, t);
  for (auto& [tid, ops] : t.autograd_ops) ops = merged(std::move(ops));  // sorted and disjoint, for inside()
  return t;
}

// The step measured: its name, its GPU window, and the training loop's thread where the trace tells it.
struct StepWindow {
  std::string name = "whole trace";
  Interval window;
  std::optional<int64_t> main_thread;  // the thread that runs the training loop (opens the ProfilerStep ranges)
};

// The last step that started on the CPU, when its kernels' launches are known: the steady state when a few were
// recorded. Its GPU window spans the kernels launched while its CPU range was open, whichever thread launched them
// (the autograd engine launches backward from its own thread, outside the main thread's range, so the GPU-side
// ProfilerStep range misses backward).
std::optional<StepWindow> last_cpu_step(const TraceContents& t) {
  if (t.cpu_steps.empty() || t.launches.empty()) return std::nullopt;
  const auto last = std::max_element(t.cpu_steps.begin(), t.cpu_steps.end(),
                                     [](const auto& a, const auto& b) { return a.span.first < b.span.first; });
  bool found = false;
  Interval span{0, 0};
  for (const Kernel& k : t.kernels) {
    const auto launch = t.launches.find(k.correlation);
    if (launch == t.launches.end() || launch->second.at_us < last->span.first ||
        launch->second.at_us > last->span.second) {
      continue;
    }
    span = found ? Interval{std::min(span.first, k.span.first), std::max(span.second, k.span.second)} : k.span;
    found = true;
  }
  if (!found) return std::nullopt;
  return StepWindow{last->name, span, last->tid};
}

// The last CPU step with launched kernels, else the last GPU-side ProfilerStep range, else every kernel's span.
StepWindow choose_step(const TraceContents& t) {
  if (std::optional<StepWindow> cpu = last_cpu_step(t)) return *cpu;
  StepWindow step;
  if (!t.gpu_steps.empty()) {
    const auto last = std::max_element(t.gpu_steps.begin(), t.gpu_steps.end(),
                                       [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    step.name = last->first;
    step.window = last->second;
    return step;
  }
  step.window = t.kernels.front().span;
  for (const Kernel& k : t.kernels) {
    step.window.first = std::min(step.window.first, k.span.first);
    step.window.second = std::max(step.window.second, k.span.second);
  }
  return step;
}

// The step's kernels, each clipped to its window, sorted for the figures.
struct StepKernels {
  std::vector<Interval> compute, comm;
  std::map<int64_t, std::vector<PlacedKernel>> compute_by_thread;  // by launching thread, where the launch is known
  std::vector<PlacedKernel> compute_by_gpu_time;
  std::vector<std::pair<Interval, bool>> phase_launch;  // compute kernels with a known launch: launched in backward?
  std::map<std::string, std::vector<Interval>> by_kind;
  std::map<std::pair<std::string, int32_t>, TraceCollectiveSize> sizes;
};

void add_compute_kernel(const Kernel& k, const Interval& clipped, const TraceContents& t, const StepWindow& chosen,
                        StepKernels& out) {
  out.compute.push_back(clipped);
  const auto launch = t.launches.find(k.correlation);
  if (launch != t.launches.end()) {
    // Backward: launched by another thread than the training loop's (the autograd engine's device threads run
    // backward, FSDP's hooks and its final callback), or inside an autograd-engine op on any thread.
    const auto backward = t.autograd_ops.find(launch->second.tid);
    const bool in_backward = (chosen.main_thread && launch->second.tid != *chosen.main_thread) ||
                             (backward != t.autograd_ops.end() && inside(backward->second, launch->second.at_us));
    out.phase_launch.push_back({clipped, in_backward});
  }
  if (launch != t.launches.end() && t.cpu_ranges.count(launch->second.tid) != 0) {
    out.compute_by_thread[launch->second.tid].push_back(PlacedKernel{launch->second.at_us, clipped});
  } else {
    out.compute_by_gpu_time.push_back(PlacedKernel{clipped.first, clipped});
  }
}

void add_nccl_kernel(const Kernel& k, const Interval& clipped, StepKernels& out, TraceStep& step) {
  out.comm.push_back(clipped);
  out.by_kind[k.kind].push_back(clipped);
  ++step.collectives[k.kind].kernels;
  if (k.group_size > 0 && k.bytes > 0) {
    TraceCollectiveSize& c = out.sizes[{k.kind, k.group_size}];
    c.kind = k.kind;
    c.group_size = k.group_size;
    ++c.kernels;
    c.bytes += k.bytes;
    c.kernel_s += (k.span.second - k.span.first) * 1e-6;
    c.bus_bw_bytes_per_s += static_cast<double>(k.bytes) * bus_factor(k.kind, k.group_size);  // bus bytes, for now
  }
}

StepKernels step_kernels(const TraceContents& t, const StepWindow& chosen, TraceStep& step) {
  StepKernels out;
  for (const Kernel& k : t.kernels) {
    const Interval clipped{std::max(k.span.first, chosen.window.first), std::min(k.span.second, chosen.window.second)};
    if (clipped.second <= clipped.first) continue;
    ++step.kernels;
    if (k.kind.empty()) {
      add_compute_kernel(k, clipped, t, chosen, out);
    } else {
      add_nccl_kernel(k, clipped, out, step);
    }
  }
  return out;
}

// Each compute kernel into its innermost range: by the CPU ranges of its launching thread, else by the GPU ranges.
// Returns the GPU intervals of the kernels in Optimizer.step# ranges.
std::vector<Interval> attribute_compute(StepKernels& kernels, const TraceContents& t, TraceStep& step) {
  std::vector<Interval> optimizer;
  for (auto& [tid, placed] : kernels.compute_by_thread)
    attribute_to_ranges(std::move(placed), t.cpu_ranges.at(tid), step, optimizer);
  attribute_to_ranges(std::move(kernels.compute_by_gpu_time), t.gpu_ranges, step, optimizer);
  return optimizer;
}

// Compute time by phase: the optimizer's kernels by their GPU intervals (attributed above), the rest by where they
// were launched. Only where kernels link to their launches.
void add_phase_times(const StepKernels& kernels, const std::vector<Interval>& optimizer, TraceStep& step) {
  if (kernels.phase_launch.empty()) return;
  const std::vector<Interval> optimizer_union = merged(optimizer);
  double fwd = 0, bwd = 0;
  for (const auto& [span, in_backward] : kernels.phase_launch) {
    // Attributed to an Optimizer.step# range above.
    if (inside(optimizer_union, span.first) && inside(optimizer_union, span.second)) continue;
    (in_backward ? bwd : fwd) += (span.second - span.first) * 1e-6;
  }
  step.phase_kernel_s = {{"fwd", fwd}, {"bwd", bwd}, {"optim", step.optimizer_s}};
}

// The step time, the busy time of compute and of communication, and the communication no compute overlaps.
void add_busy_times(StepKernels& kernels, const Interval& window, TraceStep& step) {
  const std::vector<Interval> compute_union = merged(kernels.compute), comm_union = merged(kernels.comm);
  step.step_time_s = (window.second - window.first) * 1e-6;
  step.compute_busy_s = length(compute_union) * 1e-6;
  step.comm_busy_s = length(comm_union) * 1e-6;
  step.exposed_comm_s = uncovered(comm_union, compute_union) * 1e-6;
  for (auto& [kind, intervals] : kernels.by_kind) step.collectives[kind].busy_s = length(merged(intervals)) * 1e-6;
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
  const TraceContents contents = read_contents(trace_events(text, source));
  if (contents.kernels.empty()) not_a_trace(source, "the trace has no GPU kernels (\"cat\": \"kernel\")");
  const StepWindow chosen = choose_step(contents);
  TraceStep step;
  step.step_name = chosen.name;
  StepKernels kernels = step_kernels(contents, chosen, step);
  for (auto& [key, c] : kernels.sizes) {
    c.bus_bw_bytes_per_s = c.kernel_s > 0 ? c.bus_bw_bytes_per_s / c.kernel_s : 0;
    step.collective_sizes.push_back(c);
  }
  const std::vector<Interval> optimizer = attribute_compute(kernels, contents, step);
  step.optimizer_s = length(merged(optimizer)) * 1e-6;
  add_phase_times(kernels, optimizer, step);
  add_busy_times(kernels, chosen.window, step);
  return step;
}

std::map<std::string, double> predicted_phase_kernel_s(const Report& predicted) {
  std::map<std::string, double> seconds;
  for (const OpRecord& op : predicted.ops) {
    if (is_collective(op.kind) || is_p2p(op.kind)) continue;
    const std::string phase = op.phase == Phase::recompute ? "bwd" : std::string(to_string(op.phase));
    seconds[phase] += static_cast<double>(op.duration_ns) * 1e-9;
  }
  return seconds;
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
  if (!measured.phase_kernel_s.empty()) {
    std::map<std::string, double> predicted_s = predicted_phase_kernel_s(predicted);
    for (const auto& [phase, what] : {std::pair{"fwd", "kernels, forward"}, std::pair{"bwd", "kernels, backward"},
                                      std::pair{"optim", "kernels, optimizer"}}) {
      const auto m = measured.phase_kernel_s.find(phase);
      row(what, predicted_s[phase], m == measured.phase_kernel_s.end() ? 0 : m->second);
    }
  }
  if (predicted.host_kernels_per_step > 0) {
    // What the host issues (sim/host_timeline.h) against the kernels the trace shows in the step: the counts the host
    // model's CPU time per kernel multiplies.
    char error[32] = "-";
    if (measured.kernels > 0) {
      std::snprintf(error, sizeof error, "%+.1f%%",
                    100.0 * static_cast<double>(predicted.host_kernels_per_step - measured.kernels) /
                        static_cast<double>(measured.kernels));
    }
    std::snprintf(line, sizeof line, "  %-22s %12lld %12lld %8s\n", "kernels per step",
                  static_cast<long long>(predicted.host_kernels_per_step), static_cast<long long>(measured.kernels),
                  error);
    out += line;
  }
  std::snprintf(line, sizeof line, "  measured: compute kernels busy %.3f s, NCCL kernels busy %.3f s\n",
                measured.compute_busy_s, measured.comm_busy_s);
  out += line;
  for (const auto& [kind, c] : measured.collectives) {
    std::snprintf(line, sizeof line, "    %-20s %6lld kernels, busy %.3f s\n", kind.c_str(),
                  static_cast<long long>(c.kernels), c.busy_s);
    out += line;
  }
  if (!measured.collective_sizes.empty()) {
    out += "  measured collectives by size (record_param_comms metadata):\n";
    for (const TraceCollectiveSize& c : measured.collective_sizes) {
      std::snprintf(line, sizeof line, "    %-15s %5d ranks %6lld calls %10.1f MiB each  busbw %7.1f GB/s\n",
                    c.kind.c_str(), c.group_size, static_cast<long long>(c.kernels),
                    static_cast<double>(c.bytes) / static_cast<double>(c.kernels) / (1 << 20),
                    c.bus_bw_bytes_per_s / 1e9);
      out += line;
    }
  }
  if (!measured.ranges.empty()) {
    // The busiest ranges first (ties by name, so the table is the same every run); the JSON-free text keeps 15.
    std::vector<std::pair<std::string, TraceRange>> busiest(measured.ranges.begin(), measured.ranges.end());
    std::stable_sort(busiest.begin(), busiest.end(),
                     [](const auto& a, const auto& b) { return a.second.busy_s > b.second.busy_s; });
    out +=
        "  measured compute by range (record_function; each kernel in the innermost range open on the thread that "
        "launched it), busiest first:\n";
    for (size_t i = 0; i < busiest.size() && i < 15; ++i) {
      std::snprintf(line, sizeof line, "    %-40s %6lld kernels %10.3f ms\n", busiest[i].first.substr(0, 40).c_str(),
                    static_cast<long long>(busiest[i].second.kernels), busiest[i].second.busy_s * 1e3);
      out += line;
    }
    if (busiest.size() > 15) out += "    ... " + std::to_string(busiest.size() - 15) + " more ranges\n";
    std::snprintf(line, sizeof line, "    %-40s %6lld kernels\n", "(in no range)",
                  static_cast<long long>(measured.unranged_kernels));
    out += line;
  }
  if (measured.optimizer_s > 0) {
    std::snprintf(line, sizeof line, "  measured optimizer step (Optimizer.step# ranges): %.3f ms\n",
                  measured.optimizer_s * 1e3);
    out += line;
  }
  return out;
}

}  // namespace fsdpsim
