// The predicted steady step written as a PyTorch CUDA memory snapshot, for PyTorch's memory viewer.
#include "report/memory_snapshot.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "memory/caching_allocator.h"

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

// PyTorch hands out no block for an empty tensor (MemoryTracker::allocate): empty buffers leave no event.
bool leaves_no_block(const Schedule& schedule, BufferId b) {
  return schedule.buffers[b].size_bytes == 0;
}

// The allocations and frees of the step's ops on `stage`, sorted into the order the engine performs them.
std::vector<Event> step_events(const Schedule& schedule, const StepRun& step, int32_t stage) {
  std::vector<Event> events;
  for (const Op& op : schedule.ops) {
    const OpTiming& t = step.ops[op.id];
    if (t.start_ns < 0 || schedule.stage_of(op) != stage) continue;
    for (const BufferId b : op.allocs) {
      if (!leaves_no_block(schedule, b)) events.push_back({t.start_ns, 1, op.id.value(), false, b});
    }
    for (const BufferId b : op.frees) {
      if (!leaves_no_block(schedule, b)) {
        events.push_back({t.end_ns, t.end_ns == t.start_ns ? 1 : 0, op.id.value(), true, b});
      }
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.key() < b.key(); });
  return events;
}

// Live at the step's start: the persistent buffers and those the step frees before it allocates them.
std::vector<BufferId> live_at_step_start(const Schedule& schedule, const std::vector<Event>& events, int32_t stage) {
  std::vector<BufferId> initial;
  for (const Buffer& b : schedule.buffers) {
    if (b.persistent && b.stage == stage && !leaves_no_block(schedule, b.id)) initial.push_back(b.id);
  }
  std::vector<char> seen(schedule.buffers.size(), 0);
  for (const Event& e : events) {
    if (seen[e.buffer.index()] || schedule.buffers[e.buffer].persistent) continue;
    seen[e.buffer.index()] = 1;
    if (e.free) initial.push_back(e.buffer);
  }
  return initial;
}

// The predicted step's trace events, with where each buffer's block was placed and whether it is live at the end.
struct PredictedTrace {
  PickleList events;
  std::vector<int64_t> address;  // by buffer
  std::vector<char> live;        // by buffer
  int64_t next_address = kBaseAddress;
};

PredictedTrace predicted_trace(const Schedule& schedule, const StepRun& step, const std::vector<Event>& events,
                               const std::vector<BufferId>& initial) {
  PredictedTrace out;
  out.address.assign(schedule.buffers.size(), 0);
  out.live.assign(schedule.buffers.size(), 0);
  const auto us = [&](TimeNs t) { return (t - step.start_ns) / 1000; };
  out.events.push_back(trace_event("segment_alloc", kBaseAddress, step.peak_reserved.bytes, 0,
                                   pickle_list({frame("fsdpsim: the predicted reserved peak (segments are not "
                                                      "modelled per event)")})));
  const auto alloc = [&](BufferId b, TimeNs t, const std::string& by) {
    const int64_t size = CachingAllocator::round_size(schedule.buffers[b].size_bytes);
    out.address[b.index()] = out.next_address;  // every block its own address: segments are not modelled per event
    out.next_address += size;
    out.live[b.index()] = 1;
    out.events.push_back(trace_event("alloc", out.address[b.index()], size, us(t), frames_of(schedule, b, by)));
  };
  for (const BufferId b : initial) alloc(b, step.start_ns, "live at the step's start");
  for (const Event& e : events) {
    const std::string& op = schedule.ops[OpId(e.op)].name;
    if (!e.free) {
      alloc(e.buffer, e.time_ns, op);
      continue;
    }
    if (!out.live[e.buffer.index()]) continue;
    out.live[e.buffer.index()] = 0;
    const int64_t size = CachingAllocator::round_size(schedule.buffers[e.buffer].size_bytes);
    out.events.push_back(trace_event("free_requested", out.address[e.buffer.index()], size, us(e.time_ns),
                                     frames_of(schedule, e.buffer, op)));
    out.events.push_back(trace_event("free_completed", out.address[e.buffer.index()], size, us(e.time_ns),
                                     frames_of(schedule, e.buffer, op)));
  }
  return out;
}

// The state at the end: one segment of the predicted reserved peak holding the blocks still live, in address
// order, and one inactive block for the rest, so that its blocks sum to its size as _memory_viz.py's `stats`
// requires (it lays blocks end to end; their addresses are the trace's, not places in the segment).
PickleValue segment_at_end(const Schedule& schedule, const PredictedTrace& trace, int64_t reserved) {
  std::vector<BufferId> at_end;
  for (const Buffer& b : schedule.buffers) {
    if (trace.live[b.id.index()]) at_end.push_back(b.id);
  }
  std::sort(at_end.begin(), at_end.end(),
            [&](BufferId a, BufferId b) { return trace.address[a.index()] < trace.address[b.index()]; });
  PickleList blocks;
  int64_t allocated = 0, requested = 0;
  for (const BufferId b : at_end) {
    const int64_t size = CachingAllocator::round_size(schedule.buffers[b].size_bytes);
    allocated += size;
    requested += schedule.buffers[b].size_bytes;
    blocks.push_back(pickle_dict({{pickle_string("address"), pickle_int(trace.address[b.index()])},
                                  {pickle_string("size"), pickle_int(size)},
                                  {pickle_string("requested_size"), pickle_int(schedule.buffers[b].size_bytes)},
                                  {pickle_string("state"), pickle_string("active_allocated")},
                                  {pickle_string("frames"), frames_of(schedule, b, "live at the step's end")}}));
  }
  const int64_t total = std::max(reserved, allocated);
  if (total > allocated) {
    blocks.push_back(pickle_dict({{pickle_string("address"), pickle_int(trace.next_address)},
                                  {pickle_string("size"), pickle_int(total - allocated)},
                                  {pickle_string("requested_size"), pickle_int(0)},
                                  {pickle_string("state"), pickle_string("inactive")},
                                  {pickle_string("frames"), pickle_list({})}}));
  }
  return pickle_dict({{pickle_string("device"), pickle_int(0)},
                      {pickle_string("address"), pickle_int(kBaseAddress)},
                      {pickle_string("total_size"), pickle_int(total)},
                      {pickle_string("stream"), pickle_int(0)},
                      {pickle_string("segment_type"), pickle_string("large")},
                      {pickle_string("allocated_size"), pickle_int(allocated)},
                      {pickle_string("active_size"), pickle_int(allocated)},
                      {pickle_string("requested_size"), pickle_int(requested)},
                      {pickle_string("blocks"), pickle_list(std::move(blocks))}});
}

}  // namespace

PickleValue predicted_memory_snapshot(const Schedule& schedule, const RunRecord& run) {
  FSDPSIM_CHECK(!run.steps.empty(), "a run with no steps has no memory snapshot");
  const StepRun& step = run.steps.back();
  const std::vector<Event> events = step_events(schedule, step, run.memory_stage);
  PredictedTrace trace =
      predicted_trace(schedule, step, events, live_at_step_start(schedule, events, run.memory_stage));
  PickleValue segment = segment_at_end(schedule, trace, step.peak_reserved.bytes);
  return pickle_dict({{pickle_string("segments"), pickle_list({std::move(segment)})},
                      {pickle_string("device_traces"), pickle_list({pickle_list(std::move(trace.events))})}});
}

}  // namespace fsdpsim
