#pragma once
/// What a whole training run costs on a configuration: days to train a token budget, GPU-hours, money, and the time
/// lost to failures (checkpoints written at the Young-Daly interval, the work since the last checkpoint redone after
/// each interruption).
///
///   job MTBF        M = 1 / (failures per GPU-hour × GPUs)
///   checkpoint      δ = the model's training state (weights, FP32 main weights, Adam moments) / storage write
///   bandwidth interval        τ = √(2 δ M)                    (Young 1974, "A first order approximation to the optimum
///                                                    checkpoint interval", CACM 17(9); Daly 2006 FGCS 22(3))
///   time lost       δ / τ (writing checkpoints) + (τ / 2 + restart) / M (redone work and restarts, per failure)
///   goodput         1 − time lost: the share of wall time that advances training
///
/// The defaults are Llama 3's 16,384-H100 pre-training, the one public large run that states both figures (Llama
/// Team, "The Llama 3 Herd of Models", arXiv 2407.21783, §3.3.1 and §3.3.4): 419 unexpected interruptions in a
/// 54-day snapshot on 16,384 GPUs (about one every 3 hours: 419 / (54 × 24 h × 16,384) = 1.97e-5 per GPU-hour), and
/// Tectonic storage sustaining 2 TB/s.

#include <cstdint>

#include "config/fsdp_config.h"

namespace fsdpsim {

inline constexpr double kLlama3FailuresPerGpuHour = 419.0 / (54.0 * 24.0 * 16384.0);
inline constexpr double kLlama3StorageWriteBytesPerS = 2e12;

/// The run a configuration is asked to train, and the machines' failure and storage figures.
struct TrainingRun {
  double tokens = 0;              ///< tokens to train; 0: no run given (no days, GPU-hours or money)
  double price_per_gpu_hour = 0;  ///< 0: no price (no money)
  double failures_per_gpu_hour = kLlama3FailuresPerGpuHour;
  double storage_write_bytes_per_s = kLlama3StorageWriteBytesPerS;  ///< the whole job's checkpoint write bandwidth
  double restart_s = 0;  ///< from an interruption to training again (rescheduling, loading the checkpoint)
};

/// What the run costs on one configuration.
struct TrainingCost {
  int64_t checkpoint_bytes = 0;
  double checkpoint_write_s = 0;
  double mtbf_s = 0;                 ///< the whole job's mean time between failures; 0: no failures modelled
  double checkpoint_interval_s = 0;  ///< Young-Daly; 0 when failures are not modelled
  double lost_fraction = 0;          ///< of wall time: checkpoint writes, redone work and restarts (at most 1)
  double goodput = 1;                ///< 1 − lost_fraction
  double days = 0;                   ///< wall-clock days to train the run's tokens (0: no tokens given)
  double gpu_hours = 0;
  double price = 0;                     ///< gpu_hours × price per GPU-hour (0: no price)
  double price_per_million_tokens = 0;  ///< at the goodput (0: no price)
};

/// The training state a checkpoint holds: every parameter in its compute dtype, the FP32 main weights where the
/// optimizer keeps them, and Adam's two moments in their dtypes (what Megatron's distributed checkpoint and
/// torch.distributed.checkpoint save of model and optimizer).
int64_t checkpoint_bytes(const FsdpConfig& config, int64_t model_params);

/// The cost of `run` on `gpus` GPUs each processing `tokens_per_s_per_gpu` between failures.
TrainingCost training_cost(int64_t gpus, double tokens_per_s_per_gpu, int64_t checkpoint_bytes, const TrainingRun& run);

}  // namespace fsdpsim
