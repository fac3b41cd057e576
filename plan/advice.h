#pragma once
/// OOM advice: when a configuration does not fit, the single changes that would make it fit — sharding strategy,
/// micro-batch, recompute, double buffer off, BF16 gradient reduction, CP or TP, more GPUs, CPU offload of
/// activations — each simulated, with its predicted peak and step time, best first.

#include <string>
#include <vector>

#include "config/fsdp_config.h"
#include "model/model.h"
#include "plan/sweep.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// One suggested change and what it gives.
struct AdviceItem {
  std::string change;       ///< "recompute_granularity=full"
  std::string explanation;  ///< "recompute whole layers in backward: saves activations, costs ~1/3 more compute"
  std::vector<std::string> assignments;  ///< the --set values that make this change
  SweepResult result;
};

/// The changes worth trying from `config`, simulated; those that fit first (fastest first), then the others by how
/// little memory they need.
std::vector<AdviceItem> oom_advice(const ModelSpec& model, const Topology& topology, const FsdpConfig& config,
                                   const EvaluateOptions& options);

/// The advice as text (what simulate and fit print after an OOM verdict).
std::string advice_text(const std::vector<AdviceItem>& advice, size_t limit = 10);

}  // namespace fsdpsim
