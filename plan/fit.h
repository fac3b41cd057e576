#pragma once
/// Fitting: the smallest number of GPUs, the largest micro-batch, or the longest sequence with which a job fits in
/// GPU memory with a chosen margin, found by searching over the simulator. Memory grows with the micro-batch and the
/// sequence, so an exponential search brackets those answers and a binary search finds them; it usually falls with
/// more GPUs but not always (allocator rounding), so the GPU search simulates every candidate below its first fit.

#include <string>
#include <vector>

#include "config/fsdp_config.h"
#include "model/model.h"
#include "plan/sweep.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// What to find.
enum class FitTarget : uint8_t { gpus, micro_batch_size, seq_length };

/// The answer of a fit.
struct FitAnswer {
  FitTarget target = FitTarget::gpus;
  bool found = false;
  std::string assignment;  ///< "nodes=16", "micro_batch_size=4", "seq_length=16384"
  SweepResult result;      ///< the fitting configuration (or the closest one tried when none fits)
  std::vector<std::pair<std::string, SweepResult>> tried;  ///< every evaluation, in search order
  std::string explanation;                                 ///< why nothing fits, when nothing does
  std::string note;  ///< what the search saw on the way (memory not monotone in the searched key)
};

/// Searches from `base`. Limits: up to `max_nodes` nodes, micro-batches up to 1024, sequences up to 1M tokens.
/// "Fits" is the verdict's `fits` state (report/memory_verdict.h): a configuration at risk does not count.
/// `evaluate` replaces evaluate_config (a test's constructed memory curve); empty: simulate.
FitAnswer fit(const ModelSpec& model, const Topology& topology, const FsdpConfig& base, FitTarget target,
              const EvaluateOptions& options, int32_t max_nodes = 4096, const ConfigEvaluator& evaluate = {});

/// Text of the answer (and of the search).
std::string fit_text(const FitAnswer& answer, const ModelSpec& model, const Topology& topology,
                     const EvaluateOptions& options);

/// The answer as JSON: the target, whether it was found, the fitting (or closest) point and every point tried, with
/// the fields sweep_json writes (plan/sweep_output.cpp).
std::string fit_json(const FitAnswer& answer);

/// Parses "gpus", "micro_batch_size", "seq_length".
FitTarget parse_fit_target(const std::string& text);

}  // namespace fsdpsim
