#pragma once
/// torchtitan's pipeline parallelism ([parallelism] pipeline_parallel_*) as fsdpsim's pipeline keys: the schedule,
/// the virtual stages per rank and the split of the layers over them.

#include "frontends/torchtitan_degrees.h"
#include "frontends/torchtitan_toml.h"
#include "model/model.h"

namespace fsdpsim::torchtitan {

/// Sets pp, the schedule, the virtual stages and the layer split for pp > 1, refusing what fsdpsim does not model
/// (CSV schedules, explicit split points, a split Megatron-core's cannot express), each at its key in the TOML.
void apply_pipeline(const Toml& t, FsdpConfig& c, const ModelSpec& model, const Degrees& d);

}  // namespace fsdpsim::torchtitan
