#include "sim/calibration.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/text.h"
#include "sim/nccl/collective_model.h"

namespace fsdpsim {
namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<OpKind> kind_from_text(const std::string& text) {
  if (text.find("all_gather") != std::string::npos || text.find("allgather") != std::string::npos)
    return OpKind::all_gather;
  if (text.find("reduce_scatter") != std::string::npos || text.find("reducescatter") != std::string::npos) {
    return OpKind::reduce_scatter;
  }
  if (text.find("all_reduce") != std::string::npos || text.find("allreduce") != std::string::npos)
    return OpKind::all_reduce;
  return std::nullopt;
}

DType dtype_from_nccl(const std::string& t) {
  if (t == "float" || t == "float32") return DType::fp32;
  if (t == "half" || t == "float16") return DType::fp16;
  if (t == "bfloat16") return DType::bf16;
  if (t.find("f8") != std::string::npos || t.find("fp8") != std::string::npos) return DType::fp8;
  return DType::fp32;
}

// A data row: size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong (out-of-place, in-place).
bool parse_row(const std::vector<std::string>& w, CollectiveSample& s) {
  if (w.size() != 12 && w.size() != 13) return false;
  long long size = 0, count = 0;
  if (!parse_int64(w[0], &size) || !parse_int64(w[1], &count)) return false;
  const size_t t = w.size() == 13 ? 5 : 4;  // index of the out-of-place time
  double time_us = 0, busbw_gbs = 0;
  long long wrong = 0;
  if (!parse_double(w[t], &time_us) || !parse_double(w[t + 2], &busbw_gbs)) return false;
  if (!parse_int64(w[t + 3], &wrong)) wrong = 0;  // "N/A" when validation is off
  s.size_bytes = size;
  s.dtype = dtype_from_nccl(w[2]);
  s.time_s = time_us * 1e-6;
  s.busbw_bytes_per_s = busbw_gbs * 1e9;
  s.wrong = wrong;
  return size >= 0 && time_us >= 0 && busbw_gbs >= 0;
}

}  // namespace

std::vector<CollectiveSample> parse_nccl_tests_log(const std::string& text, const std::string& source,
                                                   std::optional<OpKind> kind) {
  std::vector<CollectiveSample> rows;
  std::set<std::string> hosts;
  std::map<std::string, int> rank_lines;  // rank number → the line that lists it
  int32_t ranks = 0;
  std::istringstream in(text);
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::vector<std::string> w = words_of(line);
    if (w.empty()) continue;
    if (w[0] == "#") {
      // "# Collective test starting: all_gather_perf"; "#  Rank  0 Group  0 Pid 123 on host device 0 [..] NAME"
      if (line.find("Collective test starting") != std::string::npos && !kind) kind = kind_from_text(line);
      if (w.size() > 8 && w[1] == "Rank" && w[7] == "on") {
        // Two logs pasted together list their ranks twice, and the rank count would be wrong: refuse.
        if (const auto [it, fresh] = rank_lines.emplace(w[2], line_number); !fresh) {
          throw ConfigError(SourceLocation{source, line_number, 1}, "",
                            "rank " + w[2] + " is listed again (first on line " + std::to_string(it->second) + ")",
                            "give the output of one nccl-tests run per file");
        }
        ++ranks;
        hosts.insert(w[8]);
      }
      continue;
    }
    CollectiveSample s;
    if (!parse_row(w, s)) {
      if (line[0] == '#' || w[0].rfind("#", 0) == 0) continue;
      throw ConfigError(SourceLocation{source, line_number, 1}, "",
                        "not an nccl-tests result row: '" + trim_copy(line) + "'",
                        "give the unmodified output of all_gather_perf, reduce_scatter_perf or all_reduce_perf");
    }
    s.where = SourceLocation{source, line_number, 1};
    rows.push_back(s);
  }
  if (!kind) {
    throw ConfigError(SourceLocation{source, 0, 0}, "", "the log does not say which collective it measured",
                      "name it: --import-nccl-tests all_gather=FILE (or reduce_scatter=, all_reduce=)");
  }
  if (rows.empty()) {
    throw ConfigError(SourceLocation{source, 0, 0}, "", "no result rows found (truncated or not an nccl-tests log)",
                      "give the full output of the nccl-tests binary");
  }
  if (ranks == 0) {
    throw ConfigError(SourceLocation{source, 0, 0}, "", "the log lists no '#  Rank N ... on HOST' lines",
                      "keep the header nccl-tests prints: it says how many GPUs ran and on which hosts");
  }
  // Calibration places the ranks evenly over the hosts (nccl-tests runs the same number of GPUs on each).
  if (ranks % static_cast<int32_t>(std::max<size_t>(1, hosts.size())) != 0) {
    throw ConfigError(SourceLocation{source, 0, 0}, "",
                      "the log's " + std::to_string(ranks) + " ranks are not spread evenly over its " +
                          std::to_string(hosts.size()) + " hosts",
                      "give the output of a run with the same number of GPUs on every host");
  }
  for (auto& s : rows) {
    s.kind = *kind;
    s.ranks = ranks;
    s.nodes = static_cast<int32_t>(std::max<size_t>(1, hosts.size()));
  }
  return rows;
}

GpuProfile calibrate_profile(const GpuProfile& base, const Topology& topology, const GpuMeasurements& m,
                             const std::string& label, CalibrationSummary* summary) {
  GpuProfile p = base;
  p.calibration = label;
  char line[256];
  const auto say = [&](const std::string& s) {
    if (summary) summary->lines.push_back(s);
  };
  double best_bf16 = 0, best_fp8 = 0;
  for (const auto& g : m.gemms) {
    double& best = g.dtype == DType::fp8 ? best_fp8 : best_bf16;
    best = std::max(best, g.flops_per_s);
  }
  if (best_bf16 > 0) {
    p.gemm_max_efficiency = std::min(1.0, best_bf16 / p.dense_bf16_flops_per_s);
    std::snprintf(line, sizeof line, "gemm_max_efficiency %.3f (best BF16 GEMM %.1f TFLOP/s of %.0f)",
                  p.gemm_max_efficiency, best_bf16 / 1e12, p.dense_bf16_flops_per_s / 1e12);
    say(line);
  }
  if (best_fp8 > 0 && p.dense_fp8_flops_per_s > 0) {
    p.fp8_gemm_max_efficiency = std::min(1.0, best_fp8 / p.dense_fp8_flops_per_s);
    std::snprintf(line, sizeof line, "fp8_gemm_max_efficiency %.3f (best FP8 GEMM %.1f TFLOP/s)",
                  p.fp8_gemm_max_efficiency, best_fp8 / 1e12);
    say(line);
  }
  if (m.copy_bw_bytes_per_s > 0) {
    p.memory_efficiency = std::min(1.0, m.copy_bw_bytes_per_s / p.hbm_bw_bytes_per_s);
    std::snprintf(line, sizeof line, "memory_efficiency %.3f (device copy %.0f GB/s of %.0f)", p.memory_efficiency,
                  m.copy_bw_bytes_per_s / 1e9, p.hbm_bw_bytes_per_s / 1e9);
    say(line);
  }
  // hbm_bytes is the memory CUDA lets a process use (hardware.h), which is below the datasheet and nvidia-smi
  // figures by what the driver keeps: take it from the GPU itself.
  if (m.memory_bytes > 0 && m.memory_bytes != p.hbm_bytes) {
    std::snprintf(line, sizeof line, "hbm_bytes %s (what CUDA reports on this GPU; the profile had %s)",
                  format_bytes(m.memory_bytes).c_str(), format_bytes(p.hbm_bytes).c_str());
    p.hbm_bytes = m.memory_bytes;
    say(line);
  }
  // Per collective kind: the largest measured size against the model's prediction for the same group placement.
  std::map<OpKind, const CollectiveSample*> largest;
  for (const auto& s : m.collectives) {
    if (s.wrong > 0 || s.busbw_bytes_per_s <= 0 || s.ranks < 2) continue;
    const CollectiveSample*& best = largest[s.kind];
    if (best == nullptr || s.size_bytes > best->size_bytes) best = &s;
  }
  Topology t = topology;
  t.gpu = base;
  for (const auto& [kind, s] : largest) {
    CollectiveRequest request;
    request.kind = kind;
    request.size_bytes = s->size_bytes;
    request.dtype = s->dtype;
    // nccl-tests ran `ranks` GPUs spread evenly over `nodes` hosts: place them so on this topology.
    const int32_t per_node = std::max(1, s->ranks / std::max(1, s->nodes));
    const int32_t stride =
        per_node < t.gpus_per_node && t.gpus_per_node % per_node == 0 ? t.gpus_per_node / per_node : 1;
    try {
      request.placement = place_group(t, std::max(s->nodes, 1) * t.gpus_per_node, s->ranks, stride);
    } catch (const ConfigError& e) {
      // The measurement does not fit this topology (more GPUs per host than a node has): say which row.
      throw ConfigError(s->where, "",
                        std::to_string(s->ranks) + " ranks on " + std::to_string(s->nodes) + " host" +
                            (s->nodes == 1 ? "" : "s") + " do not fit " + t.name + ": " + e.problem(),
                        "calibrate against the topology the measurement ran on (--topology)");
    }
    const double predicted = predicted_busbw_bytes_per_s(request, t);
    if (predicted <= 0) continue;
    const double scale = s->busbw_bytes_per_s / predicted;
    (kind == OpKind::all_gather       ? p.busbw_scale_all_gather
     : kind == OpKind::reduce_scatter ? p.busbw_scale_reduce_scatter
                                      : p.busbw_scale_all_reduce) = scale;
    std::snprintf(line, sizeof line,
                  "busbw_scale_%s %.3f (%d ranks on %d node%s, %s: measured %.1f GB/s, model %.1f GB/s)",
                  std::string(to_string(kind)).c_str(), scale, s->ranks, s->nodes, s->nodes == 1 ? "" : "s",
                  format_bytes(s->size_bytes).c_str(), s->busbw_bytes_per_s / 1e9, predicted / 1e9);
    say(line);
  }
  return p;
}

}  // namespace fsdpsim
