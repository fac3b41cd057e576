#include "builders/builder.h"

#include "builders/build_fsdp2.h"
#include "builders/build_pipeline.h"
#include "builders/megatron_builder.h"

namespace fsdpsim {

Schedule build_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout) {
  BudgetRange ignored;
  return build_schedule(model, config, layout, &ignored);
}

Schedule build_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                        BudgetRange* budgets) {
  *budgets = BudgetRange{};
  if (layout.pp > 1) return build_pipeline_schedule(model, config, layout, budgets);
  if (config.implementation == Implementation::fsdp2) return build_fsdp2_schedule(model, config, layout);
  MegatronBuilder builder(model, config, layout);
  Schedule s = builder.build();
  *budgets = builder.budget_range();
  return s;
}

Schedule build_schedule(const ModelSpec& model, FsdpConfig config, int32_t gpus_per_node) {
  const ParallelLayout layout = resolve_layout(model, config, gpus_per_node);
  return build_schedule(model, config, layout);
}

}  // namespace fsdpsim
