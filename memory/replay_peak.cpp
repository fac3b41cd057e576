#include "memory/replay_peak.h"

#include <algorithm>
#include <tuple>

#include "common/error.h"
#include "memory/caching_allocator.h"

namespace fsdpsim {
namespace {

struct Event {
  TimeNs time_ns = 0;
  bool alloc = false;  // releases (false) sort first at equal times
  OpId op;
};

std::vector<Event> events_of(const Schedule& s, const std::vector<TimeNs>& start_ns, const std::vector<TimeNs>& end_ns,
                             int32_t stage) {
  std::vector<Event> events;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (stage >= 0 && s.stage_of(op) != stage) continue;
    if (!op.allocs.empty()) events.push_back(Event{start_ns[i], true, OpId(static_cast<int32_t>(i))});
    if (!op.frees.empty()) events.push_back(Event{end_ns[i], false, OpId(static_cast<int32_t>(i))});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time_ns, a.alloc, a.op) < std::tie(b.time_ns, b.alloc, b.op);
  });
  return events;
}

void add(const Schedule& s, BufferId buffer, int64_t sign, CategoryBytes& live, int64_t& total) {
  const Buffer& b = s.buffers.at(buffer.index());
  // A zero-byte request holds no memory (PyTorch hands out nullptr; memory/caching_allocator.h kZeroByteBlock).
  const int64_t bytes = b.size_bytes == 0 ? 0 : sign * CachingAllocator::round_size(b.size_bytes);
  live[static_cast<size_t>(b.category)] += bytes;
  total += bytes;
}

}  // namespace

ReplayedPeak replay_peak(const Schedule& schedule, const std::vector<TimeNs>& start_ns,
                         const std::vector<TimeNs>& end_ns, int32_t stage) {
  FSDPSIM_CHECK(start_ns.size() == schedule.ops.size() && end_ns.size() == schedule.ops.size(),
                "one start and one end time per op");
  CategoryBytes live{};
  int64_t total = 0;
  for (size_t b = 0; b < schedule.buffers.size(); ++b) {
    const Buffer& buffer = schedule.buffers[b];
    if (buffer.persistent && (stage < 0 || buffer.stage == stage)) add(schedule, buffer.id, 1, live, total);
  }
  ReplayedPeak peak{total, OpId::none(), live};
  for (const Event& e : events_of(schedule, start_ns, end_ns, stage)) {
    const Op& op = schedule.ops[e.op];
    for (const BufferId b : e.alloc ? op.allocs : op.frees) add(schedule, b, e.alloc ? 1 : -1, live, total);
    if (e.alloc && total > peak.bytes) peak = ReplayedPeak{total, e.op, live};
  }
  return peak;
}

}  // namespace fsdpsim
