#pragma once
/// The simulator's pending events. Each stream runs one activity at a time, and every reschedule of that activity
/// (a new rate, the end of a latency) replaces its pending event, so at most one event per stream is live: the queue
/// is one slot per stream, and the next event is the earliest slot, ties broken by the order the slots were set.
/// That order is what a heap keyed on (time, insertion sequence) with stale entries skipped gives, so the same
/// inputs give the same outputs. The earliest slot is kept by a tournament tree over the slots (each inner node
/// holds the earlier of its two children): setting or popping a slot replays the matches on its path to the root,
/// log2(streams) of them, where a scan of every slot cost a pipeline's 60 streams 60 comparisons per event.

#include <cstdint>
#include <limits>
#include <vector>

#include "common/units.h"
#include "schedule/ids.h"

namespace fsdpsim {

/// One scheduled event: which stream's activity, and which version of it (the engine's check that it is current).
struct Event {
  TimeNs time_ns = 0;
  StreamId stream{0};
  uint32_t version = 0;
};

/// The earliest of at most one pending event per stream. Setting and popping are inlined into the event loop, where
/// they run several times per event: GCC's inliner, which stops at a growth limit per translation unit, otherwise
/// leaves them out of line or not depending on what else the unit holds.
class EventQueue {
 public:
  explicit EventQueue(size_t streams = 0) : slots_(streams) {
    while (leaves_ < streams) leaves_ *= 2;
    tree_.assign(2 * leaves_, StreamId::none());
  }

  /// Sets `stream`'s pending event, replacing the one it had.
  [[gnu::always_inline]] void set(StreamId stream, TimeNs time_ns, uint32_t version) {
    Slot& s = slots_[stream];
    if (!s.live) ++pending_;
    s = Slot{time_ns, next_sequence_++, version, true};
    replay_path(stream);
  }
  [[nodiscard]] bool empty() const { return pending_ == 0; }
  /// The earliest pending time (the time pop() would return); the queue must not be empty.
  [[nodiscard]] TimeNs next_time() const { return slots_[tree_[1]].time_ns; }

  /// One stream's slot, as a replay of a repeating stretch of the run compares it: whether an event is pending,
  /// when, its version, and its place among the pending ones (`sequence`: only the order of these matters).
  struct SlotView {
    bool live = false;
    TimeNs time_ns = 0;
    uint32_t version = 0;
    uint64_t sequence = 0;
  };
  [[nodiscard]] SlotView slot(StreamId stream) const {
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
  [[gnu::always_inline]] Event pop() {
    const StreamId best = tree_[1];
    Slot& s = slots_[best];
    s.live = false;
    --pending_;
    replay_path(best);
    return Event{s.time_ns, best, s.version};
  }

 private:
  struct Slot {
    TimeNs time_ns = std::numeric_limits<TimeNs>::max();
    uint64_t sequence = 0;
    uint32_t version = 0;
    bool live = false;
  };
  // Slot a runs before slot b (none: no event).
  [[nodiscard, gnu::always_inline]] bool earlier(StreamId a, StreamId b) const {
    if (!a.valid()) return false;
    if (!b.valid()) return true;
    const Slot &x = slots_[a], &y = slots_[b];
    return x.time_ns < y.time_ns || (x.time_ns == y.time_ns && x.sequence < y.sequence);
  }
  // Re-decides the matches on the path from `stream`'s leaf to the root.
  [[gnu::always_inline]] void replay_path(StreamId stream) {
    size_t node = leaves_ + stream.index();
    tree_[node] = slots_[stream].live ? stream : StreamId::none();
    for (node /= 2; node >= 1; node /= 2) {
      const StreamId l = tree_[2 * node], r = tree_[2 * node + 1];
      // Chosen by number: a conditional between the two StreamId variables made GCC keep both in memory.
      tree_[node] = StreamId(earlier(r, l) ? r.value() : l.value());
    }
  }

  IdVector<StreamId, Slot> slots_;
  size_t leaves_ = 1;
  std::vector<StreamId> tree_;  // tree_[1] is the root; leaf of slot i at leaves_ + i (inner nodes: the winner)
  size_t pending_ = 0;
  uint64_t next_sequence_ = 0;
};

}  // namespace fsdpsim
