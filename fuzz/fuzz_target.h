#pragma once
/// What every fuzz target shares: the libFuzzer entry point, the one rule they all follow — bad input must end in a
/// ConfigError or ScheduleError whose message names where the input came from; anything else (another exception, an
/// InternalError, a crash, a hang, a sanitizer report) is a bug — and small jobs to push parsed inputs further.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "builders/builder.h"
#include "common/error.h"
#include "common/limits.h"
#include "config/parallel_layout.h"
#include "job/placement_check.h"
#include "model/model.h"
#include "report/report.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

/// libFuzzer's entry point: one per target binary.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fsdpsim::fuzz {

/// The fuzzer's bytes as text.
inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// Stops the run on a finding: libFuzzer (and the replay driver) report an abort with the input that caused it.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fsdpsim fuzz finding: %s\n", what.c_str());
  std::abort();
}

/// Runs `body` on one input. A ConfigError or ScheduleError is the expected answer to bad input, but its message
/// must name `source` (the file, or "<megatron-args>", ...) so the user can find the problem, or "<default>" when it
/// blames a key the input left at its default. An InternalError is an
/// invariant that broke on some input: a finding. Any other exception escapes, which libFuzzer reports as a crash.
template <typename Body>
int run_guarded(const std::string& source, Body&& body) {
  try {
    body();
  } catch (const InternalError& e) {
    finding(std::string("internal error: ") + e.what());
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    if (message.find(source) == std::string::npos && message.find("<default>") == std::string::npos) {
      finding("a ConfigError that does not name '" + source + "': " + message);
    }
  } catch (const ScheduleError&) {
    // validate()'s violations name ops and buffers; the context names the schedule.
  }
  return 0;
}

/// A two-layer dense model: small enough that a whole schedule builds and simulates in a millisecond.
inline ModelSpec tiny_dense_model() {
  ModelSpec m;
  m.name = "tiny-dense";
  m.num_layers = 2;
  m.hidden_size = 64;
  m.ffn_hidden_size = 128;
  m.num_attention_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 16;
  m.vocab_size = 256;
  return m;
}

/// A two-layer MoE model (4 experts, top-2), for the expert-parallel paths.
inline ModelSpec tiny_moe_model() {
  ModelSpec m = tiny_dense_model();
  m.name = "tiny-moe";
  m.moe.num_experts = 4;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden_size = 32;
  return m;
}

/// The sweep copies a result to every budget in the build's BudgetRange (plan/sweep.cpp): the budgets at the range's
/// two ends must build the very same schedule (all but the info's prefetch_depth, which the simulator does not read).
inline void check_budget_range(const ModelSpec& model, FsdpConfig config, const ParallelLayout& layout,
                               const Schedule& built, const BudgetRange& range) {
  const int64_t budget = config.suggested_communication_unit_size;
  if (budget != 0 && !range.contains(budget)) finding("the budget range does not hold the budget it was built with");
  for (const int64_t edge : {range.min_elems, range.max_elems}) {
    if (edge < 1 || edge > limits::kMaxParameters || edge == budget) continue;
    config.suggested_communication_unit_size = edge;
    Schedule other = build_schedule(model, config, layout);
    other.info.prefetch_depth = built.info.prefetch_depth;
    if (!(other == built)) finding("budget " + std::to_string(edge) + " lies in the range but builds another schedule");
  }
}

/// Resolves the layout of `model` under `config` and, when the step is small, builds it: a built schedule must pass
/// validate() (a builder bug otherwise) and, when `simulate` is set, run on `topology`.
inline void exercise_job(const ModelSpec& model, FsdpConfig config, const Topology& topology, bool simulate) {
  const ParallelLayout layout = resolve_layout(model, config, topology.gpus_per_node);
  if (layout.micro_batches > 4 || model.num_layers > 8) return;  // keep each input fast
  BudgetRange budgets;
  const Schedule schedule = build_schedule(model, config, layout, &budgets);
  const std::vector<std::string> problems = validate(schedule);
  if (!problems.empty()) finding("the builder made an invalid schedule: " + problems.front());
  check_budget_range(model, config, layout, schedule, budgets);
  if (!simulate) return;
  check_group_placements(schedule, topology, config);  // as the CLI does before simulating
  SimOptions options;
  options.steps = 1;
  options.record_timeline = false;
  const RunRecord run = run_schedule(schedule, topology, options);
  (void)make_report(schedule, topology, run, ReportDetail::summary);
}

}  // namespace fsdpsim::fuzz
