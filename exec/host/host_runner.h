#pragma once
/// The host backend: threads as ranks, one worker thread per IR stream per rank, shared-memory all-gather /
/// reduce-scatter / all-reduce / all-to-all on real data, and small real compute that reads its inputs and writes its
/// outputs. It poisons buffers when they are allocated and released, so an op that runs before its dependencies
/// (or after a buffer's release) reads poison and the run fails naming the op and the buffer. It counts allocated
/// bytes exactly as the simulator does (the same caching-allocator model, fed the IR sizes in the order the rank
/// performs its allocations), so its measured peak can be compared with the predicted one. It runs in CI, where
/// there is no GPU.

#include <cstdint>
#include <string>
#include <vector>

#include "common/units.h"
#include "exec/backend.h"
#include "exec/fault_report.h"
#include "exec/host/host_faults.h"
#include "run/run_record.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// The order in which the simulator performed the memory events of the last step of a predicted run: every op that
/// allocates (its start) or frees (its end), as the engine recorded it (Prediction::memory_order). Throws
/// ScheduleError when the run did not record it (SimOptions::record_memory_order) or when it is not `schedule`'s.
std::vector<MemoryEvent> predicted_memory_order(const Schedule& schedule, const RunRecord& predicted);

/// What makes `order` unusable as HostOptions::memory_order for `schedule` (an event of an op that has no
/// allocations or no frees, an event listed twice or missing, an op id out of range); empty when it is usable.
std::vector<std::string> memory_order_problems(const Schedule& schedule, const std::vector<MemoryEvent>& order);

/// How the host backend runs a schedule.
struct HostOptions {
  int32_t steps = 2;
  int32_t ranks = 0;           ///< threads as ranks; 0 = the schedule's world size (at most 64 without `emulate`)
  bool emulate = false;        ///< run rank 0 alone; collectives produce the right bytes locally (large worlds)
  int64_t bytes_scale = 1024;  ///< each buffer holds ceil(size / bytes_scale) real bytes; accounting uses IR sizes
  /// When not empty, every rank performs the memory events in this order (the predicted one), so the measured peak
  /// is comparable exactly with the prediction; otherwise streams run freely, limited only by the dependencies.
  std::vector<MemoryEvent> memory_order;
  TimeNs collective_delay_ns = 0;  ///< each collective sleeps this long first (makes a missing dependency visible)
  /// A collective's rendezvous gives up after this long, reports the op, its group and which members arrived, and
  /// stops the run; a wait for another op or for a turn in memory_order gives up after twice this long (it is
  /// downstream of some collective, whose report should come first).
  TimeNs timeout_ns = 30'000'000'000;
  /// Capacity of the caching-allocator model that counts the allocated bytes; 0: unlimited (no host-side OOM).
  int64_t allocator_capacity_bytes = 0;
  /// Faults to inject (host_faults.h): a rank that stalls at an op, an allocation that fails. Each fault ends the run
  /// with a report in ExecResult::problems; every rank stops (no hang, no thread left behind).
  std::vector<HostFault> faults;
  /// The simulator's predicted peak for this schedule, asked for only when a fault report needs it (a failed
  /// allocation is set against it); empty: reports say no prediction was available.
  PredictPeakFn predicted_peak;
};

/// Runs `schedule` on the host; rank 0's steps come back in the simulator's shape, with every problem any rank saw.
ExecResult run_host(const Schedule& schedule, const HostOptions& options);

}  // namespace fsdpsim
