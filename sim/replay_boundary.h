#pragma once
/// The engine's whole state at a boundary between micro-batch windows, and whether one boundary's state is another's
/// moved by one micro-batch (docs/architecture.md §5.1a; sim/micro_batch_replay.h replays the windows between). The
/// state is what decides everything after it: what each stream runs, at which rate with how much left and since when,
/// which events are pending when and in which order, each stream's next op with its unfinished dependencies, the
/// rates (sim/rate_assignment.h) and each GPU's allocator block for block with the buffer in each block.

#include <cstdint>
#include <vector>

#include "memory/memory_tracker.h"
#include "sim/event_queue.h"
#include "sim/flat_ops.h"
#include "sim/micro_batch_translation.h"
#include "sim/rate_assignment.h"
#include "sim/stage_memories.h"
#include "sim/step_state.h"

namespace fsdpsim {

/// One stream at a boundary.
struct StreamState {
  Activity act;               ///< what it runs
  OpId head = OpId::none();   ///< the op heading the stream; none once the stream is done
  char posted = 0;            ///< the head is a send or recv waiting for its peer
  int32_t pending = 0;        ///< the head's dependencies not yet finished
  EventQueue::SlotView slot;  ///< its pending event
};

/// The state at a boundary: the first instant with no event left after a micro-batch's first op started.
struct Boundary {
  int32_t micro_batch = -1;  ///< the micro-batch whose first op started
  TimeNs time_ns = 0;
  uint64_t events = 0;                      ///< events processed so far
  IdVector<StreamId, StreamState> streams;  ///< per stream
  RateSnapshot rates;                       ///< link rates and compute speeds
  std::vector<MemoryState> memories;        ///< per pipeline stage
  size_t memory_events = 0;  ///< memory events recorded so far in the step (SimOptions::record_memory_order)
};

/// The state now, at the boundary of `micro_batch`.
Boundary capture_boundary(int32_t micro_batch, TimeNs now, const StepState& state, const FlatOps& flat,
                          const RateAssignment& rates, const StageMemories& memories);

/// The state at `cur` is the state at `prev` moved by one micro-batch and (cur − prev) nanoseconds: each running
/// activity, pending event, stream head, rate and allocator block moved (a stream headed by the same op at both, or
/// a buffer in the same block under the same name, stays put).
bool boundary_states_repeat(const Boundary& prev, const Boundary& cur, const MicroBatchTranslation& translation);

/// How many of `op`'s dependencies are not finished when each stream's head is at `heads` (an op is finished once
/// its stream's head has passed it). Inline: a replay recounts every op still to run.
inline int32_t unfinished_deps(const FlatOps& flat, OpId op, const IdVector<StreamId, size_t>& heads) {
  int32_t unfinished = 0;
  const FlatOp& r = flat.ops[op];
  for (int32_t i = r.deps_begin; i < r.deps_end; ++i) {
    const FlatOp& d = flat.ops[flat.op_at(i)];
    unfinished += static_cast<size_t>(d.position) >= heads[d.stream] ? 1 : 0;
  }
  return unfinished;
}

}  // namespace fsdpsim
