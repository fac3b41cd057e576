#include "plan/fit.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"
#include "config/parallel_layout.h"

namespace fsdpsim {
namespace {

struct Search {
  const ModelSpec& model;
  const Topology& topology;
  const FsdpConfig& base;
  const EvaluateOptions& options;
  const ConfigEvaluator& evaluator;
  FitAnswer& answer;

  // Evaluates `key=value` on the base configuration (recorded in the answer).
  const SweepResult& evaluate(const std::string& key, int64_t value) {
    FsdpConfig config = base;
    const std::string assignment = key + "=" + std::to_string(value);
    apply_override(config, assignment, "fit");
    SweepResult r = evaluator ? evaluator(config) : evaluate_config(model, topology, config, options);
    r.assignments = {assignment};
    answer.tried.emplace_back(assignment, std::move(r));
    return answer.tried.back().second;
  }

  // Evaluates several values of `key` on all cores, recorded in the answer in the order given.
  void evaluate_all(const std::string& key, const std::vector<int64_t>& values) {
    if (values.empty()) return;
    SweepSpec spec;
    spec.model = model;
    spec.topology = topology;
    spec.base = base;
    spec.evaluation = options;
    spec.evaluate = evaluator;
    GridAxis axis;
    axis.key = key;
    for (const int64_t v : values) axis.values.push_back(std::to_string(v));
    spec.axes = {axis};
    for (SweepResult& r : run_sweep(spec)) answer.tried.emplace_back(r.assignments.front(), std::move(r));
  }
};

// Smallest value in `candidates` (ascending) whose configuration fits. Memory usually falls as the value grows, but
// not always: the caching allocator rounds and splits blocks, so 16 nodes can need more than 14. Exponential probing
// finds a first fit; every smaller candidate is then simulated, so the answer is the true minimum whatever the shape.
void smallest_fitting(Search& s, const std::string& key, const std::vector<int64_t>& candidates) {
  size_t first_fit = candidates.size();
  std::vector<bool> probed(candidates.size(), false);
  for (size_t probe = 0, step = 1; probe < candidates.size(); probe += step, step *= 2) {
    probed[probe] = true;
    const SweepResult& r = s.evaluate(key, candidates[probe]);
    if (r.fits()) {
      first_fit = probe;
      break;
    }
  }
  if (first_fit == candidates.size()) return;  // nothing fits up to the limit
  std::vector<int64_t> below;
  for (size_t i = 0; i < first_fit; ++i) {
    if (!probed[i]) below.push_back(candidates[i]);
  }
  s.evaluate_all(key, below);
  // The smallest fitting value, and whether a larger value was seen not to fit (memory not monotone).
  const SweepResult* best = nullptr;
  int64_t best_value = 0;
  for (const auto& [a, r] : s.answer.tried) {
    const int64_t value = std::stoll(a.substr(key.size() + 1));
    if (r.fits() && (best == nullptr || value < best_value)) {
      best = &r;
      best_value = value;
    }
  }
  s.answer.found = true;
  s.answer.assignment = key + "=" + std::to_string(best_value);
  s.answer.result = *best;
  for (const auto& [a, r] : s.answer.tried) {
    const int64_t value = std::stoll(a.substr(key.size() + 1));
    if (value > best_value && r.valid && !r.fits()) {
      s.answer.note = "memory is not monotone in " + key + " here: " + a + " needs " + format_bytes(r.needed_bytes) +
                      ", more than " + s.answer.assignment + " (" + format_bytes(best->needed_bytes) +
                      "); every value below the first fit found was simulated";
      break;
    }
  }
  std::stable_sort(s.answer.tried.begin(), s.answer.tried.end(), [&](const auto& x, const auto& y) {
    return std::stoll(x.first.substr(key.size() + 1)) < std::stoll(y.first.substr(key.size() + 1));
  });
}

// Largest value in `candidates` (ascending; memory grows with the value) whose configuration fits.
void largest_fitting(Search& s, const std::string& key, const std::vector<int64_t>& candidates) {
  if (candidates.empty()) return;
  const SweepResult& first = s.evaluate(key, candidates.front());
  if (!first.fits()) return;
  size_t lo = 0, hi = candidates.size();  // candidates[lo] fits; candidates[hi] (if any) does not
  size_t step = 1;
  while (lo + step < candidates.size()) {
    const SweepResult& r = s.evaluate(key, candidates[lo + step]);
    if (!r.fits()) {
      hi = lo + step;
      break;
    }
    lo += step;
    step *= 2;
  }
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    const SweepResult& r = s.evaluate(key, candidates[mid]);
    if (r.fits())
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

FitAnswer fit(const ModelSpec& model, const Topology& topology, const FsdpConfig& base, FitTarget target,
              const EvaluateOptions& options, int32_t max_nodes, const ConfigEvaluator& evaluate) {
  FitAnswer answer;
  answer.target = target;
  Search s{model, topology, base, options, evaluate, answer};
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

std::string fit_text(const FitAnswer& a, const ModelSpec& model, const Topology& topology,
                     const EvaluateOptions& options) {
  const double margin = options.memory_margin;
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
      std::snprintf(line, sizeof line,
                    "  %-22s %-4s %6d GPUs, needs %10s of %10s (band %s), step %.3f s, %.0f tokens/s/GPU\n",
                    assignment.c_str(), sweep_verdict_label(r).c_str(), r.gpus, format_bytes(r.needed_bytes).c_str(),
                    format_bytes(r.gpu_memory_bytes).c_str(), band_range(r.memory).c_str(), r.step_time_s,
                    r.tokens_per_s_per_gpu);
    }
    out << line;
  }
  if (a.found) {
    out << "answer: " << a.assignment;
    if (a.target == FitTarget::gpus) out << " = " << a.result.gpus << " GPUs";
    char tail[96];
    std::snprintf(tail, sizeof tail, "; step %.3f s, %.0f tokens/s per GPU\n", a.result.step_time_s,
                  a.result.tokens_per_s_per_gpu);
    out << "\n  verdict: " << verdict_text(a.result.memory) << tail;
    if (!a.note.empty()) out << "  note: " << a.note << "\n";
  }
  // A configuration beyond the answer that fits only at risk (inside the margin, or with the band past the GPU):
  // what a user willing to stake the launch on the figure alone could take instead.
  const auto value_of = [](const std::string& assignment) {
    return std::stoll(assignment.substr(assignment.find('=') + 1));
  };
  const std::pair<std::string, SweepResult>* risk = nullptr;
  for (const auto& tried : a.tried) {
    if (!tried.second.valid || tried.second.memory.fit != MemoryFit::at_risk) continue;
    const int64_t v = value_of(tried.first);
    const bool beyond =
        !a.found || (a.target == FitTarget::gpus ? v < value_of(a.assignment) : v > value_of(a.assignment));
    const bool better =
        risk == nullptr || (a.target == FitTarget::gpus ? v < value_of(risk->first) : v > value_of(risk->first));
    if (beyond && better) risk = &tried;
  }
  if (risk != nullptr) {
    out << "  at risk: " << risk->first << " (" << verdict_text(risk->second.memory) << ")\n";
  }
  if (!a.found) {
    out << "answer: none — " << a.explanation << "\n";
  }
  return out.str();
}

}  // namespace fsdpsim
