// A PyTorch CUDA memory snapshot read down to one device's peaks (the state before its trace, then the trace
// replayed from it), and set against a prediction.
#include "report/memory_snapshot.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "common/units.h"
#include "memory/caching_allocator.h"
#include "report/snapshot_categories.h"

namespace fsdpsim {
namespace {

[[noreturn]] void not_a_snapshot(const std::string& source, const std::string& key, const std::string& problem) {
  throw ConfigError(SourceLocation{source, 0, 0}, key, problem,
                    "write the snapshot with torch.cuda.memory._record_memory_history() then "
                    "torch.cuda.memory._dump_snapshot(path)");
}

int64_t int_field(const PickleValue& dict, const std::string& key, const std::string& source, const char* where) {
  const PickleValue* v = dict.find(key);
  if (v == nullptr || v->integer() == nullptr)
    not_a_snapshot(source, key, std::string(where) + " has no integer '" + key + "'");
  return *v->integer();
}

// A byte count: at least 0 and below the caching allocator's request limit (no device holds 2^60 bytes).
int64_t size_field(const PickleValue& dict, const std::string& key, const std::string& source, const char* where) {
  const int64_t v = int_field(dict, key, source, where);
  if (v < 0 || v >= int64_t{1} << 60) {
    not_a_snapshot(source, key,
                   std::string(where) + " has '" + key + "' = " + std::to_string(v) + ", which is no size in bytes");
  }
  return v;
}

// Sums of the file's byte counts: a sum past int64 is not a snapshot's either.
int64_t add_bytes(int64_t total, int64_t delta, const std::string& source) {
  int64_t out = 0;
  if (__builtin_add_overflow(total, delta, &out)) {
    not_a_snapshot(source, "size", "its sizes add up past 2^63 bytes, which no device holds");
  }
  return out;
}

std::string text_field(const PickleValue& dict, const std::string& key) {
  const PickleValue* v = dict.find(key);
  return v != nullptr && v->string() != nullptr ? *v->string() : std::string();
}

struct Live {
  int64_t size = 0;
  std::string category;
};

// The category of a block or trace event, from its stack frames.
std::string category_of(const PickleValue& record, const SnapshotFrameContext& context) {
  const PickleValue* frames = record.find("frames");
  return classify_frames(frames != nullptr ? *frames : PickleValue{}, context);
}

// The state when the snapshot was taken: the reserved bytes and the blocks still allocated, by address.
struct EndState {
  int64_t reserved_bytes = 0;
  std::unordered_map<int64_t, Live> active;
};

EndState end_state(const PickleList& segments, const std::string& source, int32_t device,
                   const SnapshotFrameContext& context) {
  EndState end;
  for (const PickleValue& seg : segments) {
    if (const PickleValue* d = seg.find("device"); d != nullptr && d->integer() != nullptr && *d->integer() != device) {
      continue;
    }
    end.reserved_bytes = add_bytes(end.reserved_bytes, size_field(seg, "total_size", source, "a segment"), source);
    const PickleValue* blocks = seg.find("blocks");
    if (blocks == nullptr || blocks->list() == nullptr) continue;
    for (const PickleValue& b : *blocks->list()) {
      if (text_field(b, "state") != "active_allocated") continue;
      end.active[int_field(b, "address", source, "a block")] =
          Live{size_field(b, "size", source, "a block"), category_of(b, context)};
    }
  }
  return end;
}

// The allocation history of `device`; empty when the snapshot has none for it.
const PickleList& device_trace(const PickleValue& snapshot, int32_t device) {
  static const PickleList empty;
  if (const PickleValue* traces = snapshot.find("device_traces"); traces != nullptr && traces->list() != nullptr) {
    const PickleList& per_device = *traces->list();
    if (device >= 0 && static_cast<size_t>(device) < per_device.size() &&
        per_device[static_cast<size_t>(device)].list()) {
      return *per_device[static_cast<size_t>(device)].list();
    }
  }
  return empty;
}

// One trace event decoded once (its fields checked, its frames classified) for the two passes over the trace.
struct TraceEvent {
  enum class Kind : uint8_t { alloc, free_request, free, segment, other } kind = Kind::other;
  int64_t addr = 0;
  int64_t size = 0;  // a segment event: the bytes it maps (+) or unmaps (−)
  std::optional<double> time_us;
  std::string category;              // alloc: from its frames
  const PickleValue* raw = nullptr;  // free: read again only when the block predates the trace
};

TraceEvent decode_event(const PickleValue& e, const std::string& source, const SnapshotFrameContext& context) {
  TraceEvent ev;
  ev.raw = &e;
  const std::string action = text_field(e, "action");
  if (const PickleValue* t = e.find("time_us"); t != nullptr) {
    ev.time_us = t->integer() != nullptr ? static_cast<double>(*t->integer()) : (t->real() != nullptr ? *t->real() : 0);
  }
  if (action == "alloc") {
    ev.kind = TraceEvent::Kind::alloc;
    ev.addr = int_field(e, "addr", source, "an alloc event");
    // The trace records the requested size; the allocator's counters (torch.cuda.max_memory_allocated) count
    // the block the request is rounded to.
    ev.size = CachingAllocator::round_size(size_field(e, "size", source, "an alloc event"));
    ev.category = category_of(e, context);
  } else if (action == "free_requested" || action == "free_completed") {
    // The counters drop when the free is requested; free_completed follows once the block's streams are done
    // and then changes nothing (a trace with only free_completed frees there).
    ev.kind = action == "free_requested" ? TraceEvent::Kind::free_request : TraceEvent::Kind::free;
    ev.addr = int_field(e, "addr", source, "a free event");
  } else if (action == "segment_alloc" || action == "segment_map") {
    ev.kind = TraceEvent::Kind::segment;
    ev.size = size_field(e, "size", source, "a segment event");
  } else if (action == "segment_free" || action == "segment_unmap") {
    ev.kind = TraceEvent::Kind::segment;
    ev.size = -size_field(e, "size", source, "a segment event");
  }
  return ev;
}

// Whether a free event releases its block: a free_completed that completes a free_requested of the same address
// does not (the request did). `requested` holds the addresses requested and not yet completed.
bool releases_block(const TraceEvent& e, std::unordered_set<int64_t>& requested) {
  if (e.kind == TraceEvent::Kind::free && requested.erase(e.addr) != 0) return false;
  if (e.kind == TraceEvent::Kind::free_request) requested.insert(e.addr);
  return true;
}

// What was allocated before the trace (freed without an allocation in it, or held to its end without one), and
// the segment bytes the trace added.
struct BeforeTrace {
  std::unordered_map<int64_t, Live> blocks;
  int64_t segment_delta_bytes = 0;
};

BeforeTrace state_before_trace(const std::vector<TraceEvent>& events, const EndState& end, const std::string& source,
                               const SnapshotFrameContext& context) {
  BeforeTrace before;
  std::unordered_map<int64_t, Live> live;
  std::unordered_set<int64_t> requested;
  for (const TraceEvent& e : events) {
    switch (e.kind) {
      case TraceEvent::Kind::alloc:
        live[e.addr] = Live{e.size, e.category};
        break;
      case TraceEvent::Kind::free_request:
      case TraceEvent::Kind::free:
        if (releases_block(e, requested) && live.erase(e.addr) == 0) {
          before.blocks[e.addr] = Live{CachingAllocator::round_size(size_field(*e.raw, "size", source, "a free event")),
                                       category_of(*e.raw, context)};
        }
        break;
      case TraceEvent::Kind::segment:
        before.segment_delta_bytes = add_bytes(before.segment_delta_bytes, e.size, source);
        break;
      case TraceEvent::Kind::other:
        break;
    }
  }
  for (const auto& [addr, block] : end.active) {
    if (live.count(addr) == 0) before.blocks.emplace(addr, block);
  }
  return before;
}

// Replays the trace from the state before it, keeping the allocated peak (its time and categories) and the
// reserved peak.
void replay_trace(const std::vector<TraceEvent>& events, const BeforeTrace& before, int64_t end_reserved_bytes,
                  const std::string& source, SnapshotMemory& m) {
  std::unordered_map<int64_t, Live> live;
  std::map<std::string, int64_t> categories;
  int64_t allocated = 0;
  for (const auto& [addr, block] : before.blocks) {
    live.emplace(addr, block);
    allocated = add_bytes(allocated, block.size, source);
    categories[block.category] = add_bytes(categories[block.category], block.size, source);
    m.allocated_before_trace_bytes = add_bytes(m.allocated_before_trace_bytes, block.size, source);
  }
  int64_t before_trace = 0;  // end_reserved − segment_delta, checked (the delta is a sum the file decides)
  if (__builtin_sub_overflow(end_reserved_bytes, before.segment_delta_bytes, &before_trace)) {
    not_a_snapshot(source, "size", "its segment sizes add up past 2^63 bytes, which no device holds");
  }
  int64_t reserved = std::max<int64_t>(0, before_trace);
  m.peak_allocated_bytes = allocated;
  m.peak_categories = categories;
  m.peak_reserved_bytes = reserved;
  std::unordered_set<int64_t> requested;
  double first_us = -1;
  for (const TraceEvent& e : events) {
    const double time_us = e.time_us.value_or(0);
    if (e.time_us && first_us < 0) first_us = time_us;
    switch (e.kind) {
      case TraceEvent::Kind::alloc:
        live[e.addr] = Live{e.size, e.category};
        allocated = add_bytes(allocated, e.size, source);
        categories[e.category] = add_bytes(categories[e.category], e.size, source);
        if (allocated > m.peak_allocated_bytes) {
          m.peak_allocated_bytes = allocated;
          m.peak_categories = categories;
          m.peak_allocated_time_us = first_us < 0 ? 0 : time_us - first_us;
        }
        break;
      case TraceEvent::Kind::free_request:
      case TraceEvent::Kind::free:
        if (!releases_block(e, requested)) break;
        if (const auto it = live.find(e.addr); it != live.end()) {
          allocated = add_bytes(allocated, -it->second.size, source);
          categories[it->second.category] = add_bytes(categories[it->second.category], -it->second.size, source);
          live.erase(it);
        }
        break;
      case TraceEvent::Kind::segment:
        reserved = add_bytes(reserved, e.size, source);
        m.peak_reserved_bytes = std::max(m.peak_reserved_bytes, reserved);
        break;
      case TraceEvent::Kind::other:
        break;
    }
  }
}

}  // namespace

SnapshotMemory read_memory_snapshot(const PickleValue& snapshot, const std::string& source, int32_t device) {
  if (snapshot.dict() == nullptr) not_a_snapshot(source, "segments", "the pickle is not a dict");
  const PickleValue* segments = snapshot.find("segments");
  if (segments == nullptr || segments->list() == nullptr) {
    not_a_snapshot(source, "segments", "no 'segments' list: this is not a CUDA memory snapshot");
  }
  SnapshotMemory m;
  const SnapshotFrameContext context = snapshot_frame_context(snapshot);
  const EndState end = end_state(*segments->list(), source, device, context);
  const PickleList& trace = device_trace(snapshot, device);
  m.trace_events = static_cast<int64_t>(trace.size());
  std::vector<TraceEvent> events;
  events.reserve(trace.size());
  for (const PickleValue& e : trace) events.push_back(decode_event(e, source, context));
  replay_trace(events, state_before_trace(events, end, source, context), end.reserved_bytes, source, m);
  std::erase_if(m.peak_categories, [](const auto& entry) { return entry.second == 0; });
  return m;
}

std::string snapshot_comparison_text(const Report& predicted, const SnapshotMemory& measured) {
  std::string out =
      "memory: the prediction against the snapshot (" + std::to_string(measured.trace_events) + " allocation events)\n";
  if (measured.trace_events == 0) {
    out +=
        "  the snapshot has no allocation history (start it with torch.cuda.memory._record_memory_history()): its "
        "figures are the state when it was taken, not a peak\n";
  }
  char line[160];
  const auto row = [&](const std::string& what, int64_t p, int64_t m, bool has_p) {
    const std::string error = !has_p || m <= 0 ? std::string("-") : [&] {
      char e[32];
      std::snprintf(e, sizeof e, "%+.1f%%", 100.0 * static_cast<double>(p - m) / static_cast<double>(m));
      return std::string(e);
    }();
    std::snprintf(line, sizeof line, "  %-28s %12s %12s %8s\n", what.c_str(), has_p ? format_bytes(p).c_str() : "-",
                  format_bytes(m).c_str(), error.c_str());
    out += line;
  };
  std::snprintf(line, sizeof line, "  %-28s %12s %12s %8s\n", "", "predicted", "measured", "error");
  out += line;
  row("peak allocated", predicted.peak_allocated_bytes, measured.peak_allocated_bytes, true);
  row("peak reserved", predicted.peak_reserved_bytes, measured.peak_reserved_bytes, true);
  out += "  at the allocated peak (measured " + std::to_string(static_cast<int64_t>(measured.peak_allocated_time_us)) +
         " us into the trace), by category:\n";
  // By group: what frames can tell apart (report/snapshot_categories.h); each row names the categories it sums.
  for (const ComparisonGroup& group : comparison_groups()) {
    const int64_t p = group_bytes(group, predicted.memory_breakdown);
    const int64_t m = group_bytes(group, measured.peak_categories);
    const bool has_p = std::any_of(group.categories.begin(), group.categories.end(),
                                   [&](const std::string& c) { return predicted.memory_breakdown.count(c) != 0; });
    if (p <= 0 && m == 0) continue;  // neither side holds any
    row("  " + group.name, p, m, has_p && group.name != "unclassified");
  }
  out += "  (groups: ";
  for (const ComparisonGroup& group : comparison_groups()) {
    if (group.categories.size() < 2) continue;
    out += group.name + " = " + join(group.categories, " + ") + "; ";
  }
  out.resize(out.size() - 2);
  out += ")\n";
  return out;
}

}  // namespace fsdpsim
