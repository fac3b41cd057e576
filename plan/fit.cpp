#include "plan/fit.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"
#include "schedule/config/parallel_layout.h"

namespace fsdpsim {
namespace {

struct Search {
  const ModelSpec& model;
  const Topology& topology;
  const FsdpConfig& base;
  double margin;
  FitAnswer& answer;

  // Evaluates `key=value` on the base configuration (recorded in the answer).
  const SweepResult& evaluate(const std::string& key, int64_t value) {
    FsdpConfig config = base;
    const std::string assignment = key + "=" + std::to_string(value);
    apply_override(config, assignment, "fit");
    SweepResult r = evaluate_config(model, topology, config, margin, 2);
    r.assignments = {assignment};
    answer.tried.emplace_back(assignment, std::move(r));
    return answer.tried.back().second;
  }
};

// Smallest value in `candidates` (ascending; memory falls as the value grows) whose configuration fits.
void smallest_fitting(Search& s, const std::string& key, const std::vector<int64_t>& candidates) {
  // Exponential probing over the candidate list, then binary search between the last miss and the first fit.
  size_t lo = 0, hi = candidates.size();
  size_t step = 1, probe = 0;
  while (probe < candidates.size()) {
    const SweepResult& r = s.evaluate(key, candidates[probe]);
    if (r.valid && r.fits) {
      hi = probe;
      break;
    }
    lo = probe + 1;
    probe += step;
    step *= 2;
  }
  if (hi == candidates.size()) return;  // nothing fits up to the limit
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const SweepResult& r = s.evaluate(key, candidates[mid]);
    if (r.valid && r.fits)
      hi = mid;
    else
      lo = mid + 1;
  }
  s.answer.found = true;
  s.answer.assignment = key + "=" + std::to_string(candidates[hi]);
  for (const auto& [a, r] : s.answer.tried) {
    if (a == s.answer.assignment) s.answer.result = r;
  }
}

// Largest value in `candidates` (ascending; memory grows with the value) whose configuration fits.
void largest_fitting(Search& s, const std::string& key, const std::vector<int64_t>& candidates) {
  if (candidates.empty()) return;
  const SweepResult& first = s.evaluate(key, candidates.front());
  if (!first.valid || !first.fits) return;
  size_t lo = 0, hi = candidates.size();  // candidates[lo] fits; candidates[hi] (if any) does not
  size_t step = 1;
  while (lo + step < candidates.size()) {
    const SweepResult& r = s.evaluate(key, candidates[lo + step]);
    if (!(r.valid && r.fits)) {
      hi = lo + step;
      break;
    }
    lo += step;
    step *= 2;
  }
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    const SweepResult& r = s.evaluate(key, candidates[mid]);
    if (r.valid && r.fits)
      lo = mid;
    else
      hi = mid;
  }
  s.answer.found = true;
  s.answer.assignment = key + "=" + std::to_string(candidates[lo]);
  for (const auto& [a, r] : s.answer.tried) {
    if (a == s.answer.assignment) s.answer.result = r;
  }
}

// Values of `key` from `from` to `to` for which the configuration can be built at all (divisibility, batch
// multiples): the search then only probes real candidates.
std::vector<int64_t> buildable(const Search& s, const std::string& key, int64_t from, int64_t to, int64_t step) {
  std::vector<int64_t> v;
  for (int64_t x = from; x <= to; x += step) {
    FsdpConfig config = s.base;
    try {
      apply_override(config, key + "=" + std::to_string(x), "fit");
      (void)resolve_layout(s.model, config, s.topology.gpus_per_node);
      v.push_back(x);
    } catch (const ConfigError&) {
      // not a candidate
    }
  }
  return v;
}

}  // namespace

FitTarget parse_fit_target(const std::string& text) {
  if (text == "gpus" || text == "nodes") return FitTarget::gpus;
  if (text == "micro_batch_size" || text == "micro-batch") return FitTarget::micro_batch_size;
  if (text == "seq_length" || text == "sequence") return FitTarget::seq_length;
  throw ConfigError(SourceLocation{"<--find " + text + ">", 0, 0}, "--find", "unknown fit target '" + text + "'",
                    "use gpus, micro_batch_size or seq_length");
}

FitAnswer fit(const ModelSpec& model, const Topology& topology, const FsdpConfig& base, FitTarget target, double margin,
              int32_t max_nodes) {
  FitAnswer answer;
  answer.target = target;
  Search s{model, topology, base, margin, answer};
  switch (target) {
    case FitTarget::gpus:
      smallest_fitting(s, "nodes", buildable(s, "nodes", 1, max_nodes, 1));
      break;
    case FitTarget::micro_batch_size:
      largest_fitting(s, "micro_batch_size", buildable(s, "micro_batch_size", 1, 1024, 1));
      break;
    case FitTarget::seq_length:
      // Sequences in steps of 128 tokens, up to 1M.
      largest_fitting(s, "seq_length", buildable(s, "seq_length", 128, 1 << 20, 128));
      break;
  }
  if (!answer.found) {
    // Report the closest miss: the evaluation that needed the least memory.
    const SweepResult* best = nullptr;
    for (const auto& [a, r] : answer.tried) {
      if (r.valid && (best == nullptr || r.needed_bytes < best->needed_bytes)) best = &r;
    }
    if (best != nullptr) answer.result = *best;
    answer.explanation =
        answer.tried.empty() || best == nullptr
            ? "no configuration in the search range could be built (see the reasons above)"
            : "nothing in the search range fits; the closest needs " + format_bytes(best->needed_bytes);
  }
  return answer;
}

std::string fit_text(const FitAnswer& a, const ModelSpec& model, const Topology& topology, double margin) {
  std::ostringstream out;
  const char* what = a.target == FitTarget::gpus               ? "the smallest number of GPUs"
                     : a.target == FitTarget::micro_batch_size ? "the largest micro-batch"
                                                               : "the longest sequence";
  char margin_text[32];
  std::snprintf(margin_text, sizeof margin_text, "%.0f%%", 100 * margin);
  out << "fit: " << what << " with which " << model.name << " fits on " << topology.name << " (" << margin_text
      << " memory margin)\n";
  out << "searched " << a.tried.size() << " configurations:\n";
  for (const auto& [assignment, r] : a.tried) {
    char line[256];
    if (!r.valid) {
      std::snprintf(line, sizeof line, "  %-22s cannot be built: %s\n", assignment.c_str(), r.invalid_reason.c_str());
    } else {
      std::snprintf(line, sizeof line, "  %-22s %-4s needs %10s of %10s, step %.3f s, %.0f tokens/s/GPU\n",
                    assignment.c_str(), r.fits ? "fits" : "OOM", format_bytes(r.needed_bytes).c_str(),
                    format_bytes(r.gpu_memory_bytes).c_str(), r.step_time_s, r.tokens_per_s_per_gpu);
    }
    out << line;
  }
  if (a.found) {
    out << "answer: " << a.assignment;
    if (a.target == FitTarget::gpus) out << " = " << a.result.gpus << " GPUs";
    char tail[160];
    std::snprintf(tail, sizeof tail, " (needs %s of %s; step %.3f s, %.0f tokens/s per GPU)\n",
                  format_bytes(a.result.needed_bytes).c_str(), format_bytes(a.result.gpu_memory_bytes).c_str(),
                  a.result.step_time_s, a.result.tokens_per_s_per_gpu);
    out << tail;
  } else {
    out << "answer: none — " << a.explanation << "\n";
  }
  return out.str();
}

}  // namespace fsdpsim
