#pragma once
/// Capacity planning: a sweep simulates every combination of the given configuration values on all cores and ranks
/// the results (configurations that fit first, then by tokens/s per GPU, by cost, or by memory).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedule/config/fsdp_config.h"
#include "schedule/model/model.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// One swept key and its values ("micro_batch_size" → {"1", "2", "4"}).
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

/// Parses "key=v1,v2,v3" (the --grid syntax); errors name the key and the valid keys.
GridAxis parse_grid_axis(const std::string& text);

/// What one configuration gives.
struct SweepResult {
  std::vector<std::string> assignments;  ///< "key=value" of this point, in axis order
  bool valid = false;                    ///< the configuration can be built (divisibility, combinations)
  std::string invalid_reason;            ///< why not
  bool fits = false;
  int32_t gpus = 0;
  int32_t micro_batches = 0;
  int64_t params_per_rank = 0;  ///< the TP/EP slice one rank holds before FSDP sharding
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t needed_bytes = 0;  ///< peak reserved + overheads
  int64_t gpu_memory_bytes = 0;
  double gpu_seconds_per_million_tokens = 0;  ///< cost: GPUs × step time / tokens per step × 1e6
};

/// How to rank: fitting configurations always come first.
enum class RankBy : uint8_t { throughput, cost, memory };

/// Sweep inputs.
struct SweepSpec {
  ModelSpec model;
  Topology topology;
  FsdpConfig base;  ///< the configuration every point starts from
  std::vector<GridAxis> axes;
  double memory_margin = 0.0;  ///< a point fits when needed ≤ (1 − margin) × GPU memory
  int32_t threads = 0;         ///< 0: all cores
  /// Steps to simulate per point. 1 (the default for sweeps) simulates the steady state directly: the allocator's
  /// first-step cudaMalloc costs are left out, which is the only thing that makes a first step differ.
  int32_t steps = 1;
  /// Evaluates one point's configuration; empty: evaluate_config with the fields above. A what-if (or a test) may
  /// replace it. Whatever it throws becomes that point's error, and the sweep goes on.
  std::function<SweepResult(const FsdpConfig& config)> evaluate;
};

/// Progress: (done, total) after each point, from worker threads (the callee serialises).
using SweepProgress = std::function<void(int64_t done, int64_t total)>;

/// Number of points of the grid (product of the axis sizes).
int64_t sweep_size(const SweepSpec& spec);
/// Simulates every point (in parallel) and returns the results in grid order. Deterministic: the same spec gives the
/// same results whatever the thread count.
std::vector<SweepResult> run_sweep(const SweepSpec& spec, const SweepProgress& progress = {});
/// Indices of `results` ranked: valid and fitting first (by the criterion), then valid but not fitting (by needed
/// memory), then invalid.
std::vector<size_t> rank_results(const std::vector<SweepResult>& results, RankBy by);
/// Evaluates one configuration (also what fit and the OOM advice use).
SweepResult evaluate_config(const ModelSpec& model, const Topology& topology, FsdpConfig config, double memory_margin,
                            int32_t steps);

/// The ranked table (top `limit` rows), CSV (every point) and JSON (every point).
std::string sweep_table(const std::vector<SweepResult>& results, const std::vector<size_t>& order, size_t limit);
std::string sweep_csv(const std::vector<SweepResult>& results, const std::vector<size_t>& order);
std::string sweep_json(const std::vector<SweepResult>& results, const std::vector<size_t>& order);

}  // namespace fsdpsim
