#include "plan/training_cost.h"

#include <algorithm>
#include <cmath>

#include "schedule/dtype.h"

namespace fsdpsim {

int64_t checkpoint_bytes(const FsdpConfig& config, int64_t model_params) {
  int64_t per_param =
      dtype_bytes(config.param_dtype) + dtype_bytes(config.exp_avg_dtype) + dtype_bytes(config.exp_avg_sq_dtype);
  if (config.main_params_dtype == "fp32") per_param += 4;
  return model_params * per_param;
}

TrainingCost training_cost(int64_t gpus, double tokens_per_s_per_gpu, int64_t checkpoint_bytes,
                           const TrainingRun& run) {
  TrainingCost c;
  c.checkpoint_bytes = checkpoint_bytes;
  if (run.storage_write_bytes_per_s > 0) {
    c.checkpoint_write_s = static_cast<double>(checkpoint_bytes) / run.storage_write_bytes_per_s;
  }
  if (run.failures_per_gpu_hour > 0 && gpus > 0) {
    c.mtbf_s = 3600.0 / (run.failures_per_gpu_hour * static_cast<double>(gpus));
    c.checkpoint_interval_s = std::sqrt(2.0 * c.checkpoint_write_s * c.mtbf_s);
    const double writing = c.checkpoint_interval_s > 0 ? c.checkpoint_write_s / c.checkpoint_interval_s : 0.0;
    const double redone = (c.checkpoint_interval_s / 2.0 + run.restart_s) / c.mtbf_s;
    // The first-order model holds while a checkpoint is short beside the MTBF; past that the job spends all its time
    // writing and redoing, which the cap states rather than a negative goodput.
    c.lost_fraction = std::min(1.0, writing + redone);
  }
  c.goodput = 1.0 - c.lost_fraction;
  const double job_tokens_per_s = tokens_per_s_per_gpu * static_cast<double>(gpus) * c.goodput;
  if (job_tokens_per_s > 0) {
    if (run.tokens > 0) {
      const double seconds = run.tokens / job_tokens_per_s;
      c.days = seconds / 86400.0;
      c.gpu_hours = seconds / 3600.0 * static_cast<double>(gpus);
      c.price = c.gpu_hours * run.price_per_gpu_hour;
    }
    c.price_per_million_tokens = run.price_per_gpu_hour * static_cast<double>(gpus) / 3600.0 / job_tokens_per_s * 1e6;
  }
  return c;
}

}  // namespace fsdpsim
