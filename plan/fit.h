#pragma once
/// Fitting: the smallest number of GPUs, the largest micro-batch, or the longest sequence with which a job fits in
/// GPU memory with a chosen margin, found by searching over the simulator (memory falls with more GPUs and grows
/// with the micro-batch and the sequence, so an exponential search brackets the answer and a binary search
/// finds it).

#include <string>
#include <vector>

#include "plan/sweep.h"
#include "schedule/config/fsdp_config.h"
#include "schedule/model/model.h"
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
};

/// Searches from `base`. Limits: up to `max_nodes` nodes, micro-batches up to 1024, sequences up to 1M tokens.
FitAnswer fit(const ModelSpec& model, const Topology& topology, const FsdpConfig& base, FitTarget target,
              double memory_margin, int32_t max_nodes = 4096);

/// Text of the answer (and of the search).
std::string fit_text(const FitAnswer& answer, const ModelSpec& model, const Topology& topology, double memory_margin);

/// Parses "gpus", "micro_batch_size", "seq_length".
FitTarget parse_fit_target(const std::string& text);

}  // namespace fsdpsim
