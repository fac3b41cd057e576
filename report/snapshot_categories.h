#pragma once
/// What a block of a real run's CUDA memory snapshot is for, read from the stack frames PyTorch recorded with it
/// (`_record_memory_history(stacks="python")` gives Python frames, `"all"` adds C++ frames), in fsdpsim's buffer
/// categories; and the coarser groups in which a prediction and a snapshot can be compared honestly.
///
/// The function names are those of the frameworks' own code, checked against real recordings (bench/results,
/// 2026-11-26, PyTorch 2.11): PyTorch FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py and
/// _fsdp_param.py), Megatron-FSDP (megatron_fsdp/param_and_grad_buffer.py, NVIDIA/Megatron-LM @ d98e8a64dd),
/// torch.optim and autograd.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/pickle.h"

namespace fsdpsim {

/// What the frames of one snapshot share, found in a first pass over its events.
struct SnapshotFrameContext {
  /// FSDP2's foreach_reduce allocates the reduce-scatter input (the unsharded gradients) and then its output (the
  /// sharded gradients that become param.grad) through the same helper; the input's call is the one earlier in
  /// the function, so the lowest line of foreach_reduce seen in the snapshot is the input's. -1: none seen.
  int64_t reduce_scatter_input_line = -1;
};

/// Scans a snapshot's allocation events (device_traces lists) for what `classify_frames` needs.
SnapshotFrameContext snapshot_frame_context(const PickleValue& snapshot);

/// The category of an allocation from its frames, innermost first as PyTorch records them: fsdpsim's own category
/// frame (a snapshot fsdpsim wrote), else the innermost framework function that says what the memory is for.
/// Allocations made by the autograd engine carry no Python frame: with C++ frames, a matmul's weight gradient
/// (mm_mat2_backward) is `weight_grad`; every other autograd allocation, and one with no frame at all, is
/// `workspace`. "unclassified" when nothing matches.
std::string classify_frames(const PickleValue& frames, const SnapshotFrameContext& context = {});

/// A group of categories that a snapshot's frames can tell apart from the others (weight shards, master weights
/// and gradient shards share Megatron-FSDP's buffers; autograd's weight gradients look like its other temporaries
/// without C++ frames), and the categories it holds.
struct ComparisonGroup {
  std::string name;
  std::vector<std::string> categories;
};

/// The groups, in the order reports list them; every BufferCategory and "unclassified" is in exactly one.
const std::vector<ComparisonGroup>& comparison_groups();

/// The bytes of `group`'s categories in `by_category` (a prediction's memory breakdown or a snapshot's categories).
int64_t group_bytes(const ComparisonGroup& group, const std::map<std::string, int64_t>& by_category);

}  // namespace fsdpsim
