#pragma once
/// The simulator's pending events. Each stream runs one activity at a time, and every reschedule of that activity
/// (a new rate, the end of a latency) replaces its pending event, so at most one event per stream is live: the queue
/// is one slot per stream, and the next event is the earliest slot, ties broken by the order the slots were set.
/// That order is what a heap keyed on (time, insertion sequence) with stale entries skipped gives, so the same
/// inputs give the same outputs, at a scan of a handful of slots instead of heap operations on stale entries.

#include <cstdint>
#include <limits>
#include <vector>

#include "common/units.h"

namespace fsdpsim {

/// One scheduled event: which stream's activity, and which version of it (the engine's check that it is current).
struct Event {
  TimeNs time_ns = 0;
  int32_t stream = 0;
  uint32_t version = 0;
};

/// The earliest of at most one pending event per stream.
class EventQueue {
 public:
  explicit EventQueue(size_t streams = 0) : slots_(streams) {}

  /// Sets `stream`'s pending event, replacing the one it had.
  void set(int32_t stream, TimeNs time_ns, uint32_t version) {
    Slot& s = slots_[static_cast<size_t>(stream)];
    if (!s.live) ++pending_;
    s = Slot{time_ns, next_sequence_++, version, true};
  }
  [[nodiscard]] bool empty() const { return pending_ == 0; }
  /// The earliest pending time (the time pop() would return); the queue must not be empty.
  [[nodiscard]] TimeNs next_time() const {
    TimeNs earliest = std::numeric_limits<TimeNs>::max();
    for (const Slot& s : slots_) {
      if (s.live && s.time_ns < earliest) earliest = s.time_ns;
    }
    return earliest;
  }

  /// One stream's slot, as a replay of a repeating stretch of the run compares it: whether an event is pending,
  /// when, its version, and its place among the pending ones (`sequence`: only the order of these matters).
  struct SlotView {
    bool live = false;
    TimeNs time_ns = 0;
    uint32_t version = 0;
    uint64_t sequence = 0;
  };
  [[nodiscard]] SlotView slot(size_t stream) const {
    const Slot& s = slots_[stream];
    return SlotView{s.live, s.time_ns, s.version, s.sequence};
  }
  /// Moves every pending event `shift_ns` later, keeping their order.
  void shift(TimeNs shift_ns) {
    for (Slot& s : slots_) {
      if (s.live) s.time_ns += shift_ns;
    }
  }
  /// Removes and returns the earliest pending event (the earliest set first among equal times).
  Event pop() {
    size_t best = slots_.size();
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (!s.live) continue;
      if (best == slots_.size() || s.time_ns < slots_[best].time_ns ||
          (s.time_ns == slots_[best].time_ns && s.sequence < slots_[best].sequence)) {
        best = i;
      }
    }
    Slot& s = slots_[best];
    s.live = false;
    --pending_;
    return Event{s.time_ns, static_cast<int32_t>(best), s.version};
  }

 private:
  struct Slot {
    TimeNs time_ns = std::numeric_limits<TimeNs>::max();
    uint64_t sequence = 0;
    uint32_t version = 0;
    bool live = false;
  };
  std::vector<Slot> slots_;
  size_t pending_ = 0;
  uint64_t next_sequence_ = 0;
};

}  // namespace fsdpsim
