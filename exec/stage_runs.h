#pragma once
/// A pipeline run one GPU per stage (pure C++): where each stage's GPU sits in the world, and how the runs those GPUs
/// measured become the one run record the simulator's prediction is compared with. The host backend runs a whole
/// pipeline on each host rank and needs none of the merging; the CUDA backend runs each stage on its own GPU and
/// process or thread, each measuring only its own stage's ops and memory.

#include <cstdint>
#include <span>
#include <vector>

#include "run/run_record.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// GPUs per pipeline stage: world / pp (at least 1).
[[nodiscard]] int32_t ranks_per_stage(const Schedule& schedule);
/// The stage world rank `rank` runs. The pipeline dimension is outermost in Megatron's tp-cp-ep-dp-pp rank order
/// (megatron/core/parallel_state.py, RankGenerator) and in torchtitan's device mesh ([pp, dp_replicate, dp_shard, cp,
/// tp], torchtitan/distributed/parallel_dims.py), so stage s holds ranks s·(world/pp) .. (s+1)·(world/pp) − 1.
[[nodiscard]] int32_t stage_of_rank(const Schedule& schedule, int32_t rank);
/// The rank that runs stage `stage` in the pipeline of world rank `rank` (the same place within its stage).
[[nodiscard]] int32_t rank_in_stage(const Schedule& schedule, int32_t rank, int32_t stage);

/// One run from the runs of each stage's GPU (`by_stage[s]` measured stage s's ops; every record has the same number
/// of steps, each step all of the schedule's ops, those of other stages unset): each op's times come from its stage's
/// record, shifted onto one clock whose steps last as long as the slowest stage's; each stage's peaks come from its
/// record; the run's peaks, memory stage and origin are the fullest stage's (highest reserved peak in the last step,
/// as the simulator names it). Throws Error when the records do not fit the schedule.
[[nodiscard]] RunRecord merge_stage_runs(const Schedule& schedule, const std::vector<RunRecord>& by_stage);

/// A run's steps as integers, for sending between processes: op times and the two peaks of every step.
[[nodiscard]] std::vector<int64_t> pack_steps(const RunRecord& run);
/// The steps pack_steps() wrote (origin left as default); throws Error when `packed` is not what it writes for
/// `ops` ops.
[[nodiscard]] RunRecord unpack_steps(std::span<const int64_t> packed, size_t ops);

}  // namespace fsdpsim
