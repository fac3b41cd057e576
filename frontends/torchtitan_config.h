#pragma once
/// A torchtitan job TOML (`--torchtitan-config job.toml`, torchtitan's own train_configs/*.toml) read into the model
/// and the configuration: [model] name and flavor pick a preset; [parallelism], [training], [activation_checkpoint],
/// [compile] and the float8/MX converters set the keys (always FSDP2 with torchtitan's wrapping). Keys torchtitan
/// leaves out take torchtitan's defaults (JobConfig). Tables that do not shape the step (optimizer, checkpoint,
/// metrics, ...) are accepted as they are; an unknown key in a table that does is an error naming file:line.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "config/fsdp_config.h"
#include "model/model.h"

namespace fsdpsim {

/// What the TOML's degrees say about the world size. torchtitan takes the world from its launcher (torchrun), not
/// from the TOML, so the GPU count is only fixed when data_parallel_shard_degree is given; with -1 it fills the
/// world that the nodes give.
struct TorchtitanWorld {
  int64_t gpus = 0;           ///< replicate × shard × tp × cp; 0 when data_parallel_shard_degree is -1
  int64_t fixed_degrees = 1;  ///< replicate × tp × cp: what the world must be a multiple of
  SourceLocation where;       ///< data_parallel_shard_degree in the file (or the file), for messages
  std::string key;            ///< its key path ("parallelism.data_parallel_shard_degree")
  std::string degrees;        ///< "data_parallel_replicate_degree 1 × ... = 64", for messages
  /// The GPUs a pasted launcher starts (torchtitan_args.h: NGPU, torchrun's --nnodes × --nproc_per_node); 0 when
  /// none was given. They size the job unless --set or --config gives nodes or gpus.
  int64_t launcher_gpus = 0;
  SourceLocation launcher_where;
};

/// Applies a torchtitan job TOML read from `path` to `config` and `model`. When `model` is empty the TOML's [model]
/// name and flavor must name a flavor fsdpsim has a preset for; a model given before (--model) is kept and [model]
/// is only checked. Throws ConfigError naming file:line and the key.
TorchtitanWorld apply_torchtitan_config(const std::string& path, FsdpConfig& config, std::optional<ModelSpec>& model);
/// The same for TOML text; `source` names it in messages.
TorchtitanWorld apply_torchtitan_toml(const std::string& text, const std::string& source, FsdpConfig& config,
                                      std::optional<ModelSpec>& model);

/// Once every other override is in: derives `nodes` from the TOML's degrees (when they fix the world and nothing
/// else set nodes), or checks that the nodes given agree with them. `gpus_per_node` is the topology's.
void settle_torchtitan_world(const TorchtitanWorld& world, FsdpConfig& config, int32_t gpus_per_node);

/// The torchtitan models fsdpsim knows, as "name flavor -> preset" lines (for messages and the docs).
std::vector<std::string> known_torchtitan_flavors();

}  // namespace fsdpsim
