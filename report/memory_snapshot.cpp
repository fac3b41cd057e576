#include "report/memory_snapshot.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
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

constexpr const char* kCategoryFrame = "fsdpsim.category=";
constexpr int64_t kBaseAddress = int64_t{0x7f0000000000};

PickleValue frame(const std::string& name) {
  return pickle_dict({{pickle_string("filename"), pickle_string("fsdpsim")},
                      {pickle_string("line"), pickle_int(0)},
                      {pickle_string("name"), pickle_string(name)}});
}

PickleValue frames_of(const Schedule& s, BufferId b, const std::string& op) {
  return pickle_list({frame(kCategoryFrame + std::string(to_string(s.buffers[b].category))),
                      frame("buffer " + s.buffers[b].name), frame(op)});
}

PickleValue trace_event(const std::string& action, int64_t addr, int64_t size, int64_t time_us, PickleValue frames) {
  return pickle_dict({{pickle_string("action"), pickle_string(action)},
                      {pickle_string("addr"), pickle_int(addr)},
                      {pickle_string("size"), pickle_int(size)},
                      {pickle_string("stream"), pickle_int(0)},
                      {pickle_string("time_us"), pickle_int(time_us)},
                      {pickle_string("frames"), std::move(frames)}});
}

// One allocation or free of the steady step, in the order the engine performs them: at one time, the frees of ops
// that end first, then starts (an op that takes no time frees right after it allocates), by op id.
struct Event {
  TimeNs time_ns = 0;
  int32_t group = 0;
  int32_t op = 0;
  bool free = false;
  BufferId buffer;
  auto key() const { return std::tie(time_ns, group, op, free); }
};

// ---------------------------------------------------------------------------------------------------------------
// Reading

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

}  // namespace

PickleValue predicted_memory_snapshot(const Schedule& schedule, const RunRecord& run) {
  FSDPSIM_CHECK(!run.steps.empty(), "a run with no steps has no memory snapshot");
  const StepRun& step = run.steps.back();
  const int32_t stage = run.memory_stage;
  const auto on_stage = [&](BufferId b) { return schedule.buffers[b].stage == stage; };
  // PyTorch hands out no block for an empty tensor (MemoryTracker::allocate): empty buffers leave no event.
  const auto empty = [&](BufferId b) { return schedule.buffers[b].size_bytes == 0; };

  std::vector<Event> events;
  for (const Op& op : schedule.ops) {
    const OpTiming& t = step.ops[op.id];
    if (t.start_ns < 0 || schedule.stage_of(op) != stage) continue;
    for (const BufferId b : op.allocs) {
      if (!empty(b)) events.push_back({t.start_ns, 1, op.id.value(), false, b});
    }
    for (const BufferId b : op.frees) {
      if (!empty(b)) events.push_back({t.end_ns, t.end_ns == t.start_ns ? 1 : 0, op.id.value(), true, b});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.key() < b.key(); });

  // Live at the step's start: the persistent buffers and those the step frees before it allocates them.
  std::vector<char> live(schedule.buffers.size(), 0), seen(schedule.buffers.size(), 0);
  std::vector<BufferId> initial;
  for (const Buffer& b : schedule.buffers) {
    if (b.persistent && on_stage(b.id) && !empty(b.id)) initial.push_back(b.id);
  }
  for (const Event& e : events) {
    if (seen[e.buffer.index()] || schedule.buffers[e.buffer].persistent) continue;
    seen[e.buffer.index()] = 1;
    if (e.free) initial.push_back(e.buffer);
  }

  const auto us = [&](TimeNs t) { return (t - step.start_ns) / 1000; };
  std::vector<int64_t> address(schedule.buffers.size(), 0);
  int64_t next_address = kBaseAddress;
  PickleList trace;
  const int64_t reserved = step.peak_reserved.bytes;
  trace.push_back(trace_event("segment_alloc", kBaseAddress, reserved, 0,
                              pickle_list({frame("fsdpsim: the predicted reserved peak (segments are not modelled "
                                                 "per event)")})));
  const auto alloc = [&](BufferId b, TimeNs t, const std::string& by) {
    const int64_t size = CachingAllocator::round_size(schedule.buffers[b].size_bytes);
    address[b.index()] = next_address;  // every block its own address: segments are not modelled per event
    next_address += size;
    live[b.index()] = 1;
    trace.push_back(trace_event("alloc", address[b.index()], size, us(t), frames_of(schedule, b, by)));
  };
  for (const BufferId b : initial) alloc(b, step.start_ns, "live at the step's start");
  for (const Event& e : events) {
    const std::string& op = schedule.ops[OpId(e.op)].name;
    if (!e.free) {
      alloc(e.buffer, e.time_ns, op);
      continue;
    }
    if (!live[e.buffer.index()]) continue;
    live[e.buffer.index()] = 0;
    const int64_t size = CachingAllocator::round_size(schedule.buffers[e.buffer].size_bytes);
    trace.push_back(trace_event("free_requested", address[e.buffer.index()], size, us(e.time_ns),
                                frames_of(schedule, e.buffer, op)));
    trace.push_back(trace_event("free_completed", address[e.buffer.index()], size, us(e.time_ns),
                                frames_of(schedule, e.buffer, op)));
  }

  // The state at the end: one segment of the predicted reserved peak holding the blocks still live, in address
  // order, and one inactive block for the rest, so that its blocks sum to its size as _memory_viz.py's `stats`
  // requires (it lays blocks end to end; their addresses are the trace's, not places in the segment).
  std::vector<BufferId> at_end;
  for (const Buffer& b : schedule.buffers) {
    if (live[b.id.index()]) at_end.push_back(b.id);
  }
  std::sort(at_end.begin(), at_end.end(),
            [&](BufferId a, BufferId b) { return address[a.index()] < address[b.index()]; });
  PickleList blocks;
  int64_t allocated = 0, requested = 0;
  for (const BufferId b : at_end) {
    const int64_t size = CachingAllocator::round_size(schedule.buffers[b].size_bytes);
    allocated += size;
    requested += schedule.buffers[b].size_bytes;
    blocks.push_back(pickle_dict({{pickle_string("address"), pickle_int(address[b.index()])},
                                  {pickle_string("size"), pickle_int(size)},
                                  {pickle_string("requested_size"), pickle_int(schedule.buffers[b].size_bytes)},
                                  {pickle_string("state"), pickle_string("active_allocated")},
                                  {pickle_string("frames"), frames_of(schedule, b, "live at the step's end")}}));
  }
  const int64_t total = std::max(reserved, allocated);
  if (total > allocated) {
    blocks.push_back(pickle_dict({{pickle_string("address"), pickle_int(next_address)},
                                  {pickle_string("size"), pickle_int(total - allocated)},
                                  {pickle_string("requested_size"), pickle_int(0)},
                                  {pickle_string("state"), pickle_string("inactive")},
                                  {pickle_string("frames"), pickle_list({})}}));
  }
  PickleValue segment = pickle_dict({{pickle_string("device"), pickle_int(0)},
                                     {pickle_string("address"), pickle_int(kBaseAddress)},
                                     {pickle_string("total_size"), pickle_int(total)},
                                     {pickle_string("stream"), pickle_int(0)},
                                     {pickle_string("segment_type"), pickle_string("large")},
                                     {pickle_string("allocated_size"), pickle_int(allocated)},
                                     {pickle_string("active_size"), pickle_int(allocated)},
                                     {pickle_string("requested_size"), pickle_int(requested)},
                                     {pickle_string("blocks"), pickle_list(std::move(blocks))}});
  return pickle_dict({{pickle_string("segments"), pickle_list({std::move(segment)})},
                      {pickle_string("device_traces"), pickle_list({pickle_list(std::move(trace))})}});
}

namespace {

// The category of a block or trace event, from its stack frames.
std::string category_of(const PickleValue& record, const SnapshotFrameContext& context) {
  const PickleValue* frames = record.find("frames");
  return classify_frames(frames != nullptr ? *frames : PickleValue{}, context);
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
  // The end state: reserved bytes and the blocks still allocated, by address.
  int64_t end_reserved = 0;
  std::unordered_map<int64_t, Live> end_active;
  for (const PickleValue& seg : *segments->list()) {
    if (const PickleValue* d = seg.find("device"); d != nullptr && d->integer() != nullptr && *d->integer() != device) {
      continue;
    }
    end_reserved = add_bytes(end_reserved, size_field(seg, "total_size", source, "a segment"), source);
    const PickleValue* blocks = seg.find("blocks");
    if (blocks == nullptr || blocks->list() == nullptr) continue;
    for (const PickleValue& b : *blocks->list()) {
      if (text_field(b, "state") != "active_allocated") continue;
      end_active[int_field(b, "address", source, "a block")] =
          Live{size_field(b, "size", source, "a block"), category_of(b, context)};
    }
  }
  const PickleList empty;
  const PickleList* trace = &empty;
  if (const PickleValue* traces = snapshot.find("device_traces"); traces != nullptr && traces->list() != nullptr) {
    const PickleList& per_device = *traces->list();
    if (device >= 0 && static_cast<size_t>(device) < per_device.size() &&
        per_device[static_cast<size_t>(device)].list()) {
      trace = per_device[static_cast<size_t>(device)].list();
    }
  }
  m.trace_events = static_cast<int64_t>(trace->size());

  // Each event decoded once (its fields checked, its frames classified), then two passes over them.
  struct TraceEvent {
    enum class Kind : uint8_t { alloc, free_request, free, segment, other } kind = Kind::other;
    int64_t addr = 0;
    int64_t size = 0;  // a segment event: the bytes it maps (+) or unmaps (−)
    std::optional<double> time_us;
    std::string category;              // alloc: from its frames
    const PickleValue* raw = nullptr;  // free: read again only when the block predates the trace
  };
  std::vector<TraceEvent> events;
  events.reserve(trace->size());
  for (const PickleValue& e : *trace) {
    TraceEvent ev;
    ev.raw = &e;
    const std::string action = text_field(e, "action");
    if (const PickleValue* t = e.find("time_us"); t != nullptr) {
      ev.time_us =
          t->integer() != nullptr ? static_cast<double>(*t->integer()) : (t->real() != nullptr ? *t->real() : 0);
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
    events.push_back(std::move(ev));
  }

  // Pass 1: what was allocated before the trace (freed without an allocation in it, or held to its end without
  // one), and the segment bytes the trace added.
  std::unordered_map<int64_t, Live> live, before;
  std::unordered_set<int64_t> requested;  // addresses freed by free_requested, not yet completed
  int64_t segment_delta = 0;
  for (const TraceEvent& e : events) {
    switch (e.kind) {
      case TraceEvent::Kind::alloc:
        live[e.addr] = Live{e.size, e.category};
        break;
      case TraceEvent::Kind::free_request:
      case TraceEvent::Kind::free:
        if (e.kind == TraceEvent::Kind::free && requested.erase(e.addr) != 0) break;  // completes a request
        if (e.kind == TraceEvent::Kind::free_request) requested.insert(e.addr);
        if (live.erase(e.addr) == 0) {
          before[e.addr] = Live{CachingAllocator::round_size(size_field(*e.raw, "size", source, "a free event")),
                                category_of(*e.raw, context)};
        }
        break;
      case TraceEvent::Kind::segment:
        segment_delta = add_bytes(segment_delta, e.size, source);
        break;
      case TraceEvent::Kind::other:
        break;
    }
  }
  for (const auto& [addr, block] : end_active) {
    if (live.count(addr) == 0) before.emplace(addr, block);
  }

  // Pass 2: replay from the state before the trace.
  requested.clear();
  std::map<std::string, int64_t> categories;
  int64_t allocated = 0;
  live.clear();
  for (const auto& [addr, block] : before) {
    live.emplace(addr, block);
    allocated = add_bytes(allocated, block.size, source);
    categories[block.category] = add_bytes(categories[block.category], block.size, source);
    m.allocated_before_trace_bytes = add_bytes(m.allocated_before_trace_bytes, block.size, source);
  }
  int64_t before_trace = 0;  // end_reserved − segment_delta, checked (the delta is a sum the file decides)
  if (__builtin_sub_overflow(end_reserved, segment_delta, &before_trace)) {
    not_a_snapshot(source, "size", "its segment sizes add up past 2^63 bytes, which no device holds");
  }
  int64_t reserved = std::max<int64_t>(0, before_trace);
  m.peak_allocated_bytes = allocated;
  m.peak_categories = categories;
  m.peak_reserved_bytes = reserved;
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
        if (e.kind == TraceEvent::Kind::free && requested.erase(e.addr) != 0) break;  // completes a request
        if (e.kind == TraceEvent::Kind::free_request) requested.insert(e.addr);
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
