#pragma once
/// Capacity planning: a sweep simulates every combination of the given configuration values on all cores and ranks
/// the results (configurations that fit first, then by tokens/s per GPU, by cost, or by memory).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "builders/budget_range.h"
#include "config/fsdp_config.h"
#include "model/model.h"
#include "plan/training_cost.h"
#include "report/memory_verdict.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The grid keys that sweep the hardware rather than the configuration.
inline constexpr const char* kTopologyAxis = "topology";
inline constexpr const char* kProfileAxis = "profile";

/// One swept key and its values ("micro_batch_size" → {"1", "2", "4"}). Besides the configuration keys, two keys
/// sweep the hardware: `topology` (a preset or YAML file per value) and `profile` (the GPU every node carries, a
/// preset or YAML file, applied after the topology).
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
  std::vector<Topology> topologies;  ///< key `topology`: each value loaded, in value order
  std::vector<GpuProfile> profiles;  ///< key `profile`: each value loaded, in value order
};

/// Parses "key=v1,v2,v3" (the --grid syntax); errors name the key and the valid keys. Hardware values are loaded
/// here, so that a misspelt preset fails before the first simulation.
GridAxis parse_grid_axis(const std::string& text);

/// What one configuration gives.
struct SweepResult {
  std::vector<std::string> assignments;  ///< "key=value" of this point, in axis order
  bool valid = false;                    ///< the configuration can be built (divisibility, combinations)
  std::string invalid_reason;            ///< why not
  MemoryVerdict memory;                  ///< the verdict `simulate` prints for the same configuration
  int32_t gpus = 0;
  int32_t micro_batches = 0;
  int64_t params_per_rank = 0;  ///< the TP/EP slice one rank holds before FSDP sharding
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t needed_bytes = 0;  ///< peak reserved + overheads (= memory.needed_bytes)
  int64_t gpu_memory_bytes = 0;
  double gpu_seconds_per_million_tokens = 0;  ///< GPUs × step time / tokens per step × 1e6 (no failures)
  std::string topology;                       ///< the hardware the point ran on (a `topology`/`profile` axis varies it)
  std::string gpu;
  int64_t checkpoint_bytes = 0;  ///< the training state a checkpoint writes (plan/training_cost.h)
  bool priced = false;           ///< a price per GPU-hour is known for this point's hardware
  TrainingCost cost;             ///< goodput, and days, GPU-hours and money when the sweep names a run
  bool over_budget = false;      ///< more GPUs than the sweep's --max-gpus

  /// Built, and its verdict is `fits` (not at risk, not out of memory).
  [[nodiscard]] bool fits() const { return valid && memory.fit == MemoryFit::fits; }
};

/// The verdict as the sweep's tables write it: "fits", "risk", "OOM", or "OOM*" when the simulated caching allocator
/// failed an allocation although the memory needed is within the GPU's (fragmentation), which a table would
/// otherwise show as an OOM needing less than an "at risk" point beside it.
[[nodiscard]] std::string sweep_verdict_label(const SweepResult& r);
/// The footnote that explains "OOM*".
inline constexpr const char* kAllocatorFailedNote =
    "OOM*: the caching allocator failed an allocation (fragmentation) although the memory needed is within the GPU's";

/// How to rank: fitting configurations always come first. `cost` is money per token at the goodput where the points
/// have a price (GPU-seconds per token at the goodput otherwise); `time` is the whole job's tokens per second at the
/// goodput (days to train).
enum class RankBy : uint8_t { throughput, cost, memory, time };

/// How each configuration is simulated: as `simulate` does by default, so that every command gives the same memory
/// figure and verdict for the same configuration.
struct EvaluateOptions {
  double memory_margin = kDefaultMemoryMargin;  ///< needed within this fraction of the GPU's memory: at risk
  /// Steps to simulate. 2, as `simulate`: the caching allocator reserves more in the steady step than in the first
  /// (blocks split and cached in step 1 do not all fit step 2's requests), so one step would understate the figure.
  int32_t steps = 2;
  bool expandable_segments = false;  ///< PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
};

/// Evaluates one configuration (evaluate_config, or a what-if's or a test's stand-in).
using ConfigEvaluator = std::function<SweepResult(const FsdpConfig& config)>;

/// Sweep inputs.
struct SweepSpec {
  ModelSpec model;
  Topology topology;
  FsdpConfig base;  ///< the configuration every point starts from
  std::vector<GridAxis> axes;
  /// Explicit points ("key=value" lists) crossed with the grid: every point with every grid combination. Empty: the
  /// grid alone. (pipeline_plans() lists the pipeline layouts to compare with the FSDP-only plan this way.)
  std::vector<std::vector<std::string>> points;
  EvaluateOptions evaluation;
  TrainingRun run;  ///< the run each point is costed for (price: every point's unless `prices` names its hardware)
  /// Prices per GPU-hour by topology or GPU profile name (the topology's name is looked up first); a point whose
  /// hardware is not named takes `run.price_per_gpu_hour`, else its profile's `price_per_gpu_hour`.
  std::vector<std::pair<std::string, double>> prices;
  int64_t max_gpus = 0;  ///< a GPU budget: points above it rank after every point within it; 0: none
  int32_t threads = 0;   ///< 0: all cores
  /// Evaluates one point's configuration; empty: evaluate_config with the fields above. A what-if (or a test) may
  /// replace it. Whatever it throws becomes that point's error, and the sweep goes on.
  ConfigEvaluator evaluate;
};

/// Progress: (done, total) after each point, from worker threads (the callee serialises).
using SweepProgress = std::function<void(int64_t done, int64_t total)>;

/// Number of points of the grid (product of the axis sizes).
int64_t sweep_size(const SweepSpec& spec);
/// Simulates every point (in parallel) and returns the results in grid order. Deterministic: the same spec gives the
/// same results whatever the thread count.
std::vector<SweepResult> run_sweep(const SweepSpec& spec, const SweepProgress& progress = {});
/// Simulates the points with the given grid indices (in parallel) and returns their results in that order.
std::vector<SweepResult> run_sweep_points(const SweepSpec& spec, const std::vector<int64_t>& indices,
                                          const SweepProgress& progress = {});
/// The topology point `index` of the grid runs on: the spec's, or the one its `topology` and `profile` axes pick.
Topology point_topology(const SweepSpec& spec, int64_t index);
/// Every hardware a sweep's points run on: one topology per combination of its topology and profile axes (the
/// spec's topology when it sweeps neither), as point_topology equips them.
std::vector<Topology> swept_hardware(const SweepSpec& spec);
/// The price per GPU-hour of a point on `topology` (0: none known).
double point_price_per_gpu_hour(const SweepSpec& spec, const Topology& topology);

/// Indices of `results` ranked: valid, fitting and within the GPU budget first (by the criterion), then at risk (by
/// the criterion), then over the budget (by the criterion), then out of memory (in grid order), then invalid.
std::vector<size_t> rank_results(const std::vector<SweepResult>& results, RankBy by);
/// Evaluates one configuration (also what fit and the OOM advice use). `budgets`, when given, receives the
/// communication budgets that build the same schedule, hence the same result (nothing when it was not built).
SweepResult evaluate_config(const ModelSpec& model, const Topology& topology, FsdpConfig config,
                            const EvaluateOptions& options, BudgetRange* budgets = nullptr);

/// The plans `sweep --compare-pp` ranks: the configuration as given without pipeline parallelism (pp=1), and for every
/// pp from 2 up to 64 that divides the GPUs left over by tp·cp (and is at most the model's layers), 1F1B and
/// interleaved 1F1B, and for FSDP2 zero-bubble V (zbv) too. Points that cannot be built (a split that does not divide)
/// stay in the table with the reason.
std::vector<std::vector<std::string>> pipeline_plans(const ModelSpec& model, const FsdpConfig& base, int64_t world);
/// The global batch every compared plan runs: the configuration's, or when it is 0 what the FSDP-only plan runs
/// (one micro-batch per data-parallel rank: micro_batch_size × world / (tp·cp)), so that the plans differ only in
/// their layout.
int64_t compared_global_batch(const FsdpConfig& base, int64_t world);

/// The ranked table (top `limit` rows), CSV (every point) and JSON (every point).
std::string sweep_table(const std::vector<SweepResult>& results, const std::vector<size_t>& order, size_t limit);
std::string sweep_csv(const std::vector<SweepResult>& results, const std::vector<size_t>& order);
std::string sweep_json(const std::vector<SweepResult>& results, const std::vector<size_t>& order);

}  // namespace fsdpsim
