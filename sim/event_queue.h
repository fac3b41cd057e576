#pragma once
/// The simulator's event queue: a binary heap keyed on (time, priority, insertion sequence), so that events at the
/// same time run in a fixed order and the same inputs give the same outputs. Never a list walk.

#include <cstdint>
#include <queue>
#include <vector>

#include "common/units.h"

namespace fsdpsim {

/// One scheduled event; `payload` and `version` are the engine's (which activity, and whether it is stale).
struct Event {
  TimeNs time_ns = 0;
  int32_t priority = 0;  ///< lower runs first at equal times
  uint64_t sequence = 0;
  int32_t payload = 0;
  uint32_t version = 0;
};

/// A deterministic min-heap of events.
class EventQueue {
 public:
  /// Adds an event; ties on (time, priority) keep insertion order.
  void push(TimeNs time_ns, int32_t priority, int32_t payload, uint32_t version) {
    heap_.push(Event{time_ns, priority, next_sequence_++, payload, version});
  }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  [[nodiscard]] size_t size() const { return heap_.size(); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.sequence > b.sequence;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_sequence_ = 0;
};

}  // namespace fsdpsim
