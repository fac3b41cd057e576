#pragma once
/// A sweep split over processes: each evaluates every N-th point of the grid (`sweep --shard i/N`, or one MPI rank
/// each) and writes its results as a part; `merge` joins the parts into the results a one-process sweep gives, byte
/// for byte. Points are dealt round-robin, not in blocks, because the costly points (many micro-batches) sit together
/// in the grid.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan/sweep.h"

namespace fsdpsim {

/// The largest part file read: about a million points' results (a full 10^6-point grid in one part is ~1 GB).
inline constexpr int64_t kMaxSweepPartBytes = int64_t{2} << 30;

/// One shard's results, and what every part of the same sweep shares.
struct SweepPart {
  std::string fingerprint;  ///< sweep_fingerprint() of the spec: parts of different sweeps do not merge
  int64_t total = 0;        ///< points in the whole sweep
  int64_t shard = 0;        ///< this part's shard, 0 ≤ shard < shards
  int64_t shards = 1;
  std::map<std::string, std::string> header;  ///< what the printed report needs (the CLI's to fill and read)
  std::vector<int64_t> indices;               ///< the grid index of each result
  std::vector<SweepResult> results;
};

/// Parses "i/N" (the --shard syntax): 0 ≤ i < N ≤ 100,000; errors name the option.
std::pair<int64_t, int64_t> parse_shard(const std::string& text);

/// The grid indices shard `shard` of `shards` evaluates: shard, shard + shards, ... below `total`.
std::vector<int64_t> shard_indices(int64_t total, int64_t shard, int64_t shards);

/// Evaluates the points of one shard (in parallel, as run_sweep) and returns them as a part.
SweepPart run_sweep_shard(const SweepSpec& spec, int64_t shard, int64_t shards, const SweepProgress& progress = {});

/// A text that differs between sweeps that can give different results: the model, the hardware, the base
/// configuration, the axes and points, the evaluation and run options. Equal specs give equal fingerprints.
std::string sweep_fingerprint(const SweepSpec& spec);

/// The part as JSON (every field of every result, numbers written so that they read back exactly).
std::string sweep_part_json(const SweepPart& part);
/// Reads a part back; errors name `source`, the line and the key.
SweepPart parse_sweep_part(const std::string& text, const std::string& source);
/// Reads a part file (at most limits::kMaxSweepPartBytes).
SweepPart load_sweep_part(const std::string& path);

/// The whole sweep's results in grid order, from parts of one sweep that together hold every point once; errors name
/// the parts that differ, overlap or are missing.
std::vector<SweepResult> merge_sweep_parts(const std::vector<SweepPart>& parts,
                                           const std::vector<std::string>& sources);

}  // namespace fsdpsim
