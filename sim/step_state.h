#pragma once
/// The engine's state within a step, as plain data that its parts share (docs/architecture.md §5): what each stream
/// runs, where each stream is in its op list, how many dependencies each op still waits for, which send or receive is
/// posted, the pending events and the op timings being written. The event loop (sim/event_loop.h) changes it as ops
/// start and end, the rate assignment (sim/rate_assignment.h) gives running activities their rates, and the replay of
/// repeated micro-batches (sim/micro_batch_replay.h) compares and moves it.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/units.h"
#include "run/run_record.h"
#include "schedule/ir.h"
#include "sim/event_queue.h"

namespace fsdpsim {

/// The op a stream is running. Compute work is measured in nanoseconds at full speed (rate = fraction of full speed);
/// transfers in bytes (rate in bytes per nanosecond).
struct Activity {
  OpId op = OpId::none();
  bool active = false;
  bool transfer = false;
  bool in_latency = false;
  bool rendezvous = false;  ///< a recv waiting for its send's bytes: it ends when the send does
  bool host_wait = false;   ///< the op heads its stream, deps done, but the host has not issued it yet
  double remaining = 0;
  double rate = 0;
  TimeNs since = 0;
  uint32_t version = 0;  ///< bumped at every change, so that a stale event is skipped
};

/// The per-step state every part of the engine reads.
struct StepState {
  IdVector<StreamId, Activity> acts;            ///< per stream: what it runs
  IdVector<StreamId, size_t> head;              ///< per stream: the position of its next op in FlatOps::streams
  IdVector<OpId, int32_t> pending;              ///< per op: dependencies not yet finished
  IdVector<OpId, char> posted;                  ///< per op: a send or recv waiting for its peer
  EventQueue queue;                             ///< per stream: its activity's next event
  IdVector<OpId, OpTiming>* timings = nullptr;  ///< per op: the step's record being written
  int32_t step = 0;                             ///< the step being run
  TimeNs step_start_ns = 0;                     ///< when it started
  uint64_t events = 0;                          ///< events processed in the run so far (replayed windows included)
};

/// Which pipeline stage each stream belongs to and which stream is each stage's compute stream: fixed for a run.
struct StreamStages {
  IdVector<StreamId, size_t> stage_of_stream;     ///< per stream
  std::vector<StreamId> compute_stream_of_stage;  ///< per stage (stream 0 where a stage names none)

  /// The schedule's (one stage without pipeline parallelism).
  explicit StreamStages(const Schedule& s) {
    // A stream's stage is a valid stage number (validate() checks it): kept as the index it is used as.
    for (const Stream& st : s.streams) stage_of_stream.push_back(static_cast<size_t>(st.stage));
    for (int32_t stage = 0; stage < std::max(1, s.info.pipeline_stages); ++stage) {
      const StreamId compute = s.compute_stream(stage);
      compute_stream_of_stage.push_back(compute.valid() ? compute : StreamId(0));
    }
  }
  /// How many stages (GPUs) the run simulates.
  [[nodiscard]] size_t stages() const { return compute_stream_of_stage.size(); }
  /// The stage of `stream`.
  [[nodiscard]] size_t stage_of(StreamId stream) const { return stage_of_stream[stream]; }
};

}  // namespace fsdpsim
