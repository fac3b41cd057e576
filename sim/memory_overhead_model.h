#pragma once
/// The simulator's estimate of the memory a rank holds outside the caching allocator (memory/memory_overheads.h):
/// the CUDA context and cuBLAS workspace from the GPU profile, whose YAML cites its source; NCCL's channel buffers
/// from NCCL_BUFFSIZE and the channel counts of the algorithms the cost model chose; the 2 MiB rounding of
/// NCCL-registered pools.

#include <cstdint>
#include <vector>

#include "memory/memory_overheads.h"
#include "schedule/ir.h"
#include "sim/flat_ops.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// Per pipeline stage, the other stages it sends to or receives from (its NCCL point-to-point peers): one per end
/// and two per middle stage under 1F1B, two for every stage of an interleaved schedule over three or more stages.
/// One zero without pipeline parallelism.
std::vector<int32_t> pipeline_peers_per_stage(const Schedule& schedule);

/// The overheads of running `schedule` with the algorithms its flattened ops' costs chose (`flat`, from
/// flatten_ops).
MemoryOverheads memory_overheads(const Schedule& schedule, const Topology& topology, const FlatOps& flat);

}  // namespace fsdpsim
