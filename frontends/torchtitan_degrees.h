#pragma once
/// The parallelism degrees of a torchtitan job TOML ([parallelism], or where older torchtitan kept them) and the
/// world size they give.

#include <cstdint>
#include <string>

#include "frontends/torchtitan_config.h"
#include "frontends/torchtitan_toml.h"

namespace fsdpsim::torchtitan {

/// Parallelism.data_parallel_shard_degree's default: "the leftover ranks" (job_config.py @ 238fa995).
constexpr int64_t kFillShardDegree = -1;

/// The degrees as the TOML gives them, with torchtitan's defaults for what it leaves out.
struct Degrees {
  int64_t replicate = 1;
  int64_t shard = kFillShardDegree;
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  int64_t etp = 1;
  int64_t pp = 1;
  std::string shard_path;  ///< where data_parallel_shard_degree is (or would be), for origins and messages
  std::string pp_path;     ///< the same for pipeline_parallel_degree
};

/// Reads the degrees, refusing a shard degree of 0 and an expert TP torchtitan does not support.
Degrees read_degrees(const Toml& t);

/// replicate × tp × cp × pp (× shard when given), refusing products beyond the largest world fsdpsim models.
TorchtitanWorld world_of(const Toml& t, const Degrees& d);

}  // namespace fsdpsim::torchtitan
