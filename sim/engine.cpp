#include "sim/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "memory/memory_tracker.h"
#include "sim/event_queue.h"
#include "sim/flow_solver.h"
#include "sim/memory_overhead_model.h"

namespace fsdpsim {
namespace {

// The op a stream is running. Compute work is measured in nanoseconds at full speed (rate = fraction of full
// speed); transfers in bytes (rate in bytes per nanosecond).
struct Activity {
  int32_t op = -1;
  bool active = false;
  bool transfer = false;
  bool in_latency = false;
  bool rendezvous = false;  // a recv waiting for its send's bytes: it ends when the send does
  double remaining = 0;
  double rate = 0;
  TimeNs since = 0;
  uint32_t version = 0;
};

// What the event loop reads about an op, packed together (the Op structs are large and scattered).
struct OpRuntime {
  int32_t stream = 0;
  int32_t deps = 0;
  int32_t peer = -1;                                 // send/recv: the other end of the rendezvous
  int32_t allocs_begin = 0, allocs_end = 0;          // into buffer_ids_
  int32_t frees_begin = 0, frees_end = 0;            // into buffer_ids_
  int32_t dependents_begin = 0, dependents_end = 0;  // into dependent_ids_
};

// What the caching allocator can reserve: the GPU's memory less what the CUDA context, cuBLAS and NCCL hold before
// the first tensor (measured on an H100: the pool failed at the device's total less those and the executor's scratch,
// bench/results/2026-11-23-h100.md).
int64_t allocator_capacity(const Topology& t, const MemoryOverheads& overheads) {
  // Overheads that fill the whole GPU leave one byte: the first allocation then fails and the run is reported out
  // of memory, which is the answer.
  return std::max<int64_t>(1, t.gpu.hbm_bytes - overheads.total());
}

// What the cost model chose for each collective, as the run record keeps it. Names are looked up once per algorithm
// and protocol, not per op: a 16-micro-batch 405B step has 36k ops.
IdVector<OpId, CollectiveChoice> collective_choices(const std::vector<OpCost>& costs) {
  std::array<std::string_view, 8> algo_names{};
  for (const NcclAlgo a : all_nccl_algos()) algo_names.at(static_cast<size_t>(a)) = to_string(a);
  std::array<std::string_view, 3> proto_names{};
  for (const NcclProto p : all_nccl_protos()) proto_names.at(static_cast<size_t>(p)) = to_string(p);
  IdVector<OpId, CollectiveChoice> choices(costs.size());
  for (size_t i = 0; i < costs.size(); ++i) {
    if (!costs[i].collective) continue;
    const CollectiveCost& c = costs[i].nccl;
    choices[i] = CollectiveChoice{.algorithm = algo_names[static_cast<size_t>(c.algo)],
                                  .protocol = proto_names[static_cast<size_t>(c.proto)],
                                  .busbw_bytes_per_s = c.bus_bw_bytes_per_s};
  }
  return choices;
}

// The slowest compute runs while communication kernels hold SMs. A guard, not a measurement: when the collectives
// running at once hold as many SMs as the GPU has (several concurrent calls of a what-if profile), the hardware still
// schedules compute CTAs as communication CTAs wait on their peers, so compute slows but never stops; 5% keeps such a
// step finite. The shipped profiles never come near it (an FSDP step's concurrent all-gather and reduce-scatter hold a
// few dozen of an H100's 132 SMs, docs/architecture.md §5.4), so no reported figure depends on its value.
constexpr double kMinComputeSpeed = 0.05;

class Engine {
 public:
  Engine(const Schedule& s, const Topology& t, const SimOptions& o, std::vector<OpCost> costs,
         const std::vector<double>& link_caps)
      : s_(s), t_(t), o_(o), costs_(std::move(costs)), overheads_(memory_overheads(s, t, costs_)), links_() {
    FSDPSIM_CHECK(costs_.size() == s.ops.size(), "one cost per op");
    // One memory per pipeline stage: each stage's rank is its own GPU.
    const AllocatorConfig allocator{.capacity_bytes = o.allocator_capacity_bytes > 0
                                                          ? o.allocator_capacity_bytes
                                                          : allocator_capacity(t, overheads_),
                                    .expandable_segments = o.expandable_segments,
                                    .max_split_size_bytes = 0};
    const int32_t stages = std::max(1, s.info.pipeline_stages);
    memories_.reserve(static_cast<size_t>(stages));
    for (int32_t stage = 0; stage < stages; ++stage) memories_.emplace_back(s, allocator, o.record_timeline);
    compute_speed_.assign(static_cast<size_t>(stages), 1.0);
    comm_sms_.assign(static_cast<size_t>(stages), 0);
    comm_running_.assign(static_cast<size_t>(stages), 0);
    running_of_stage_.assign(static_cast<size_t>(stages), {});
    stage_changed_.assign(static_cast<size_t>(stages), 1);
    for (const Stream& st : s.streams) stream_stage_.push_back(st.stage);
    for (const double cap : link_caps) links_.push_back(FlowLink{cap});
    stream_ops_.resize(s.streams.size());
    // Each op's dependents, flat: counted, then filled in op order (one allocation, not one list per op).
    std::vector<int32_t> dependents_begin(s.ops.size() + 1, 0);
    for (const Op& op : s.ops) {
      stream_ops_[op.stream.index()].push_back(op.id.value());
      for (const OpId d : op.deps) ++dependents_begin[d.index() + 1];
    }
    for (size_t i = 0; i < s.ops.size(); ++i) dependents_begin[i + 1] += dependents_begin[i];
    dependent_ids_.assign(static_cast<size_t>(dependents_begin.back()), 0);
    std::vector<int32_t> next = dependents_begin;
    for (const Op& op : s.ops) {
      for (const OpId d : op.deps) dependent_ids_[static_cast<size_t>(next[d.index()]++)] = op.id.value();
    }
    ops_.resize(s.ops.size());
    for (const Op& op : s.ops) {
      OpRuntime& r = ops_[op.id.index()];
      r.stream = op.stream.value();
      r.deps = static_cast<int32_t>(op.deps.size());
      r.peer = op.peer.valid() ? op.peer.value() : -1;
      r.allocs_begin = static_cast<int32_t>(buffer_ids_.size());
      buffer_ids_.insert(buffer_ids_.end(), op.allocs.begin(), op.allocs.end());
      r.allocs_end = r.frees_begin = static_cast<int32_t>(buffer_ids_.size());
      buffer_ids_.insert(buffer_ids_.end(), op.frees.begin(), op.frees.end());
      r.frees_end = static_cast<int32_t>(buffer_ids_.size());
      r.dependents_begin = dependents_begin[op.id.index()];
      r.dependents_end = dependents_begin[op.id.index() + 1];
    }
    acts_.resize(s.streams.size());
    queue_ = EventQueue(s.streams.size());
    flow_of_stream_.assign(s.streams.size(), -1);
    for (int32_t stage = 0; stage < stages; ++stage)
      compute_streams_.push_back(std::max(0, s.compute_stream(stage).value()));
  }

  RunRecord run() {
    RunRecord result;
    // Persistent buffers exist before the first step (model, optimizer and FSDP buffers are set up at init).
    for (const Buffer& b : s_.buffers) {
      if (b.persistent) {
        memory_of(b.id).allocate(b.id, OpId::none(), StreamId(compute_streams_[static_cast<size_t>(b.stage)]), 0, 0);
      }
    }
    TimeNs now = 0;
    std::vector<std::vector<int64_t>> mallocs(memories_.size());  // per stage, per step
    for (int32_t step = 0; step < o_.steps; ++step) {
      std::vector<int64_t> before;
      for (MemoryTracker& m : memories_) {
        before.push_back(m.allocator_stats().cuda_malloc_calls);
        m.reset_peaks(now, step);
      }
      StepRun run = run_step(step, now);
      for (size_t stage = 0; stage < memories_.size(); ++stage) {
        if (memories_.size() > 1) {
          run.stage_peaks.push_back(StagePeaks{memories_[stage].peak_allocated(), memories_[stage].peak_reserved()});
        }
        mallocs[stage].push_back(memories_[stage].allocator_stats().cuda_malloc_calls - before[stage]);
      }
      now = run.end_ns;
      result.steps.push_back(std::move(run));
    }
    // The figures are the worst stage's: the one out of memory, else the highest steady-step reserved peak.
    size_t worst = 0;
    for (size_t stage = 0; stage < memories_.size(); ++stage) {
      const bool oom = memories_[stage].oom().has_value(), worst_oom = memories_[worst].oom().has_value();
      if (oom != worst_oom) {
        if (oom) worst = stage;
        continue;
      }
      if (memories_[stage].peak_reserved().bytes > memories_[worst].peak_reserved().bytes) worst = stage;
    }
    const MemoryTracker& memory = memories_[worst];
    for (size_t step = 0; step < result.steps.size(); ++step) {
      StepRun& run = result.steps[step];
      run.peak_allocated = run.stage_peaks.empty() ? memory.peak_allocated() : run.stage_peaks[worst].allocated;
      run.peak_reserved = run.stage_peaks.empty() ? memory.peak_reserved() : run.stage_peaks[worst].reserved;
      run.cuda_malloc_calls = mallocs[worst][step];
    }
    result.memory_stage = static_cast<int32_t>(worst);
    result.origin =
        Prediction{.collectives = collective_choices(costs_), .overheads = overheads_, .straggler = o_.straggler};
    result.timeline = memory.timeline();
    result.oom = memory.oom();
    result.allocator = memory.allocator_stats();
    result.events = events_;
    return result;
  }

 private:
  StepRun run_step(int32_t step, TimeNs start) {
    step_ = step;
    StepRun run;
    run.start_ns = start;
    run.ops.assign(s_.ops.size(), OpTiming{});
    timings_ = &run.ops;
    head_.assign(s_.streams.size(), 0);
    pending_.resize(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) pending_[i] = ops_[i].deps;
    posted_.assign(ops_.size(), 0);
    for (auto& a : acts_) a = Activity{};
    for (auto& stage : running_of_stage_) stage.clear();
    std::fill(stage_changed_.begin(), stage_changed_.end(), 1);
    comm_changed_ = true;
    flows_changed_ = true;
    fresh_.clear();
    to_check_.clear();
    for (size_t st = 0; st < stream_ops_.size(); ++st) to_check_.push_back(st);
    TimeNs now = start;
    advance(now);
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      Activity& a = acts_[static_cast<size_t>(e.stream)];
      if (!a.active || e.version != a.version) continue;
      ++events_;
      now = e.time_ns;
      if (a.in_latency && a.remaining > 0) {
        a.in_latency = false;  // the latency part is over: the bytes start to flow
        a.rate = 0;
        a.since = now;
        comm_changed_for(a.op, true);
      } else {
        finish(a.op, now);
      }
      advance(now);
    }
    check_finished();
    run.end_ns = now;
    for (const OpTiming& t : run.ops) run.end_ns = std::max(run.end_ns, t.end_ns);
    return run;
  }

  // Starts every op that heads its stream with its deps done (sync and empty ops finish at once and may unblock
  // others), then re-rates what runs. Only streams whose head or whose head's deps changed are looked at.
  void advance(TimeNs now) {
    while (!to_check_.empty()) {
      const size_t st = to_check_.back();
      to_check_.pop_back();
      if (acts_[st].active || head_[st] >= stream_ops_[st].size()) continue;
      const int32_t op = stream_ops_[st][head_[st]];
      if (pending_[static_cast<size_t>(op)] > 0) continue;
      const int32_t peer = ops_[static_cast<size_t>(op)].peer;
      if (peer >= 0) {
        // A send/recv pair starts once both ends are posted: the first waits for the other.
        if (!posted_[static_cast<size_t>(peer)]) {
          posted_[static_cast<size_t>(op)] = 1;
          continue;
        }
        start_rendezvous(op, peer, now);
        continue;
      }
      start(op, now);
    }
    rerate(now);
  }

  // The send carries the transfer; the recv waits on its stream until the send ends (finish()).
  void start_rendezvous(int32_t op, int32_t peer, TimeNs now) {
    const bool op_sends = s_.ops[static_cast<size_t>(op)].kind == OpKind::send;
    const int32_t send = op_sends ? op : peer, recv = op_sends ? peer : op;
    const OpRuntime& r = ops_[static_cast<size_t>(recv)];
    (*timings_)[static_cast<size_t>(recv)].start_ns = now;
    for (int32_t i = r.allocs_begin; i < r.allocs_end; ++i) {
      const BufferId b = buffer_ids_[static_cast<size_t>(i)];
      memory_of(b).allocate(b, OpId(recv), StreamId(r.stream), now, step_);
    }
    Activity& a = acts_[static_cast<size_t>(r.stream)];
    a = Activity{.op = recv, .active = true, .rendezvous = true, .since = now, .version = a.version + 1};
    mark_running(static_cast<size_t>(r.stream));
    start(send, now);
  }

  void start(int32_t op_id, TimeNs now) {
    const OpRuntime& op = ops_[static_cast<size_t>(op_id)];
    (*timings_)[static_cast<size_t>(op_id)].start_ns = now;
    MemoryTracker& memory = memories_[static_cast<size_t>(stream_stage_[static_cast<size_t>(op.stream)])];
    const int64_t mallocs_before = memory.allocator_stats().cuda_malloc_calls;
    for (int32_t i = op.allocs_begin; i < op.allocs_end; ++i) {
      memory.allocate(buffer_ids_[static_cast<size_t>(i)], OpId(op_id), StreamId(op.stream), now, step_);
    }
    // A new allocator segment is a synchronous cudaMalloc on the host before the op can be enqueued: it delays the
    // op (this is what makes a first step slower than the steady state).
    const TimeNs malloc_ns = (memory.allocator_stats().cuda_malloc_calls - mallocs_before) * t_.gpu.cuda_malloc_ns;
    const OpCost& cost = costs_[static_cast<size_t>(op_id)];
    Activity& a = acts_[static_cast<size_t>(op.stream)];
    a.op = op_id;
    switch (cost.model) {
      case CostModel::instant:
        if (malloc_ns == 0) {
          finish(op_id, now);
          return;
        }
        a = Activity{.op = op_id,
                     .active = true,
                     .transfer = false,
                     .in_latency = false,
                     .remaining = static_cast<double>(malloc_ns),
                     .rate = 0,
                     .since = now,
                     .version = a.version + 1};
        mark_running(static_cast<size_t>(op.stream));
        fresh_.push_back(static_cast<size_t>(op.stream));
        return;
      case CostModel::compute:
        a = Activity{.op = op_id,
                     .active = true,
                     .transfer = false,
                     .in_latency = false,
                     .remaining = static_cast<double>(cost.compute_ns + malloc_ns),
                     .rate = 0,
                     .since = now,
                     .version = a.version + 1};
        mark_running(static_cast<size_t>(op.stream));
        fresh_.push_back(static_cast<size_t>(op.stream));
        return;
      case CostModel::transfer: {
        const TimeNs latency = cost.latency_ns + malloc_ns;
        a = Activity{.op = op_id,
                     .active = true,
                     .transfer = true,
                     .in_latency = latency > 0,
                     .remaining = cost.bytes,
                     .rate = 0,
                     .since = now,
                     .version = a.version + 1};
        comm_changed_for(op_id, !a.in_latency);
        mark_running(static_cast<size_t>(op.stream));
        if (a.in_latency) queue_.set(op.stream, now + latency, a.version);
        if (!a.in_latency && cost.bytes <= 0) finish(op_id, now);
        return;
      }
    }
  }

  void finish(int32_t op_id, TimeNs now) {
    const OpRuntime& op = ops_[static_cast<size_t>(op_id)];
    (*timings_)[static_cast<size_t>(op_id)].end_ns = now;
    for (int32_t i = op.frees_begin; i < op.frees_end; ++i) {
      const BufferId b = buffer_ids_[static_cast<size_t>(i)];
      memory_of(b).release(b, now);
    }
    Activity& a = acts_[static_cast<size_t>(op.stream)];
    if (a.transfer) comm_changed_for(op_id, !a.in_latency);
    if (a.active) mark_idle(static_cast<size_t>(op.stream));
    a.active = false;
    a.transfer = false;
    a.rendezvous = false;
    ++a.version;
    ++head_[static_cast<size_t>(op.stream)];
    to_check_.push_back(static_cast<size_t>(op.stream));
    for (int32_t i = op.dependents_begin; i < op.dependents_end; ++i) {
      const auto d = static_cast<size_t>(dependent_ids_[static_cast<size_t>(i)]);
      if (--pending_[d] == 0) to_check_.push_back(static_cast<size_t>(ops_[d].stream));
    }
    // A send's bytes have arrived: its recv ends with it.
    if (op.peer >= 0 && acts_[static_cast<size_t>(ops_[static_cast<size_t>(op.peer)].stream)].rendezvous &&
        acts_[static_cast<size_t>(ops_[static_cast<size_t>(op.peer)].stream)].op == op.peer) {
      finish(op.peer, now);
    }
  }

  // Compute runs at the fraction of SMs that communication kernels leave free (minus the profile's extra overlap
  // slowdown); transfers share links max-min fairly. Only a change in the running communication changes any rate, so
  // the full re-rating runs only then, and only for the pipeline stages it touches: a stage's transfers load its own
  // GPU's links, and only sends couple two stages, so the max-min solution splits by stage (joined along running
  // sends). Otherwise just the ops that started get their stage's compute speed.
  void rerate(TimeNs now) {
    if (comm_changed_) rerate_changed_stages(now);
    for (const size_t st : fresh_) set_rate(st, speed_of(st), now);  // no-op where the re-rating already set it
    fresh_.clear();
  }

  void rerate_changed_stages(TimeNs now) {
    comm_changed_ = false;
    const std::vector<size_t>& changed = running_streams_to_rerate();
    flows_.clear();
    flow_streams_.clear();
    for (const size_t st : changed) {
      const Activity& a = acts_[st];
      flow_of_stream_[st] = -1;
      const OpCost& cost = costs_[static_cast<size_t>(a.op)];
      if (cost.collective || cost.sms > 0) {
        const auto stage = static_cast<size_t>(stream_stage_[st]);
        comm_sms_[stage] += cost.sms;
        comm_running_[stage] = 1;
      }
      if (a.transfer && !a.in_latency) {
        flow_of_stream_[st] = static_cast<int32_t>(flows_.size());
        flows_.push_back(Flow{cost.cap_bytes_per_s, cost.loads.view()});
        flow_streams_.push_back(st);
      }
    }
    const double sms = std::max(1, t_.gpu.sm_count);
    for (size_t stage = 0; stage < compute_speed_.size(); ++stage) {
      if (!stage_changed_[stage]) continue;
      compute_speed_[stage] = std::max(kMinComputeSpeed, (sms - comm_sms_[stage]) / sms);
      if (comm_running_[stage]) compute_speed_[stage] *= (1.0 - t_.gpu.overlap_slowdown);
    }
    // A change that only started or ended a collective's latency part leaves the flows as the last solve saw them
    // (the same streams' transfers, in the same order): their rates stand, and only compute speeds change. With
    // several stages the last solve may have covered other stages, so every change is solved.
    if (flows_changed_ || stage_changed_.size() > 1) solve_flows();
    flows_changed_ = false;
    for (const size_t st : changed) {
      const Activity& a = acts_[st];
      if (a.in_latency || a.rendezvous) continue;
      const int32_t f = flow_of_stream_[st];
      set_rate(st, a.transfer ? rates_[static_cast<size_t>(f)] / 1e9 : speed_of(st), now);  // bytes per ns
    }
    std::fill(stage_changed_.begin(), stage_changed_.end(), 0);
  }

  // The flows' max-min rates into rates_. The same few sets of concurrent collectives recur in every layer and
  // micro-batch: a set of at most four alike-classed flows (OpCost::flow_class) is remembered by its classes, which
  // name the solver's exact inputs, so a hit gives the very rates the solver would.
  void solve_flows() {
    constexpr size_t kMaxKeyedFlows = 4;
    constexpr int32_t kClassLimit = 1 << 16;
    constexpr size_t kMaxRememberedSets = 1 << 14;
    uint64_t key = 0;
    bool keyed = flows_.size() >= 2 && flows_.size() <= kMaxKeyedFlows;
    for (size_t f = 0; keyed && f < flows_.size(); ++f) {
      const int32_t c = costs_[static_cast<size_t>(acts_[flow_streams_[f]].op)].flow_class;
      keyed = c >= 0 && c + 1 < kClassLimit;
      key = (key << 16) | static_cast<uint64_t>(c + 1);
    }
    if (!keyed) {
      solver_.solve(links_, flows_, rates_);
      return;
    }
    if (const auto hit = rates_of_classes_.find(key); hit != rates_of_classes_.end()) {
      rates_.assign(hit->second.begin(), hit->second.end());
      return;
    }
    solver_.solve(links_, flows_, rates_);
    if (rates_of_classes_.size() >= kMaxRememberedSets) rates_of_classes_.clear();  // bounded, like the solver's
    rates_of_classes_.emplace(key, rates_);
  }

  // The running streams of the changed stages, in stream order (the order the flows are solved in), with their
  // stages' SM counts reset. One stage: its own list, already in order.
  const std::vector<size_t>& running_streams_to_rerate() {
    if (stage_changed_.size() == 1) {
      comm_sms_[0] = 0;
      comm_running_[0] = 0;
      return running_of_stage_[0];
    }
    // A running send loads both its stages' links: a change on either end re-rates both.
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& stage : running_of_stage_) {
        for (const size_t st : stage) {
          const Activity& a = acts_[st];
          const int32_t peer = ops_[static_cast<size_t>(a.op)].peer;
          if (!a.transfer || peer < 0) continue;
          const auto here = static_cast<size_t>(stream_stage_[st]);
          const auto there =
              static_cast<size_t>(stream_stage_[static_cast<size_t>(ops_[static_cast<size_t>(peer)].stream)]);
          if (stage_changed_[here] != stage_changed_[there]) {
            stage_changed_[here] = stage_changed_[there] = 1;
            grew = true;
          }
        }
      }
    }
    changed_.clear();
    for (size_t stage = 0; stage < stage_changed_.size(); ++stage) {
      if (!stage_changed_[stage]) continue;
      comm_sms_[stage] = 0;
      comm_running_[stage] = 0;
      changed_.insert(changed_.end(), running_of_stage_[stage].begin(), running_of_stage_[stage].end());
    }
    std::sort(changed_.begin(), changed_.end());
    return changed_;
  }

  // The running communication of `op`'s stage changed (a send: of both its stages); `flows` when the change adds or
  // removes a transfer whose bytes flow (not one in its latency part).
  void comm_changed_for(int32_t op, bool flows) {
    comm_changed_ = true;
    flows_changed_ = flows_changed_ || flows;
    const OpRuntime& r = ops_[static_cast<size_t>(op)];
    stage_changed_[static_cast<size_t>(stream_stage_[static_cast<size_t>(r.stream)])] = 1;
    if (r.peer >= 0) {
      const auto peer_stream = static_cast<size_t>(ops_[static_cast<size_t>(r.peer)].stream);
      stage_changed_[static_cast<size_t>(stream_stage_[peer_stream])] = 1;
    }
  }

  // The streams running an op, per stage in stream order (the re-rating visits only the changed stages' ones: a
  // pipeline schedule has dozens of streams, a few busy at a time in each stage).
  void mark_running(size_t stream) {
    auto& running = running_of_stage_[static_cast<size_t>(stream_stage_[stream])];
    const auto at = std::lower_bound(running.begin(), running.end(), stream);
    if (at == running.end() || *at != stream) running.insert(at, stream);
  }
  void mark_idle(size_t stream) {
    auto& running = running_of_stage_[static_cast<size_t>(stream_stage_[stream])];
    const auto at = std::lower_bound(running.begin(), running.end(), stream);
    if (at != running.end() && *at == stream) running.erase(at);
  }

  [[nodiscard]] double speed_of(size_t stream) const {
    return compute_speed_[static_cast<size_t>(stream_stage_[stream])];
  }
  MemoryTracker& memory_of(BufferId b) { return memories_[static_cast<size_t>(s_.buffers[b].stage)]; }

  // Gives a running activity a new rate: what it did at the old rate is booked, and its completion is rescheduled.
  void set_rate(size_t st, double rate, TimeNs now) {
    Activity& a = acts_[st];
    if (!a.active || a.in_latency || a.rendezvous || rate == a.rate) return;
    a.remaining = std::max(0.0, a.remaining - a.rate * static_cast<double>(now - a.since));
    a.since = now;
    a.rate = rate;
    ++a.version;
    const double left = rate > 0 ? a.remaining / rate : 1e18;
    queue_.set(static_cast<int32_t>(st), now + static_cast<TimeNs>(std::ceil(left - 1e-6)), a.version);
  }

  void check_finished() const {
    for (size_t st = 0; st < stream_ops_.size(); ++st) {
      if (head_[st] >= stream_ops_[st].size()) continue;
      const int32_t op = stream_ops_[st][head_[st]];
      throw ScheduleError("the simulation cannot finish the step",
                          {"stream '" + s_.streams[st].name + "' is stuck at op " + std::to_string(op) + " '" +
                           s_.ops[static_cast<size_t>(op)].name +
                           "', whose dependencies never finish (run "
                           "'fsdpsim schedule' validation on it)"});
    }
  }

  const Schedule& s_;
  const Topology& t_;
  SimOptions o_;
  std::vector<OpCost> costs_;
  MemoryOverheads overheads_;
  std::vector<FlowLink> links_;
  std::vector<MemoryTracker> memories_;  // per pipeline stage
  std::vector<int32_t> stream_stage_;    // per stream: its pipeline stage
  std::vector<std::vector<int32_t>> stream_ops_;
  std::vector<OpRuntime> ops_;
  std::vector<BufferId> buffer_ids_;
  std::vector<int32_t> dependent_ids_;
  std::vector<size_t> head_;
  std::vector<int32_t> pending_;
  std::vector<Activity> acts_;
  std::vector<OpTiming>* timings_ = nullptr;
  EventQueue queue_;
  MaxMinSolver solver_;
  std::vector<Flow> flows_;
  std::vector<size_t> flow_streams_;  // the stream of each of flows_
  std::unordered_map<uint64_t, std::vector<double>> rates_of_classes_;  // solve_flows: rates by the flows' classes
  std::vector<double> rates_;
  std::vector<int32_t> flow_of_stream_;
  std::vector<std::vector<size_t>> running_of_stage_;  // per stage: streams whose activity is active, ascending
  std::vector<size_t> changed_;                        // rerate_changed_stages: the running streams it re-rates
  std::vector<size_t> fresh_;                          // streams whose compute op started since the last re-rating
  std::vector<size_t> to_check_;                       // streams whose head may be able to start
  bool comm_changed_ = true;              // the set of running communication changed since the last re-rating
  bool flows_changed_ = true;             // ... and with it the set of flowing transfers (what the solver sees)
  std::vector<double> compute_speed_;     // per stage
  std::vector<int32_t> comm_sms_;         // per stage: SMs communication kernels hold
  std::vector<char> stage_changed_;       // per stage: its running communication changed since the last re-rating
  std::vector<char> comm_running_;        // per stage
  std::vector<char> posted_;              // per op: a send or recv waiting for its peer
  std::vector<int32_t> compute_streams_;  // per stage
  int32_t step_ = 0;
  uint64_t events_ = 0;
};

}  // namespace

Topology with_straggler(const Topology& topology, const Straggler& straggler) {
  Topology t = topology;
  const double c = straggler.compute_slowdown;
  t.gpu.dense_bf16_flops_per_s /= c;
  t.gpu.dense_fp8_flops_per_s /= c;
  t.gpu.hbm_bw_bytes_per_s /= c;
  t.gpu.kernel_overhead_ns = static_cast<TimeNs>(std::llround(static_cast<double>(t.gpu.kernel_overhead_ns) * c));
  t.nic_bw_bytes_per_s /= straggler.nic_slowdown;
  return t;
}

RunRecord run_schedule(const Schedule& schedule, const Topology& topology, const SimOptions& options) {
  // Without a straggler every factor is 1 and the topology is the one given, exactly.
  const Topology rank = with_straggler(topology, options.straggler);
  return Engine(schedule, rank, options, compute_op_costs(schedule, rank),
                link_capacities(rank, std::max(1, schedule.info.pipeline_stages)))
      .run();
}

RunRecord run_schedule_with_costs(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                                  std::vector<OpCost> costs, std::vector<double> link_caps) {
  return Engine(schedule, topology, options, std::move(costs), link_caps).run();
}

}  // namespace fsdpsim
