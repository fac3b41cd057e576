// The parallelism degrees of a torchtitan job TOML and the world they give (torchtitan_degrees.h).
#include "frontends/torchtitan_degrees.h"

#include <vector>

#include "common/limits.h"

namespace fsdpsim::torchtitan {

Degrees read_degrees(const Toml& t) {
  const int64_t max = limits::kMaxWorldSize;
  auto degree = [&](const std::vector<std::string>& paths, int64_t min) {
    return t.integer(first_present(t, paths), min, max).value_or(1);
  };
  Degrees d;
  d.replicate = degree({"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"}, 1);
  d.shard_path = first_present(t, {"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree"});
  d.shard = t.integer(d.shard_path, kFillShardDegree, max).value_or(kFillShardDegree);
  if (d.shard == 0) t.fail(d.shard_path, "a degree of 0", "use -1 (the GPUs left over) or a degree ≥ 1");
  d.tp = degree({"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}, 1);
  d.cp = degree({"parallelism.context_parallel_degree", "experimental.context_parallel_degree"}, 1);
  d.ep = degree({"parallelism.expert_parallel_degree"}, 1);
  d.etp = degree({"parallelism.expert_tensor_parallel_degree"}, 1);
  d.pp_path = first_present(t, {"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree",
                                "training.pipeline_parallel_degree"});
  d.pp = degree({d.pp_path}, 1);
  // torchtitan's ParallelDims._validate: expert TP is either none or the dense TP.
  if (d.ep > 1 && d.etp != 1 && d.etp != d.tp) {
    t.fail("parallelism.expert_tensor_parallel_degree",
           "expert_tensor_parallel_degree=" + std::to_string(d.etp) +
               " with tensor_parallel_degree=" + std::to_string(d.tp) + " (torchtitan supports ETP = TP or ETP = 1)",
           "use 1 or " + std::to_string(d.tp));
  }
  return d;
}

TorchtitanWorld world_of(const Toml& t, const Degrees& d) {
  TorchtitanWorld w;
  w.where = t.location(d.shard_path);
  w.key = d.shard_path;
  // replicate × tp × cp × pp: each ≤ 2^22, checked as a double before the int64 product is used.
  const double fixed = static_cast<double>(d.replicate) * static_cast<double>(d.tp) * static_cast<double>(d.cp) *
                       static_cast<double>(d.pp);
  const bool fill = d.shard == kFillShardDegree;
  const double product = fixed * (fill ? 1.0 : static_cast<double>(d.shard));
  w.degrees = "data_parallel_replicate_degree " + std::to_string(d.replicate) + " × data_parallel_shard_degree " +
              (fill ? std::string("-1") : std::to_string(d.shard)) + " × tensor_parallel_degree " +
              std::to_string(d.tp) + " × context_parallel_degree " + std::to_string(d.cp);
  if (d.pp > 1) w.degrees += " × pipeline_parallel_degree " + std::to_string(d.pp);
  if (product > static_cast<double>(limits::kMaxWorldSize)) {
    t.fail(d.shard_path, "the degrees give a job beyond what fsdpsim models (" + w.degrees + ")",
           "use at most " + std::to_string(limits::kMaxWorldSize) + " GPUs");
  }
  w.fixed_degrees = d.replicate * d.tp * d.cp * d.pp;
  w.gpus = fill ? 0 : w.fixed_degrees * d.shard;
  if (!fill) w.degrees += " = " + std::to_string(w.gpus) + " GPUs";
  return w;
}

}  // namespace fsdpsim::torchtitan
