#include "sim/replay_boundary.h"

#include <algorithm>
#include <utility>

#include "sim/id_range.h"

namespace fsdpsim {
namespace {

// Each stream's activity, head and pending event at `cur` are those at `prev` moved.
bool streams_repeat(const Boundary& prev, const Boundary& cur, const MicroBatchTranslation& translation) {
  const TimeNs tp = prev.time_ns, tc = cur.time_ns;
  for (const StreamId st : ids_of(prev.streams)) {
    const StreamState &p = prev.streams[st], &c = cur.streams[st];
    const Activity &a = p.act, &b = c.act;
    if (a.active != b.active) return false;
    if (a.host_wait || b.host_wait) return false;  // the host, not the GPU, paces this window
    if (a.active && (a.transfer != b.transfer || a.in_latency != b.in_latency || a.rendezvous != b.rendezvous ||
                     a.remaining != b.remaining || a.rate != b.rate || a.since - tp != b.since - tc ||
                     translation.op_after(a.op, 1) != b.op)) {
      return false;
    }
    if (p.head.valid() != c.head.valid() || p.posted != c.posted) return false;
    if (p.head.valid() && p.head == c.head) {
      if (p.pending == 0 || c.pending == 0) return false;  // it stays put only while it waits
    } else if (p.head.valid() && (translation.op_after(p.head, 1) != c.head || p.pending != c.pending)) {
      return false;
    }
    if (p.slot.live != c.slot.live) return false;
    if (p.slot.live && (p.slot.time_ns - tp != c.slot.time_ns - tc ||
                        (p.slot.version == a.version) != (c.slot.version == b.version))) {
      return false;
    }
  }
  return true;
}

// The streams with a pending event, in the order their events were set: events pending at the same time pop in it.
std::vector<StreamId> pending_order(const Boundary& b) {
  std::vector<std::pair<uint64_t, StreamId>> live;
  for (const StreamId st : ids_of(b.streams)) {
    if (b.streams[st].slot.live) live.emplace_back(b.streams[st].slot.sequence, st);
  }
  std::sort(live.begin(), live.end());
  std::vector<StreamId> streams;
  for (const auto& [sequence, st] : live) streams.push_back(st);
  return streams;
}

// Each GPU's allocator at `cur` is the one at `prev`, block for block, with each block's buffer moved.
bool memories_repeat(const Boundary& prev, const Boundary& cur, const MicroBatchTranslation& translation) {
  for (size_t stage = 0; stage < prev.memories.size(); ++stage) {
    const MemoryState &p = prev.memories[stage], &c = cur.memories[stage];
    if (p.oom || c.oom || p.layout != c.layout || p.live != c.live) return false;
    const AllocatorStats &ps = p.stats, &cs = c.stats;
    if (ps.allocated_bytes != cs.allocated_bytes || ps.reserved_bytes != cs.reserved_bytes ||
        ps.cuda_malloc_calls != cs.cuda_malloc_calls || ps.cuda_free_calls != cs.cuda_free_calls ||
        ps.segments != cs.segments || ps.inactive_split_bytes != cs.inactive_split_bytes) {
      return false;
    }
    for (size_t k = 0; k < p.block_buffers.size(); ++k) {
      const BufferId pb = p.block_buffers[k], cb = c.block_buffers[k];
      if (pb.valid() != cb.valid()) return false;
      if (pb.valid() && pb != cb && translation.buffer_after(pb, 1) != cb) return false;
    }
  }
  return true;
}

}  // namespace

Boundary capture_boundary(int32_t micro_batch, TimeNs now, const StepState& state, const FlatOps& flat,
                          const RateAssignment& rates, const StageMemories& memories) {
  Boundary b;
  b.micro_batch = micro_batch;
  b.time_ns = now;
  b.events = state.events;
  b.streams.resize(state.acts.size());
  for (const StreamId st : ids_of(state.acts)) {
    StreamState& x = b.streams[st];
    x.act = state.acts[st];
    x.head = state.head[st] < flat.streams[st].size() ? flat.streams[st][state.head[st]] : OpId::none();
    if (x.head.valid()) {
      x.posted = state.posted[x.head];
      x.pending = state.pending[x.head];
    }
    x.slot = state.queue.slot(st);
  }
  b.rates = rates.snapshot();
  memories.state(b.memories);
  b.memory_events = memories.memory_events();
  return b;
}

bool boundary_states_repeat(const Boundary& prev, const Boundary& cur, const MicroBatchTranslation& translation) {
  // (A boundary follows a re-rating, so no change is waiting to be rated at either end.)
  return streams_repeat(prev, cur, translation) && pending_order(prev) == pending_order(cur) &&
         prev.rates == cur.rates && memories_repeat(prev, cur, translation);
}

}  // namespace fsdpsim
