#include "report/report_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace fsdpsim {
namespace {

std::map<std::string, double> busy_by_phase(const Report& r) {
  std::map<std::string, double> busy;
  for (const auto& op : r.ops) {
    if (op.stream == kComputeStream)
      busy[std::string(to_string(op.phase))] += static_cast<double>(op.duration_ns) / 1e9;
  }
  return busy;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

std::string percent(double e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * e);
  return buf;
}

void add_row(std::ostringstream& out, const Deviation& d, bool bytes) {
  char line[256];
  const std::string error = d.compared ? percent(d.relative_error()) : "not scored";
  if (bytes) {
    std::snprintf(line, sizeof line, "  %-34s %14s %14s %9s\n", d.what.c_str(),
                  format_bytes(static_cast<int64_t>(d.predicted)).c_str(),
                  format_bytes(static_cast<int64_t>(d.measured)).c_str(), error.c_str());
  } else {
    std::snprintf(line, sizeof line, "  %-34s %14s %14s %9s\n", d.what.c_str(),
                  format_time_ns(static_cast<TimeNs>(std::llround(d.predicted * 1e9))).c_str(),
                  format_time_ns(static_cast<TimeNs>(std::llround(d.measured * 1e9))).c_str(), error.c_str());
  }
  out << line;
}

nlohmann::ordered_json to_json(const Deviation& d) {
  nlohmann::ordered_json j = {{"what", d.what}, {"predicted", d.predicted}, {"measured", d.measured}};
  if (d.compared) {
    j["relative_error"] = d.relative_error();
  } else {
    j["compared"] = false;
  }
  return j;
}

}  // namespace

double Deviation::relative_error() const {
  if (measured == 0) return predicted == 0 ? 0 : 1;
  return (predicted - measured) / measured;
}

namespace {

// Two reports compare op by op only when they are of one schedule: the same ops, by name, in the same order.
void check_same_schedule(const Report& p, const Report& m) {
  if (p.ops.size() != m.ops.size()) {
    throw ConfigError("the reports are of different schedules: " + std::to_string(p.ops.size()) + " ops predicted, " +
                      std::to_string(m.ops.size()) + " measured (run both from the same schedule file)");
  }
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].name != m.ops[i].name) {
      throw ConfigError("the reports are of different schedules: op " + std::to_string(i) + " is '" + p.ops[i].name +
                        "' predicted but '" + m.ops[i].name + "' measured (run both from the same schedule file)");
    }
  }
}

// What the measurement cannot speak to, so that it is shown but not scored.
struct Unscored {
  bool emulated = false;    // collectives emulated by device copies: their times say nothing of the network
  bool host_times = false;  // times of the host backend's CPU threads, not of a GPU
};

// Each phase's busy time on the compute stream, then each phase's exposed communication.
void add_phases(Comparison& c, const Report& p, const Report& m, Unscored unscored) {
  const auto pb = busy_by_phase(p), mb = busy_by_phase(m);
  for (const char* phase : {"fwd", "bwd", "recompute", "optim"}) {
    const double a = pb.count(phase) ? pb.at(phase) : 0, b = mb.count(phase) ? mb.at(phase) : 0;
    if (a > 0 || b > 0) {
      c.phases.push_back(Deviation{std::string(phase) + " (compute stream busy)", a, b, !unscored.host_times});
    }
  }
  for (const char* phase : {"fwd", "bwd", "recompute", "optim"}) {
    const auto ea = p.exposed_comm_by_phase_s.find(phase), eb = m.exposed_comm_by_phase_s.find(phase);
    const double a = ea == p.exposed_comm_by_phase_s.end() ? 0 : ea->second;
    const double b = eb == m.exposed_comm_by_phase_s.end() ? 0 : eb->second;
    if (a > 0 || b > 0) {
      c.phases.push_back(
          Deviation{std::string(phase) + " exposed communication", a, b, !unscored.emulated && !unscored.host_times});
    }
  }
}

// The peaks (and each pipeline stage's), then the overheads outside the allocator where the run measured them.
void add_memory(Comparison& c, const Report& p, const Report& m, Unscored unscored) {
  c.memory.push_back(Deviation{"peak allocated", static_cast<double>(p.peak_allocated_bytes),
                               static_cast<double>(m.peak_allocated_bytes)});
  c.memory.push_back(Deviation{"peak reserved", static_cast<double>(p.peak_reserved_bytes),
                               static_cast<double>(m.peak_reserved_bytes)});
  // A pipeline: each stage's GPU has its own peaks (the two above are the fullest stage's).
  const size_t stages = p.stage_peak_allocated_bytes.size();
  if (stages > 1 && m.stage_peak_allocated_bytes.size() == stages && p.stage_peak_reserved_bytes.size() == stages &&
      m.stage_peak_reserved_bytes.size() == stages) {
    for (size_t k = 0; k < stages; ++k) {
      const std::string stage = "stage " + std::to_string(k) + " peak ";
      c.memory.push_back(Deviation{stage + "allocated", static_cast<double>(p.stage_peak_allocated_bytes[k]),
                                   static_cast<double>(m.stage_peak_allocated_bytes[k])});
      c.memory.push_back(Deviation{stage + "reserved", static_cast<double>(p.stage_peak_reserved_bytes[k]),
                                   static_cast<double>(m.stage_peak_reserved_bytes[k])});
    }
  }
  if (m.overheads_measured) {
    // What the GPU run measured with cudaMemGetInfo against the profile's constants. An emulated run creates no
    // communicator, so its NCCL figure is not a real job's.
    const auto bytes = [](int64_t b) { return static_cast<double>(b); };
    c.memory.push_back(
        Deviation{"CUDA context", bytes(p.overheads.cuda_context_bytes), bytes(m.overheads.cuda_context_bytes)});
    c.memory.push_back(Deviation{"cuBLAS workspaces", bytes(p.overheads.cublas_workspace_bytes),
                                 bytes(m.overheads.cublas_workspace_bytes)});
    c.memory.push_back(Deviation{"NCCL", bytes(p.overheads.nccl_bytes + p.overheads.nccl_registration_bytes),
                                 bytes(m.overheads.nccl_bytes + m.overheads.nccl_registration_bytes),
                                 !unscored.emulated});
  }
}

// Every op's duration, the totals per op kind, and the median error over the ops that took at least 1 us.
void add_ops(Comparison& c, const Report& p, const Report& m, Unscored unscored) {
  std::map<std::string, Deviation> kinds;
  std::vector<double> abs_errors;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    // Emulated, a pipeline's sends go nowhere and its receives are memsets: they are not scored either.
    const bool compared =
        !unscored.host_times && !(unscored.emulated && (is_collective(p.ops[i].kind) || is_p2p(p.ops[i].kind)));
    const Deviation d{p.ops[i].name, static_cast<double>(p.ops[i].duration_ns) / 1e9,
                      static_cast<double>(m.ops[i].duration_ns) / 1e9, compared};
    c.ops.push_back(d);
    Deviation& k = kinds[std::string(to_string(p.ops[i].kind))];
    k.what = std::string(to_string(p.ops[i].kind)) + " (all ops)";
    k.predicted += d.predicted;
    k.measured += d.measured;
    k.compared = compared;
    if (compared && m.ops[i].duration_ns >= 1000) abs_errors.push_back(std::fabs(d.relative_error()));
  }
  for (auto& [name, d] : kinds) c.op_kinds.push_back(d);
  c.median_abs_op_error = median(abs_errors);
}

}  // namespace

Comparison compare_reports(const Report& p, const Report& m) {
  check_same_schedule(p, m);
  Comparison c;
  c.predicted_source = p.source;
  c.measured_source = m.source;
  c.step = Deviation{"step time", p.step_time_s, m.step_time_s};
  Unscored unscored;
  // With emulated collectives (exec --emulate-world) a collective is a device copy of its bytes, so its duration and
  // the communication it exposes say nothing about the network; the compute, the copies and the memory still do.
  unscored.emulated = m.collectives_emulated;
  if (unscored.emulated) {
    c.step_less_exposed_comm =
        Deviation{"step time less exposed comm", p.step_time_s - p.exposed_comm_s, m.step_time_s - m.exposed_comm_s};
    c.notes.push_back(
        "the measured run emulated its collectives with device copies (--emulate-world): collective, send and "
        "receive durations and exposed communication are shown but not compared, and the median leaves them out");
  }
  // The host backend runs the schedule with CPU threads standing for GPUs: its memory is the IR's to the byte, but its
  // op times are the host's, not a GPU's, so they are shown and not scored against a GPU prediction.
  unscored.host_times =
      m.source.find("exec (host") != std::string::npos && p.source.find("exec (host") == std::string::npos;
  if (unscored.host_times) {
    c.step.compared = false;
    c.notes.push_back(
        "the measured run used the host backend (CPU threads standing for GPUs): its times are not comparable with a "
        "GPU prediction and are shown but not scored; its memory is, to the byte");
  }
  add_phases(c, p, m, unscored);
  add_memory(c, p, m, unscored);
  if (m.executor_scratch_bytes > 0) {
    c.notes.push_back("the executor also held " + format_bytes(m.executor_scratch_bytes) +
                      " of scratch (GEMM operands and collective staging that the IR does not hold), not compared");
  }
  add_ops(c, p, m, unscored);
  return c;
}

std::string comparison_text(const Comparison& c, size_t worst_ops) {
  std::ostringstream out;
  out << "predicted: " << c.predicted_source << "\nmeasured:  " << c.measured_source << "\n\n";
  char head[160];
  std::snprintf(head, sizeof head, "  %-34s %14s %14s %9s\n", "", "predicted", "measured", "error");
  out << "step\n" << head;
  add_row(out, c.step, false);
  if (c.step_less_exposed_comm) add_row(out, *c.step_less_exposed_comm, false);
  out << "\nphases\n" << head;
  for (const auto& d : c.phases) add_row(out, d, false);
  out << "\nmemory\n" << head;
  for (const auto& d : c.memory) add_row(out, d, true);
  out << "\nops by kind\n" << head;
  for (const auto& d : c.op_kinds) add_row(out, d, false);
  std::vector<const Deviation*> worst;
  const auto compared = std::count_if(c.ops.begin(), c.ops.end(), [](const Deviation& d) { return d.compared; });
  for (const auto& d : c.ops) {
    if (d.compared && (d.measured >= 1e-6 || d.predicted >= 1e-6)) worst.push_back(&d);
  }
  std::stable_sort(worst.begin(), worst.end(), [](const Deviation* a, const Deviation* b) {
    return std::fabs(a->predicted - a->measured) > std::fabs(b->predicted - b->measured);
  });
  if (worst.size() > worst_ops) worst.resize(worst_ops);
  out << "\nops with the largest absolute error (of " << compared
      << (compared == static_cast<std::ptrdiff_t>(c.ops.size()) ? "" : " compared") << "; median |error| "
      << percent(c.median_abs_op_error).substr(1) << ")\n"
      << head;
  for (const Deviation* d : worst) add_row(out, *d, false);
  if (!c.notes.empty()) out << "\n";
  for (const auto& note : c.notes) out << "note: " << note << "\n";
  return out.str();
}

std::string comparison_json(const Comparison& c) {
  nlohmann::ordered_json j;
  j["predicted_source"] = c.predicted_source;
  j["measured_source"] = c.measured_source;
  j["step"] = to_json(c.step);
  if (c.step_less_exposed_comm) j["step_less_exposed_comm"] = to_json(*c.step_less_exposed_comm);
  j["phases"] = nlohmann::ordered_json::array();
  for (const auto& d : c.phases) j["phases"].push_back(to_json(d));
  j["memory"] = nlohmann::ordered_json::array();
  for (const auto& d : c.memory) j["memory"].push_back(to_json(d));
  j["op_kinds"] = nlohmann::ordered_json::array();
  for (const auto& d : c.op_kinds) j["op_kinds"].push_back(to_json(d));
  j["median_abs_op_error"] = c.median_abs_op_error;
  j["notes"] = c.notes;
  j["ops"] = nlohmann::ordered_json::array();
  for (const auto& d : c.ops) j["ops"].push_back(to_json(d));
  return j.dump(2) + "\n";
}

}  // namespace fsdpsim
