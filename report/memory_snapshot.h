#pragma once
/// CUDA memory snapshots in PyTorch's format (`torch.cuda.memory._dump_snapshot`, drawn by `_memory_viz.py` and
/// pytorch.org/memory_viz): a pickled dict with `segments` (the allocator's segments and their blocks at the end)
/// and `device_traces` (per device, the allocation history: alloc, free_requested, free_completed, segment_alloc,
/// segment_free, segment_map, segment_unmap, oom, snapshot; each with addr, size, stream, time_us and frames).
///
/// Out: the predicted steady step of the fullest rank as such a snapshot, so PyTorch's viewer draws the prediction
/// beside a real run. In: a snapshot from a real run, reduced to what fsdpsim predicts — peak allocated and reserved,
/// when the allocated peak was reached, and the live bytes by buffer category at that moment, classified from each
/// allocation's stack frames.

#include <cstdint>
#include <map>
#include <string>

#include "common/pickle.h"
#include "report/report.h"
#include "report/snapshot_categories.h"
#include "run/run_record.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// The predicted steady step of `run` (of its memory stage under pipeline parallelism) as a snapshot: every buffer
/// live at the step's start is allocated at its first microsecond, then each op's allocations at its start and its
/// frees at its end; block sizes are the allocator-rounded request sizes (what torch.cuda.memory_allocated counts).
/// Each event's frames name the op and the buffer, and a frame `fsdpsim.category=<category>` carries the category.
/// Segments are not modelled per event: one segment_alloc of the predicted reserved peak opens the trace (its frame
/// says so), so the viewer's reserved line is the prediction's peak.
PickleValue predicted_memory_snapshot(const Schedule& schedule, const RunRecord& run);

/// What a snapshot says about one device's memory.
struct SnapshotMemory {
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  double peak_allocated_time_us = 0;  ///< from the trace's first event (0 when the trace has no times)
  /// Live bytes at the allocated peak by category (BufferCategory names; "unclassified" for frames fsdpsim does
  /// not recognise).
  std::map<std::string, int64_t> peak_categories;
  int64_t trace_events = 0;
  int64_t allocated_before_trace_bytes = 0;  ///< blocks the trace frees or holds at its end but never allocates
};

/// Reads device `device` of a snapshot. Throws ConfigError (naming `source`) when the data is not a snapshot.
SnapshotMemory read_memory_snapshot(const PickleValue& snapshot, const std::string& source, int32_t device = 0);

/// The prediction against a snapshot: peak allocated, peak reserved, and bytes by category at the allocated peak,
/// each with its error ((predicted - measured) / measured).
std::string snapshot_comparison_text(const Report& predicted, const SnapshotMemory& measured);

}  // namespace fsdpsim
