#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace fsdpsim {
namespace {

// The queue's contract, written as the scan it replaces: at most one pending event per stream, the next one is the
// earliest, and among equal times the one set first.
class ScanQueue {
 public:
  explicit ScanQueue(size_t streams) : slots_(streams) {}
  void set(int32_t stream, TimeNs time_ns, uint32_t version) {
    slots_[static_cast<size_t>(stream)] = Slot{time_ns, sequence_++, version, true};
  }
  [[nodiscard]] bool empty() const {
    for (const Slot& s : slots_) {
      if (s.live) return false;
    }
    return true;
  }
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
    slots_[best].live = false;
    return Event{slots_[best].time_ns, StreamId(static_cast<int32_t>(best)), slots_[best].version};
  }

 private:
  struct Slot {
    TimeNs time_ns = 0;
    uint64_t sequence = 0;
    uint32_t version = 0;
    bool live = false;
  };
  std::vector<Slot> slots_;
  uint64_t sequence_ = 0;
};

TEST(EventQueue, PopsTheEarliestAndAmongEqualTimesTheOneSetFirst) {
  EventQueue q(5);
  q.set(StreamId(3), 100, 1);
  q.set(StreamId(1), 50, 1);
  q.set(StreamId(4), 50, 2);
  q.set(StreamId(3), 50, 7);  // replaces stream 3's event, and was set last among those at 50
  EXPECT_EQ(q.next_time(), 50);
  const Event a = q.pop(), b = q.pop(), c = q.pop();
  EXPECT_EQ(a.stream, StreamId(1));
  EXPECT_EQ(b.stream, StreamId(4));
  EXPECT_EQ(c.stream, StreamId(3));
  EXPECT_EQ(c.version, 7u);
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, ShiftMovesEveryPendingEventAndKeepsTheirOrder) {
  EventQueue q(3);
  q.set(StreamId(2), 10, 0);
  q.set(StreamId(0), 10, 0);
  q.shift(1000);
  EXPECT_EQ(q.next_time(), 1010);
  EXPECT_EQ(q.pop().stream, StreamId(2));
  EXPECT_EQ(q.pop().stream, StreamId(0));
}

// Random sets and pops on queues of 1 to 70 streams (a pipeline's schedule has dozens) give the scan's events in
// the scan's order, times drawn from a few values so that ties are common.
TEST(EventQueue, MatchesAScanOfEverySlot) {
  std::mt19937_64 rng(20261127);
  for (const size_t streams : {size_t{1}, size_t{2}, size_t{3}, size_t{8}, size_t{13}, size_t{64}, size_t{70}}) {
    EventQueue q(streams);
    ScanQueue ref(streams);
    std::uniform_int_distribution<int32_t> stream(0, static_cast<int32_t>(streams) - 1);
    std::uniform_int_distribution<TimeNs> time(0, 7);
    for (int i = 0; i < 5000; ++i) {
      if (rng() % 3 != 0 || q.empty()) {
        const int32_t st = stream(rng);
        const TimeNs t = time(rng);
        const auto v = static_cast<uint32_t>(i);
        q.set(StreamId(st), t, v);
        ref.set(st, t, v);
      } else {
        ASSERT_FALSE(ref.empty());
        const Event want = ref.pop();
        EXPECT_EQ(q.next_time(), want.time_ns);
        const Event got = q.pop();
        ASSERT_EQ(got.stream, want.stream) << streams << " streams, step " << i;
        EXPECT_EQ(got.time_ns, want.time_ns);
        EXPECT_EQ(got.version, want.version);
      }
      ASSERT_EQ(q.empty(), ref.empty());
    }
  }
}

}  // namespace
}  // namespace fsdpsim
