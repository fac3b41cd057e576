#include "plan/fidelity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/error.h"
#include "common/units.h"
#include "common/yaml_reader.h"
#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"

namespace fsdpsim {
namespace {

// The hardware a row names, as fsdpsim runs it: a topology preset, a GPU profile (a variant where the row's GPU has
// its own profile), and the NVLink rate where an export variant (A800, H800) cuts it.
struct HardwareMapping {
  const char* gpu;
  const char* topology;
  const char* profile;
  double nvlink_bw_bytes_per_s;  // 0: the preset's
};

constexpr HardwareMapping kHardware[] = {
    {"h100-sxm", "dgx-h100-ndr", "h100-sxm", 0},
    {"h100-96gb", "dgx-h100-ndr", "h100-96gb", 0},
    {"h800-sxm", "dgx-h100-ndr", "h100-sxm", 200e9},  // H800: NVLink cut to 400 GB/s in total (200 per direction)
    {"h200-sxm", "hgx-h200-ndr", "h200-sxm", 0},
    {"a100-sxm-80gb", "dgx-a100-hdr", "a100-sxm-80gb", 0},
    {"a100-sxm-40gb", "dgx-a100-hdr", "a100-sxm-40gb", 0},
    {"a800-sxm-80gb", "dgx-a100-hdr", "a100-sxm-80gb", 200e9},  // A800: NVLink cut to 400 GB/s in total
    {"b200", "hgx-b200-ndr", "b200", 0},
    {"b200-power-limited", "hgx-b200-ndr", "b200-power-limited", 0},
    {"gb200", "gb200-nvl72", "gb200", 0},
    {"gb300", "gb300-nvl72", "gb300", 0},
};

Topology map_hardware(YamlMap hw, const std::string& row) {
  const YamlValue gpu = hw.get("gpu");
  const std::string name = gpu.as_string();
  const HardwareMapping* m = nullptr;
  for (const auto& h : kHardware) {
    if (name == h.gpu) m = &h;
  }
  if (m == nullptr)
    gpu.fail("row " + row + ": no fsdpsim hardware for GPU '" + name + "'",
             "use a GPU the table in plan/fidelity.cpp maps");
  Topology t = topology_preset(m->topology);
  t.gpu = gpu_profile(m->profile);
  if (m->nvlink_bw_bytes_per_s > 0) t.nvlink_bw_bytes_per_s = m->nvlink_bw_bytes_per_s;
  const int64_t per_node = hw.get("gpus_per_node").as_int(1, 1024);
  // A host with fewer GPUs than the preset's node is modelled as such a node (and its NVLink domain).
  if (per_node < t.gpus_per_node) {
    t.gpus_per_node = static_cast<int32_t>(per_node);
    t.nvlink_domain_gpus = static_cast<int32_t>(per_node);
    t.nics_per_node = std::max<int32_t>(1, static_cast<int32_t>(per_node * t.nics_per_node / 8));
  }
  (void)hw.get("gpus").as_int(1);
  // Racks of a multi-node NVLink system are often filled partly (64 of 72 GB200 slots): a row may say how many GPUs
  // share one NVLink domain.
  if (hw.has("nvlink_domain_gpus")) {
    t.nvlink_domain_gpus = static_cast<int32_t>(hw.get("nvlink_domain_gpus").as_int(1, 1 << 20));
  }
  hw.allow({"gpu_memory", "interconnect", "topology"});
  hw.finish();
  return t;
}

ModelSpec read_model(const YAML::Node& node, const std::string& source, const std::string& row) {
  if (node.IsScalar()) return model_preset(node.Scalar());
  YAML::Emitter out;
  out << node;
  return parse_model_yaml(out.c_str(), source + " (row " + row + ", model)");
}

FsdpConfig read_config(YamlMap cfg) {
  FsdpConfig c;
  for (const std::string& key : cfg.keys()) {
    const YamlValue v = cfg.get(key);
    apply_override(c, key + "=" + v.as_string(), "fidelity row");
    c.origin[key] = v.location();
  }
  cfg.finish();
  return c;
}

std::optional<double> optional_number(YamlMap& m, const std::string& key) {
  if (!m.has(key)) return std::nullopt;
  const YamlValue v = m.get(key);
  if (v.node().IsNull()) return std::nullopt;
  return v.as_double(0, 1e12);
}

FidelityMeasured read_measured(YamlMap m) {
  FidelityMeasured out;
  out.tokens_per_s_per_gpu = optional_number(m, "tokens_per_s_per_gpu");
  out.tflops_per_gpu = optional_number(m, "tflops_per_gpu");
  out.mfu = optional_number(m, "mfu");
  out.peak_memory_gib = optional_number(m, "peak_memory_gib");
  if (m.has("peak_memory_kind") && !m.get("peak_memory_kind").node().IsNull()) {
    out.peak_memory_kind =
        m.get("peak_memory_kind").as_choice({"max_memory_reserved", "max_memory_allocated", "nvidia-smi", "unknown"});
  }
  m.allow({"derived", "step_time_s"});
  m.finish();
  return out;
}

FidelityRow read_row(YamlMap r, const std::string& source) {
  FidelityRow row;
  row.id = r.get("id").as_string();
  row.role = r.has("role") ? r.get("role").as_choice({"calibration", "held_out"}) : "held_out";
  row.software = r.get("software").as_choice({"fsdp1", "fsdp2", "megatron_fsdp", "deepspeed_zero3"});
  YamlMap src = r.map("source");
  row.source = src.has("url") ? src.get("url").as_string() : src.string_or("repository", "");
  src.allow({"repository", "path", "commit", "location", "quote"});
  src.finish();
  row.explanation = r.string_or("explanation", "");
  row.unsupported = r.string_or("unsupported", "");
  if (!row.unsupported.empty()) {
    // Kept in the file (the measurement is real) but not simulated: say why and read nothing else.
    r.allow(
        {"software_version", "extras", "unstated", "notes", "confidence", "model", "hardware", "config", "measured"});
    r.finish();
    return row;
  }
  row.model = read_model(r.raw("model"), source, row.id);
  row.topology = map_hardware(r.map("hardware"), row.id);
  row.config = read_config(r.map("config"));
  const YAML::Node hw = r.raw("hardware");
  const int64_t gpus = hw["gpus"].as<int64_t>();
  if (row.config.origin.count("nodes") == 0) row.config.nodes = static_cast<int32_t>(gpus / row.topology.gpus_per_node);
  row.measured = read_measured(r.map("measured"));
  r.allow({"software_version", "extras", "unstated", "notes", "confidence"});
  r.finish();
  return row;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<FidelityRow> load_fidelity_rows(const std::string& path) {
  const YamlDocument doc = load_yaml_file(path);
  YamlMap top(doc.root, doc.source, "");
  const YAML::Node rows = top.raw("rows");
  top.finish();
  if (!rows.IsSequence()) top.fail("'rows' must be a list", "write one '- id: ...' entry per measurement");
  std::vector<FidelityRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    out.push_back(read_row(YamlMap(rows[i], doc.source, "rows[" + std::to_string(i) + "]"), doc.source));
  }
  return out;
}

std::vector<FidelityResult> run_fidelity(const std::vector<FidelityRow>& rows) {
  std::vector<FidelityResult> results;
  for (const FidelityRow& row : rows) {
    FidelityResult r;
    r.row = &row;
    if (!row.unsupported.empty()) {
      r.failure = "unsupported: " + row.unsupported;
      results.push_back(std::move(r));
      continue;
    }
    try {
      FsdpConfig config = row.config;
      const Schedule s = build_job_schedule(row.model, config, row.topology);
      SimOptions options;
      options.record_timeline = false;
      const RunRecord run = run_schedule(s, row.topology, options);
      const Report rep = make_report(s, row.topology, run, ReportDetail::summary);
      r.simulated = true;
      const FidelityMeasured& m = row.measured;
      // Throughput: tokens/s when the source gives it (no FLOP-counting convention involved), else its TFLOP/s or MFU.
      if (m.tokens_per_s_per_gpu) {
        r.points.push_back({"tokens_per_s_per_gpu", *m.tokens_per_s_per_gpu, rep.tokens_per_s_per_gpu});
      } else if (m.tflops_per_gpu) {
        r.points.push_back({"tflops_per_gpu", *m.tflops_per_gpu, rep.tflops_per_gpu});
      } else if (m.mfu) {
        r.points.push_back({"mfu", *m.mfu, rep.mfu});
      }
      if (m.peak_memory_gib) {
        // max_memory_reserved / unknown: the caching allocator's reserved bytes; allocated: live bytes; nvidia-smi:
        // everything the process holds (reserved plus context and NCCL).
        int64_t bytes = rep.peak_reserved_bytes;
        if (m.peak_memory_kind == "max_memory_allocated") bytes = rep.peak_allocated_bytes;
        if (m.peak_memory_kind == "nvidia-smi") bytes = rep.peak_reserved_bytes + rep.overheads.total();
        r.points.push_back({"peak_memory_gib", *m.peak_memory_gib, static_cast<double>(bytes) / (1 << 30)});
      }
    } catch (const Error& e) {
      r.failure = e.what();
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<FidelitySummary> summarize_fidelity(const std::vector<FidelityResult>& results) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;
  for (const auto& r : results) {
    for (const auto& p : r.points) {
      const double e = std::fabs(p.error());
      errors[{p.metric, r.row->role}].push_back(e);
      if (p.metric != "peak_memory_gib") errors[{"throughput", r.row->role}].push_back(e);
    }
  }
  std::vector<FidelitySummary> out;
  for (const auto& [key, v] : errors) {
    out.push_back(FidelitySummary{key.first, key.second, v.size(), median(v), *std::max_element(v.begin(), v.end())});
  }
  return out;
}

std::vector<std::string> unexplained_outliers(const std::vector<FidelityResult>& results, double limit) {
  std::vector<std::string> out;
  for (const auto& r : results) {
    for (const auto& p : r.points) {
      if (std::fabs(p.error()) > limit && r.row->explanation.empty()) {
        char line[256];
        std::snprintf(line, sizeof line, "%s: %s off by %+.1f%% without an explanation", r.row->id.c_str(),
                      p.metric.c_str(), 100 * p.error());
        out.push_back(line);
      }
    }
  }
  return out;
}

std::string fidelity_text(const std::vector<FidelityResult>& results, const std::vector<FidelitySummary>& summary) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-66s %-11s %-20s %12s %12s %8s\n", "row", "role", "metric", "measured",
                "predicted", "error");
  out << line;
  for (const auto& r : results) {
    if (!r.simulated) {
      std::snprintf(line, sizeof line, "%-66s %-11s not simulated: %s\n", r.row->id.c_str(), r.row->role.c_str(),
                    r.failure.c_str());
      out << line;
      continue;
    }
    for (const auto& p : r.points) {
      std::snprintf(line, sizeof line, "%-66s %-11s %-20s %12.4g %12.4g %+7.1f%%\n", r.row->id.c_str(),
                    r.row->role.c_str(), p.metric.c_str(), p.measured, p.predicted, 100 * p.error());
      out << line;
    }
  }
  out << "\nsummary (absolute relative error)\n";
  std::snprintf(line, sizeof line, "  %-22s %-11s %5s %9s %9s\n", "metric", "role", "rows", "median", "max");
  out << line;
  for (const auto& s : summary) {
    std::snprintf(line, sizeof line, "  %-22s %-11s %5zu %8.1f%% %8.1f%%\n", s.metric.c_str(), s.role.c_str(), s.rows,
                  100 * s.median_abs_error, 100 * s.max_abs_error);
    out << line;
  }
  return out.str();
}

namespace {

bool has_throughput(const FidelityMeasured& m) {
  return m.tokens_per_s_per_gpu || m.tflops_per_gpu || m.mfu;
}

// RMS of log(predicted / measured) over the throughput points of `rows` run with `profile`'s constants.
double throughput_rms_log_error(const std::vector<FidelityRow>& rows, const GpuProfile& profile) {
  std::vector<FidelityRow> tuned = rows;
  for (FidelityRow& r : tuned) r.topology.gpu = profile;
  double sum = 0;
  size_t n = 0;
  for (const FidelityResult& r : run_fidelity(tuned)) {
    for (const FidelityPoint& p : r.points) {
      if (p.metric == "peak_memory_gib" || p.predicted <= 0) continue;
      const double e = std::log(p.predicted / p.measured);
      sum += e * e;
      ++n;
    }
  }
  return n == 0 ? 0 : std::sqrt(sum / static_cast<double>(n));
}

// The value in [lo, hi] on a grid of `step` that minimises error(value) (the error is smooth and has one minimum
// in practice; a grid keeps the result deterministic and readable).
template <typename Error>
double grid_minimum(double lo, double hi, double step, Error error) {
  double best = lo, best_error = error(lo);
  const auto steps = static_cast<int>(std::lround((hi - lo) / step));
  for (int i = 1; i <= steps; ++i) {
    const double v = lo + step * i;
    const double e = error(v);
    if (e < best_error) best = v, best_error = e;
  }
  return best;
}

}  // namespace

std::vector<FidelityFit> fit_fidelity(const std::vector<FidelityRow>& rows) {
  std::map<std::string, std::vector<FidelityRow>> by_profile;
  for (const FidelityRow& r : rows) {
    if (r.role == "calibration" && r.unsupported.empty() && has_throughput(r.measured)) {
      by_profile[r.topology.gpu.name].push_back(r);
    }
  }
  std::vector<FidelityFit> fits;
  for (const auto& [name, cal] : by_profile) {
    FidelityFit fit;
    fit.profile = name;
    for (const FidelityRow& r : cal) fit.rows.push_back(r.id);
    GpuProfile p = cal.front().topology.gpu;
    fit.rms_log_error_before = throughput_rms_log_error(cal, p);
    fit.attention_fitted = cal.size() >= kMinRowsForAttention;
    // Coordinate descent: the clock scales everything FLOP-bound, attention only the attention share; three rounds
    // settle both to the grid step.
    for (int round = 0; round < (fit.attention_fitted ? 3 : 1); ++round) {
      p.sustained_clock_fraction = grid_minimum(0.20, 1.25, 0.01, [&](double v) {
        GpuProfile q = p;
        q.sustained_clock_fraction = v;
        return throughput_rms_log_error(cal, q);
      });
      if (!fit.attention_fitted) break;
      p.attention_efficiency = grid_minimum(0.10, 0.90, 0.01, [&](double v) {
        GpuProfile q = p;
        q.attention_efficiency = v;
        return throughput_rms_log_error(cal, q);
      });
    }
    fit.sustained_clock_fraction = p.sustained_clock_fraction;
    fit.attention_efficiency = p.attention_efficiency;
    fit.rms_log_error_after = throughput_rms_log_error(cal, p);
    fits.push_back(std::move(fit));
  }
  return fits;
}

std::string fidelity_fit_text(const std::vector<FidelityFit>& fits) {
  std::ostringstream out;
  char line[256];
  for (const FidelityFit& f : fits) {
    std::snprintf(line, sizeof line, "# %s: %zu calibration rows, RMS log error %.3f -> %.3f\n", f.profile.c_str(),
                  f.rows.size(), f.rms_log_error_before, f.rms_log_error_after);
    out << line;
    std::snprintf(line, sizeof line, "sustained_clock_fraction: %.2f\n", f.sustained_clock_fraction);
    out << line;
    if (f.attention_fitted) {
      std::snprintf(line, sizeof line, "attention_efficiency: %.2f\n", f.attention_efficiency);
      out << line;
    }
    out << "#   fitted on: ";
    for (size_t i = 0; i < f.rows.size(); ++i) out << (i ? ", " : "") << f.rows[i];
    out << "\n";
  }
  return out.str();
}

}  // namespace fsdpsim
