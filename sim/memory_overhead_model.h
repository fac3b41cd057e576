#pragma once
/// The simulator's estimate of the memory a rank holds outside the caching allocator (memory/memory_overheads.h):
/// the CUDA context and cuBLAS workspace from the GPU profile, whose YAML cites its source; NCCL's channel buffers
/// from NCCL_BUFFSIZE and the channel counts of the algorithms the cost model chose; the 2 MiB rounding of
/// NCCL-registered pools.

#include "memory/memory_overheads.h"
#include "schedule/ir/ir.h"
#include "sim/flat_ops.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The overheads of running `schedule` with the algorithms its flattened ops' costs chose (`flat`, from
/// flatten_ops).
MemoryOverheads memory_overheads(const Schedule& schedule, const Topology& topology, const FlatOps& flat);

}  // namespace fsdpsim
