#include "sim/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "memory/memory_tracker.h"
#include "sim/event_queue.h"
#include "sim/flat_ops.h"
#include "sim/flow_solver.h"
#include "sim/host_timeline.h"
#include "sim/memory_overhead_model.h"
#include "sim/micro_batch_translation.h"

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
  bool host_wait = false;   // the op heads its stream, deps done, but the host has not issued it yet
  double remaining = 0;
  double rate = 0;
  TimeNs since = 0;
  uint32_t version = 0;
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
IdVector<OpId, CollectiveChoice> collective_choices(const OpCostTable& costs) {
  std::array<std::string_view, 8> algo_names{};
  for (const NcclAlgo a : all_nccl_algos()) algo_names.at(static_cast<size_t>(a)) = to_string(a);
  std::array<std::string_view, 3> proto_names{};
  for (const NcclProto p : all_nccl_protos()) proto_names.at(static_cast<size_t>(p)) = to_string(p);
  std::vector<CollectiveChoice> of_entry;
  for (const OpCost& cost : costs.distinct()) {
    const CollectiveCost& c = cost.nccl;
    of_entry.push_back(cost.collective ? CollectiveChoice{.algorithm = algo_names[static_cast<size_t>(c.algo)],
                                                          .protocol = proto_names[static_cast<size_t>(c.proto)],
                                                          .busbw_bytes_per_s = c.bus_bw_bytes_per_s}
                                       : CollectiveChoice{});
  }
  IdVector<OpId, CollectiveChoice> choices(costs.size());
  for (size_t i = 0; i < costs.size(); ++i) choices[i] = of_entry[static_cast<size_t>(costs.entry_of(i))];
  return choices;
}

// A schedule's op costs and its flattened ops.
struct CostedOps {
  OpCostTable costs;
  FlatOps flat;
};

// Costs and flattens the ops on one walk: the IR's ops and their lists are tens of megabytes in a large schedule,
// read from memory on each walk.
CostedOps cost_and_flatten(const Schedule& s, const Topology& t) {
  OpCostBuilder costs(s, t);
  FlatOpsBuilder flat(s);
  for (const Op& op : s.ops) {
    costs.add(op);
    flat.add(op);
  }
  CostedOps out{.costs = std::move(costs).finish(), .flat = {}};
  out.flat = std::move(flat).finish(out.costs);
  return out;
}

// The slowest compute runs while communication kernels hold SMs. A guard, not a measurement: when the collectives
// running at once hold as many SMs as the GPU has (several concurrent calls of a what-if profile), the hardware still
// schedules compute CTAs as communication CTAs wait on their peers, so compute slows but never stops; 5% keeps such a
// step finite. The shipped profiles never come near it (an FSDP step's concurrent all-gather and reduce-scatter hold a
// few dozen of an H100's 132 SMs, docs/architecture.md §5.4), so no reported figure depends on its value.
constexpr double kMinComputeSpeed = 0.05;

class Engine {
 public:
  Engine(const Schedule& s, const Topology& t, const SimOptions& o, CostedOps costed,
         const std::vector<double>& link_caps)
      : s_(s), t_(t), o_(o), costs_(std::move(costed.costs)), flat_(std::move(costed.flat)) {
    FSDPSIM_CHECK(costs_.size() == s.ops.size() && flat_.ops.size() == s.ops.size(), "one cost per op");
    overheads_ = memory_overheads(s, t, flat_);
    host_ = host_timeline(s, t.gpu.host);
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
    acts_.resize(s.streams.size());
    queue_ = EventQueue(s.streams.size());
    flow_of_stream_.assign(s.streams.size(), -1);
    for (int32_t stage = 0; stage < stages; ++stage)
      compute_streams_.push_back(std::max(0, s.compute_stream(stage).value()));
    // Replaying repeated micro-batches pays off from four on: two are simulated to see the state repeat.
    if (o.replay_repeats && s.info.micro_batches >= 4) {
      // The translation is worked out at the first boundary: a run that fails an allocation before it never needs it.
      for (size_t op = 0; op < flat_.ops.size() && second_micro_batch_op_ < 0; ++op) {
        if (flat_.ops[op].micro_batch == 1) second_micro_batch_op_ = static_cast<int32_t>(op);
      }
      replay_enabled_ = second_micro_batch_op_ >= 0;
    }
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
    Prediction prediction;
    prediction.collectives = collective_choices(costs_);
    prediction.overheads = overheads_;
    prediction.straggler = o_.straggler;
    if (!host_.issue_ns.empty()) {
      prediction.host_step_ns = host_.walk_ns.front();
      prediction.host_kernels_per_step = host_.kernels.front();
      prediction.host_issue_ns = std::move(host_.issue_ns);  // the run is over: the engine needs them no more
    }
    prediction.memory_order = std::move(memory_order_);
    result.origin = std::move(prediction);
    result.timeline = memory.timeline();
    result.oom = memory.oom();
    result.allocator = memory.allocator_stats();
    result.events = events_;
    result.replayed_windows = replayed_windows_;
    return result;
  }

 private:
  StepRun run_step(int32_t step, TimeNs start) {
    step_ = step;
    step_start_ = start;
    StepRun run;
    run.start_ns = start;
    run.ops.assign(s_.ops.size(), OpTiming{});
    timings_ = &run.ops;
    head_.assign(s_.streams.size(), 0);
    pending_.resize(flat_.ops.size());
    for (size_t i = 0; i < flat_.ops.size(); ++i) pending_[i] = flat_.ops[i].deps();
    posted_.assign(flat_.ops.size(), 0);
    for (auto& a : acts_) a = Activity{};
    for (auto& stage : running_of_stage_) stage.clear();
    running_sends_.clear();
    std::fill(stage_changed_.begin(), stage_changed_.end(), 1);
    comm_changed_ = true;
    flows_changed_ = true;
    fresh_.clear();
    to_check_.clear();
    for (size_t st = 0; st < flat_.streams.size(); ++st) to_check_.push_back(st);
    last_boundary_.reset();
    recording_ = false;
    memory_order_.clear();
    window_memory_order_.clear();
    boundary_pending_ = false;
    arm_boundary(replay_enabled_ ? 1 : -1);  // from the second micro-batch's start
    TimeNs now = start;
    advance(now);
    while (!queue_.empty()) {
      const Event e = queue_.pop();
      Activity& a = acts_[static_cast<size_t>(e.stream)];
      if (!a.active || e.version != a.version) continue;
      ++events_;
      now = e.time_ns;
      if (a.host_wait) {
        a = Activity{.version = a.version + 1};  // issued: the op starts as its stream's head (advance)
        to_check_.push_back(static_cast<size_t>(e.stream));
      } else if (a.in_latency && a.remaining > 0) {
        a.in_latency = false;  // the latency part is over: the bytes start to flow
        a.rate = 0;
        a.since = now;
        comm_changed_for(a.op, true);
      } else {
        finish(a.op, now);
      }
      advance(now);
      // A micro-batch's first op started and every event of this instant is done: a boundary between windows.
      if (boundary_pending_ && (queue_.empty() || queue_.next_time() > now)) now = at_boundary(now);
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
      if (acts_[st].active || head_[st] >= flat_.streams[st].size()) continue;
      const int32_t op = flat_.streams[st][head_[st]];
      if (pending_[static_cast<size_t>(op)] > 0) continue;
      if (waits_for_host(st, op, now)) continue;
      const int32_t peer = flat_.ops[static_cast<size_t>(op)].peer;
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

  // The op heading stream `st` is ready on the GPU before the host has issued it: the stream waits (an activity with
  // no work, which ends at the issue time and no rate touches).
  bool waits_for_host(size_t st, int32_t op, TimeNs now) {
    if (host_.issue_ns.empty()) return false;
    const TimeNs issued = step_start_ + host_.issue_ns[static_cast<size_t>(op)];
    if (now >= issued) return false;
    Activity& a = acts_[st];
    a = Activity{.op = op, .active = true, .host_wait = true, .since = now, .version = a.version + 1};
    queue_.set(static_cast<int32_t>(st), issued, a.version);
    host_waited_ = true;
    return true;
  }

  // The send carries the transfer; the recv waits on its stream until the send ends (finish()).
  void start_rendezvous(int32_t op, int32_t peer, TimeNs now) {
    const bool op_sends = flat_.ops[static_cast<size_t>(op)].kind == OpKind::send;
    const int32_t send = op_sends ? op : peer, recv = op_sends ? peer : op;
    const FlatOp& r = flat_.ops[static_cast<size_t>(recv)];
    (*timings_)[static_cast<size_t>(recv)].start_ns = now;
    if (recording_) started_.emplace_back(recv, now);
    if (recv == boundary_op_) boundary_pending_ = true;
    if (r.allocs_end > r.allocs_begin) note_memory_event(recv, false);
    for (int32_t i = r.allocs_begin; i < r.allocs_end; ++i) {
      const BufferId b = flat_.buffer_ids[static_cast<size_t>(i)];
      memory_of(b).allocate(b, OpId(recv), StreamId(r.stream), now, step_);
    }
    Activity& a = acts_[static_cast<size_t>(r.stream)];
    a = Activity{.op = recv, .active = true, .rendezvous = true, .since = now, .version = a.version + 1};
    mark_running(static_cast<size_t>(r.stream));
    start(send, now);
  }

  void start(int32_t op_id, TimeNs now) {
    const FlatOp& op = flat_.ops[static_cast<size_t>(op_id)];
    (*timings_)[static_cast<size_t>(op_id)].start_ns = now;
    if (recording_) started_.emplace_back(op_id, now);
    if (op_id == boundary_op_) boundary_pending_ = true;
    MemoryTracker& memory = memories_[static_cast<size_t>(stream_stage_[static_cast<size_t>(op.stream)])];
    const int64_t mallocs_before = memory.allocator_stats().cuda_malloc_calls;
    if (op.allocs_end > op.allocs_begin) note_memory_event(op_id, false);
    for (int32_t i = op.allocs_begin; i < op.allocs_end; ++i) {
      memory.allocate(flat_.buffer_ids[static_cast<size_t>(i)], OpId(op_id), StreamId(op.stream), now, step_);
    }
    // A new allocator segment is a synchronous cudaMalloc on the host before the op can be enqueued: it delays the
    // op (this is what makes a first step slower than the steady state).
    const TimeNs malloc_ns = (memory.allocator_stats().cuda_malloc_calls - mallocs_before) * t_.gpu.cuda_malloc_ns;
    const FlatCost& cost = flat_.costs[static_cast<size_t>(op.cost)];
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
        compute_stream_changed(static_cast<size_t>(op.stream));
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
    const FlatOp& op = flat_.ops[static_cast<size_t>(op_id)];
    (*timings_)[static_cast<size_t>(op_id)].end_ns = now;
    if (recording_) finished_.emplace_back(op_id, now);
    if (op.frees_end > op.frees_begin) note_memory_event(op_id, true);
    for (int32_t i = op.frees_begin; i < op.frees_end; ++i) {
      const BufferId b = flat_.buffer_ids[static_cast<size_t>(i)];
      memory_of(b).release(b, now);
    }
    Activity& a = acts_[static_cast<size_t>(op.stream)];
    if (a.transfer) comm_changed_for(op_id, !a.in_latency);
    if (a.active) mark_idle(static_cast<size_t>(op.stream));
    const bool was_kernel = runs_kernel(a);
    a.active = false;
    a.transfer = false;
    a.rendezvous = false;
    ++a.version;
    if (was_kernel) compute_stream_changed(static_cast<size_t>(op.stream));
    ++head_[static_cast<size_t>(op.stream)];
    to_check_.push_back(static_cast<size_t>(op.stream));
    for (int32_t i = op.dependents_begin; i < op.dependents_end; ++i) {
      const auto d = static_cast<size_t>(flat_.op_ids[static_cast<size_t>(i)]);
      if (--pending_[d] == 0) to_check_.push_back(static_cast<size_t>(flat_.ops[d].stream));
    }
    // A send's bytes have arrived: its recv ends with it.
    if (op.peer >= 0 && acts_[static_cast<size_t>(flat_.ops[static_cast<size_t>(op.peer)].stream)].rendezvous &&
        acts_[static_cast<size_t>(flat_.ops[static_cast<size_t>(op.peer)].stream)].op == op.peer) {
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
      const FlatCost& cost = flat_.cost_of(a.op);
      if (cost.holds_sms) {
        const auto stage = static_cast<size_t>(stream_stage_[st]);
        comm_sms_[stage] += cost.sms;
        comm_running_[stage] = 1;
      }
      if (a.transfer && !a.in_latency) {
        flow_of_stream_[st] = static_cast<int32_t>(flows_.size());
        flows_.push_back(Flow{cost.cap_bytes_per_s, costs_[static_cast<size_t>(a.op)].loads.view()});
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
      const int32_t c = flat_.cost_of(acts_[flow_streams_[f]].op).flow_class;
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
      for (const RunningSend& send : running_sends_) {
        if (stage_changed_[send.here] != stage_changed_[send.there]) {
          stage_changed_[send.here] = stage_changed_[send.there] = 1;
          grew = true;
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
    const FlatOp& r = flat_.ops[static_cast<size_t>(op)];
    stage_changed_[static_cast<size_t>(stream_stage_[static_cast<size_t>(r.stream)])] = 1;
    if (r.peer >= 0) {
      const auto peer_stream = static_cast<size_t>(flat_.ops[static_cast<size_t>(r.peer)].stream);
      stage_changed_[static_cast<size_t>(stream_stage_[peer_stream])] = 1;
    }
  }

  // The streams running an op, per stage in stream order (the re-rating visits only the changed stages' ones: a
  // pipeline schedule has dozens of streams, a few busy at a time in each stage).
  void mark_running(size_t stream) {
    auto& running = running_of_stage_[static_cast<size_t>(stream_stage_[stream])];
    const auto at = std::lower_bound(running.begin(), running.end(), stream);
    if (at == running.end() || *at != stream) running.insert(at, stream);
    const Activity& a = acts_[stream];
    const int32_t peer = flat_.ops[static_cast<size_t>(a.op)].peer;
    const auto same_stream = [&](const RunningSend& send) { return send.stream == stream; };
    if (a.transfer && peer >= 0 && std::none_of(running_sends_.begin(), running_sends_.end(), same_stream)) {
      const auto there = stream_stage_[static_cast<size_t>(flat_.ops[static_cast<size_t>(peer)].stream)];
      running_sends_.push_back(RunningSend{
          .stream = stream, .here = static_cast<size_t>(stream_stage_[stream]), .there = static_cast<size_t>(there)});
    }
  }
  void mark_idle(size_t stream) {
    auto& running = running_of_stage_[static_cast<size_t>(stream_stage_[stream])];
    const auto at = std::lower_bound(running.begin(), running.end(), stream);
    if (at != running.end() && *at == stream) running.erase(at);
    std::erase_if(running_sends_, [&](const RunningSend& send) { return send.stream == stream; });
  }

  // A memory-bound kernel on a side stream shares the SMs and HBM with whatever kernel the compute stream runs: it
  // runs at the profile's side_stream_memory_speed while the compute stream runs one. FSDP2's copy-in kernels took
  // 2.8 times as long beside the compute stream's kernels as alone on the H100 recording (bench/results/
  // 2026-11-26-h100-frameworks.md); the compute stream's own slowdown is in the kernel rates it was measured with.
  [[nodiscard]] bool runs_kernel(const Activity& a) const {
    return a.active && !a.transfer && !a.rendezvous && !a.host_wait && flat_.cost_of(a.op).model == CostModel::compute;
  }
  [[nodiscard]] bool is_compute_stream(size_t stream) const {
    return compute_streams_[static_cast<size_t>(stream_stage_[stream])] == static_cast<int32_t>(stream);
  }
  // The compute stream `stream` started or stopped a kernel: its stage's side-stream kernels are re-rated.
  void compute_stream_changed(size_t stream) {
    if (t_.gpu.side_stream_memory_speed >= 1.0 || !is_compute_stream(stream)) return;
    for (const size_t st : running_of_stage_[static_cast<size_t>(stream_stage_[stream])]) {
      if (st != stream && runs_kernel(acts_[st])) fresh_.push_back(st);
    }
  }
  [[nodiscard]] double speed_of(size_t stream) const {
    const auto stage = static_cast<size_t>(stream_stage_[stream]);
    const size_t compute = static_cast<size_t>(compute_streams_[stage]);
    if (stream != compute && t_.gpu.side_stream_memory_speed < 1.0 && runs_kernel(acts_[stream]) &&
        runs_kernel(acts_[compute])) {
      return compute_speed_[stage] * t_.gpu.side_stream_memory_speed;
    }
    return compute_speed_[stage];
  }
  MemoryTracker& memory_of(BufferId b) { return memories_[static_cast<size_t>(s_.buffers[b].stage)]; }

  // An op allocates (at its start) or frees (at its end): the memory order records it, and so does the window a
  // replay copies.
  void note_memory_event(int32_t op, bool end) {
    if (!o_.record_memory_order) return;
    memory_order_.push_back(MemoryEvent{OpId(op), end});
    if (recording_) window_memory_order_.push_back(MemoryEvent{OpId(op), end});
  }

  // Gives a running activity a new rate: what it did at the old rate is booked, and its completion is rescheduled.
  void set_rate(size_t st, double rate, TimeNs now) {
    Activity& a = acts_[st];
    if (!a.active || a.in_latency || a.rendezvous || a.host_wait || rate == a.rate) return;
    a.remaining = std::max(0.0, a.remaining - a.rate * static_cast<double>(now - a.since));
    a.since = now;
    a.rate = rate;
    ++a.version;
    const double left = rate > 0 ? a.remaining / rate : 1e18;
    queue_.set(static_cast<int32_t>(st), now + static_cast<TimeNs>(std::ceil(left - 1e-6)), a.version);
  }

  // ---- Replaying repeated micro-batches ----------------------------------------------------------------------------
  // A step of many micro-batches runs the same ops over and over (sim/micro_batch_translation.h). The run is cut into
  // windows at boundaries: the first instant with no event left after micro-batch m's first op started. When the
  // engine's whole state at boundary m is its state at boundary m − 1 moved by one micro-batch (every op and buffer it
  // names moved, every time P later): what runs, at which rate with how much left, which events are pending when and
  // in which order, each stream's next op with its unfinished dependencies, the flows' rates, the SMs communication
  // holds, and each GPU's allocator block for block, then the engine, being deterministic, runs the next window as it
  // ran the last one, moved; and so every later window whose ops keep repeating. Those windows are written from the
  // recorded one (op starts and ends, memory samples, event counts), the state jumps to the end of the last of them,
  // and the engine simulates the rest. Reports are byte-identical to simulating every window (tests/sim/
  // replay_test.cpp checks it on every kind of schedule the builders make).

  struct StreamState {
    Activity act;
    int32_t head = -1;  // the op heading the stream; -1 once the stream is done
    char posted = 0;
    int32_t pending = 0;
    EventQueue::SlotView slot;
  };
  struct Boundary {
    int32_t micro_batch = -1;
    TimeNs time_ns = 0;
    uint64_t events = 0;
    std::vector<StreamState> streams;
    std::vector<double> rates;
    std::vector<int32_t> flow_of_stream;
    std::vector<double> compute_speed;
    std::vector<int32_t> comm_sms;
    std::vector<char> comm_running;
    std::vector<MemoryState> memories;
  };

  // The next boundary comes when `micro_batch`'s first op starts (none when -1 or past the last micro-batch).
  void arm_boundary(int32_t micro_batch) {
    boundary_op_ = micro_batch == 1   ? second_micro_batch_op_
                   : micro_batch >= 0 ? translation_.first_op(micro_batch)
                                      : -1;
    boundary_mb_ = boundary_op_ >= 0 ? micro_batch : -1;
  }

  [[nodiscard]] Boundary boundary_state(TimeNs now) const {
    Boundary b;
    b.micro_batch = boundary_mb_;
    b.time_ns = now;
    b.events = events_;
    b.streams.resize(acts_.size());
    for (size_t st = 0; st < acts_.size(); ++st) {
      StreamState& x = b.streams[st];
      x.act = acts_[st];
      x.head = head_[st] < flat_.streams[st].size() ? flat_.streams[st][head_[st]] : -1;
      if (x.head >= 0) {
        x.posted = posted_[static_cast<size_t>(x.head)];
        x.pending = pending_[static_cast<size_t>(x.head)];
      }
      x.slot = queue_.slot(st);
    }
    b.rates = rates_;
    b.flow_of_stream = flow_of_stream_;
    b.compute_speed = compute_speed_;
    b.comm_sms = comm_sms_;
    b.comm_running = comm_running_;
    b.memories.resize(memories_.size());
    for (size_t stage = 0; stage < memories_.size(); ++stage) memories_[stage].state(b.memories[stage]);
    return b;
  }

  // At a boundary: compares with the last one and replays what repeats; returns the time the run goes on from.
  TimeNs at_boundary(TimeNs now) {
    boundary_pending_ = false;
    // After an allocation failure the memory is counted outside the allocator: nothing is replayed from then on.
    for (const MemoryTracker& m : memories_) replay_enabled_ = replay_enabled_ && !m.oom().has_value();
    if (replay_enabled_ && !translation_built_) {
      translation_ = MicroBatchTranslation(s_, flat_, costs_);
      translation_built_ = true;
      // A schedule whose micro-batches never repeat (a pipeline's, whose stages interleave them) takes no snapshots.
      replay_enabled_ = translation_.any_repeats();
    }
    if (!replay_enabled_) {
      arm_boundary(-1);
      return now;
    }
    FSDPSIM_CHECK(!comm_changed_ && !flows_changed_, "a boundary follows a re-rating: no change waits to be rated");
    Boundary here = boundary_state(now);
    arm_boundary(boundary_mb_ + 1);
    if (last_boundary_ && last_boundary_->micro_batch + 1 == here.micro_batch) {
      const int32_t windows = repeatable_windows(*last_boundary_, here);
      if (windows > 0) {
        const TimeNs shift = replay(*last_boundary_, here, windows);
        last_boundary_.reset();
        recording_ = false;
        started_.clear();
        finished_.clear();
        window_memory_order_.clear();
        host_waited_ = false;
        arm_boundary(here.micro_batch + windows + 1);
        return now + shift;
      }
    }
    last_boundary_ = std::move(here);
    started_.clear();
    finished_.clear();
    window_memory_order_.clear();
    host_waited_ = false;
    recording_ = true;
    return now;
  }

  // How many windows after `cur` run as the one from `prev` to `cur` did, moved: 0 when the state did not repeat.
  [[nodiscard]] int32_t repeatable_windows(const Boundary& prev, const Boundary& cur) {
    // What stays put: a stream headed by the same op at both ends (a step-level op, or a later micro-batch's op that
    // waits on every one before it), and a buffer in the same block under the same name at both ends (one an early
    // op allocated for the whole step).
    for (size_t stage = 0; stage < prev.memories.size(); ++stage) {
      if (prev.memories[stage].layout != cur.memories[stage].layout) return 0;
    }
    // The micro-batches whose ops the window touched: started, ended, ran or headed a stream at either end, or
    // allocated a buffer live at either end. A step-level op must not start, end or run in it.
    int32_t lo = std::numeric_limits<int32_t>::max(), hi = -1;
    bool step_level = false;
    const auto touch = [&](int32_t op) {
      const int32_t m = translation_.micro_batch_of(op);
      step_level = step_level || m < 0;
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    };
    for (const auto& [op, t] : started_) touch(op);
    for (const auto& [op, t] : finished_) touch(op);
    waiting_ops_.clear();
    for (size_t st = 0; st < cur.streams.size(); ++st) {
      const StreamState &p = prev.streams[st], &c = cur.streams[st];
      if (p.act.active) touch(p.act.op);
      if (c.act.active) touch(c.act.op);
      if (p.head >= 0 && p.head == c.head) {
        waiting_ops_.push_back(p.head);
        continue;
      }
      if (p.head >= 0) touch(p.head);
      if (c.head >= 0) touch(c.head);
    }
    if (step_level) return 0;
    for (size_t stage = 0; stage < prev.memories.size(); ++stage) {
      const auto &pb = prev.memories[stage].block_buffers, &cb = cur.memories[stage].block_buffers;
      for (size_t k = 0; k < pb.size(); ++k) {
        if (pb[k] == cb[k]) continue;
        for (const BufferId b : {pb[k], cb[k]}) {
          const int32_t by = b.valid() ? translation_.allocating_op(b) : -1;
          if (by >= 0) touch(by);
        }
      }
    }
    if (hi < 0 || step_level || !translation_.repeats_all(lo, hi - lo + 1)) return 0;
    if (!state_repeats(prev, cur)) return 0;
    // The ops the window's ends told of (their dependents) outside those micro-batches only count down: they must
    // still wait after the last replayed window, as must the ops that stay put heading a stream. Had one become ready
    // inside a replayed window, it would have started there.
    for (const auto& [op, t] : finished_) {
      const FlatOp& r = flat_.ops[static_cast<size_t>(op)];
      for (int32_t i = r.dependents_begin; i < r.dependents_end; ++i) {
        const int32_t d = flat_.op_ids[static_cast<size_t>(i)];
        const int32_t m = translation_.micro_batch_of(d);
        if (m < lo || m > hi) waiting_ops_.push_back(d);
      }
    }
    std::sort(waiting_ops_.begin(), waiting_ops_.end());
    waiting_ops_.erase(std::unique(waiting_ops_.begin(), waiting_ops_.end()), waiting_ops_.end());
    int32_t windows = 1;
    while (translation_.repeats_all(lo, hi - lo + windows + 1)) ++windows;
    windows = host_paced_windows(prev, cur, windows);
    while (windows > 0 && !waiting_ops_still_wait(prev, cur, windows)) --windows;
    return windows;
  }

  // A window replays only where the host paced nothing: no op waited for its issue in the recorded window, and every
  // op the replay starts had been issued by the time it starts there (the host's walk per micro-batch may be longer
  // than the GPU's, and then it catches up with the GPU a few windows on).
  // Returns how many of `windows` qualify.
  [[nodiscard]] int32_t host_paced_windows(const Boundary& prev, const Boundary& cur, int32_t windows) const {
    if (host_.issue_ns.empty()) return windows;
    if (host_waited_) return 0;
    const TimeNs period = cur.time_ns - prev.time_ns;
    for (const auto& [op, t] : started_) {
      for (int32_t w = 1; w <= windows; ++w) {
        const int32_t moved = translation_.op_after(op, w);
        if (step_start_ + host_.issue_ns[static_cast<size_t>(moved)] > t + w * period) {
          windows = w - 1;
          break;
        }
      }
    }
    return windows;
  }

  // Where the stream's head goes after `windows` replayed windows (a head that stayed put stays).
  [[nodiscard]] size_t moved_head(const Boundary& prev, const Boundary& cur, size_t st, int32_t windows) const {
    const int32_t h = cur.streams[st].head;
    if (h < 0) return flat_.streams[st].size();
    if (prev.streams[st].head == h) return head_[st];
    return static_cast<size_t>(flat_.ops[static_cast<size_t>(translation_.op_after(h, windows))].position);
  }

  // The state at `cur` is the state at `prev` moved by one micro-batch and (cur − prev) nanoseconds.
  [[nodiscard]] bool state_repeats(const Boundary& prev, const Boundary& cur) const {
    const TimeNs tp = prev.time_ns, tc = cur.time_ns;
    for (size_t st = 0; st < prev.streams.size(); ++st) {
      const StreamState &p = prev.streams[st], &c = cur.streams[st];
      const Activity &a = p.act, &b = c.act;
      if (a.active != b.active) return false;
      if (a.host_wait || b.host_wait) return false;  // the host, not the GPU, paces this window
      if (a.active && (a.transfer != b.transfer || a.in_latency != b.in_latency || a.rendezvous != b.rendezvous ||
                       a.remaining != b.remaining || a.rate != b.rate || a.since - tp != b.since - tc ||
                       translation_.op_after(a.op, 1) != b.op)) {
        return false;
      }
      if ((p.head < 0) != (c.head < 0) || p.posted != c.posted) return false;
      if (p.head >= 0 && p.head == c.head) {
        if (p.pending == 0 || c.pending == 0) return false;  // it stays put only while it waits
      } else if (p.head >= 0 && (translation_.op_after(p.head, 1) != c.head || p.pending != c.pending)) {
        return false;
      }
      if (p.slot.live != c.slot.live) return false;
      if (p.slot.live && (p.slot.time_ns - tp != c.slot.time_ns - tc ||
                          (p.slot.version == a.version) != (c.slot.version == b.version))) {
        return false;
      }
    }
    // Events pending at the same time pop in the order they were set.
    const auto order = [](const Boundary& b) {
      std::vector<std::pair<uint64_t, size_t>> live;
      for (size_t st = 0; st < b.streams.size(); ++st) {
        if (b.streams[st].slot.live) live.emplace_back(b.streams[st].slot.sequence, st);
      }
      std::sort(live.begin(), live.end());
      std::vector<size_t> streams;
      for (const auto& [sequence, st] : live) streams.push_back(st);
      return streams;
    };
    if (order(prev) != order(cur)) return false;
    // (A boundary follows a re-rating, so no change is waiting to be rated at either end.)
    if (prev.rates != cur.rates || prev.flow_of_stream != cur.flow_of_stream ||
        prev.compute_speed != cur.compute_speed || prev.comm_sms != cur.comm_sms ||
        prev.comm_running != cur.comm_running) {
      return false;
    }
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
        if (pb.valid() && pb != cb && translation_.buffer_after(pb, 1) != cb) return false;
      }
    }
    return true;
  }

  // Every op in waiting_ops_ still has an unfinished dependency once `windows` more windows have run.
  [[nodiscard]] bool waiting_ops_still_wait(const Boundary& prev, const Boundary& cur, int32_t windows) {
    moved_head_.resize(flat_.streams.size());
    for (size_t st = 0; st < flat_.streams.size(); ++st) moved_head_[st] = moved_head(prev, cur, st, windows);
    return std::all_of(waiting_ops_.begin(), waiting_ops_.end(),
                       [&](int32_t op) { return unfinished_deps(op, moved_head_) > 0; });
  }

  // How many of `op`'s dependencies are not finished when each stream's head is at `heads` (an op is finished once
  // its stream's head has passed it).
  [[nodiscard]] int32_t unfinished_deps(int32_t op, const std::vector<size_t>& heads) const {
    int32_t unfinished = 0;
    const FlatOp& r = flat_.ops[static_cast<size_t>(op)];
    for (int32_t i = r.deps_begin; i < r.deps_end; ++i) {
      const FlatOp& d = flat_.ops[static_cast<size_t>(flat_.op_ids[static_cast<size_t>(i)])];
      unfinished += static_cast<size_t>(d.position) >= heads[static_cast<size_t>(d.stream)] ? 1 : 0;
    }
    return unfinished;
  }

  // Writes `windows` windows after `cur` as moved copies of the one from `prev` to `cur`, and moves the state to the
  // end of the last; returns how far it moved in time.
  TimeNs replay(const Boundary& prev, const Boundary& cur, int32_t windows) {
    const TimeNs period = cur.time_ns - prev.time_ns;
    std::vector<OpTiming>& timings = *timings_;
    for (int32_t i = 1; i <= windows; ++i) {
      const TimeNs shift = i * period;
      for (const auto& [op, t] : started_)
        timings[static_cast<size_t>(translation_.op_after(op, i))].start_ns = t + shift;
      for (const auto& [op, t] : finished_)
        timings[static_cast<size_t>(translation_.op_after(op, i))].end_ns = t + shift;
      for (const MemoryEvent& e : window_memory_order_)
        memory_order_.push_back(MemoryEvent{OpId(translation_.op_after(e.op.value(), i)), e.end});
    }
    const TimeNs shift = windows * period;
    events_ += static_cast<uint64_t>(windows) * (cur.events - prev.events);
    replayed_windows_ += static_cast<uint64_t>(windows);
    for (size_t stage = 0; stage < memories_.size(); ++stage) {
      MemoryTracker& memory = memories_[stage];
      const size_t begin = prev.memories[stage].timeline_samples, end = cur.memories[stage].timeline_samples;
      for (int32_t i = 1; i <= windows; ++i) memory.repeat_samples(begin, end, i * period);
      std::vector<BufferId> from, to;
      const auto &pb = prev.memories[stage].block_buffers, &cb = cur.memories[stage].block_buffers;
      for (size_t k = 0; k < cb.size(); ++k) {
        if (!cb[k].valid() || cb[k] == pb[k]) continue;
        from.push_back(cb[k]);
        to.push_back(translation_.buffer_after(cb[k], windows));
      }
      memory.rename_live(from, to);
    }
    for (size_t st = 0; st < flat_.streams.size(); ++st) {
      const size_t head = moved_head(prev, cur, st, windows);
      if (head != head_[st] && cur.streams[st].posted) posted_[static_cast<size_t>(flat_.streams[st][head])] = 1;
      head_[st] = head;
      Activity& a = acts_[st];
      if (!a.active) continue;
      const int32_t running = translation_.op_after(a.op, windows);
      timings[static_cast<size_t>(running)].start_ns = timings[static_cast<size_t>(a.op)].start_ns + shift;
      a.op = running;
      a.since += shift;
    }
    queue_.shift(shift);
    // Each op not yet finished waits for its dependencies not yet finished.
    for (size_t st = 0; st < flat_.streams.size(); ++st) {
      for (size_t p = head_[st]; p < flat_.streams[st].size(); ++p) {
        const int32_t op = flat_.streams[st][p];
        pending_[static_cast<size_t>(op)] = unfinished_deps(op, head_);
      }
    }
    return shift;
  }

  void check_finished() const {
    for (size_t st = 0; st < flat_.streams.size(); ++st) {
      if (head_[st] >= flat_.streams[st].size()) continue;
      const int32_t op = flat_.streams[st][head_[st]];
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
  OpCostTable costs_;
  MemoryOverheads overheads_;
  std::vector<FlowLink> links_;
  std::vector<MemoryTracker> memories_;  // per pipeline stage
  std::vector<int32_t> stream_stage_;    // per stream: its pipeline stage
  FlatOps flat_;
  std::vector<size_t> head_;
  std::vector<int32_t> pending_;
  std::vector<Activity> acts_;
  std::vector<OpTiming>* timings_ = nullptr;
  EventQueue queue_;
  MaxMinSolver solver_;
  std::vector<Flow> flows_;
  std::vector<size_t> flow_streams_;                                    // the stream of each of flows_
  std::unordered_map<uint64_t, std::vector<double>> rates_of_classes_;  // solve_flows: rates by the flows' classes
  std::vector<double> rates_;
  std::vector<int32_t> flow_of_stream_;
  std::vector<std::vector<size_t>> running_of_stage_;  // per stage: streams whose activity is active, ascending
  // The running sends (a transfer with a peer): their stream and the stages of their two ends.
  struct RunningSend {
    size_t stream = 0;
    size_t here = 0, there = 0;
  };
  std::vector<RunningSend> running_sends_;
  std::vector<size_t> changed_;           // rerate_changed_stages: the running streams it re-rates
  std::vector<size_t> fresh_;             // streams whose compute op started since the last re-rating
  std::vector<size_t> to_check_;          // streams whose head may be able to start
  bool comm_changed_ = true;              // the set of running communication changed since the last re-rating
  bool flows_changed_ = true;             // ... and with it the set of flowing transfers (what the solver sees)
  std::vector<double> compute_speed_;     // per stage
  std::vector<int32_t> comm_sms_;         // per stage: SMs communication kernels hold
  std::vector<char> stage_changed_;       // per stage: its running communication changed since the last re-rating
  std::vector<char> comm_running_;        // per stage
  std::vector<char> posted_;              // per op: a send or recv waiting for its peer
  std::vector<int32_t> compute_streams_;  // per stage
  int32_t step_ = 0;
  TimeNs step_start_ = 0;
  uint64_t events_ = 0;
  HostTimeline host_;         // when the host has issued each op, from its step's start (no issue times: no model)
  bool host_waited_ = false;  // an op waited for the host since the last boundary
  // Replaying repeated micro-batches.
  MicroBatchTranslation translation_;
  bool replay_enabled_ = false;
  bool translation_built_ = false;
  int32_t second_micro_batch_op_ = -1;  // the first op of micro-batch 1: the first boundary
  uint64_t replayed_windows_ = 0;
  int32_t boundary_op_ = -1;       // the op whose start makes the next boundary
  int32_t boundary_mb_ = -1;       // its micro-batch
  bool boundary_pending_ = false;  // it started; the boundary is the first instant with no event left
  bool recording_ = false;         // record starts and ends since the last boundary
  std::vector<std::pair<int32_t, TimeNs>> started_, finished_;
  std::vector<MemoryEvent> window_memory_order_;  // the memory events since the last boundary (record_memory_order)
  std::vector<MemoryEvent> memory_order_;         // this step's memory events, in order (record_memory_order)
  std::optional<Boundary> last_boundary_;
  std::vector<int32_t> waiting_ops_;  // repeatable_windows: ops that must still wait after the replayed windows
  std::vector<size_t> moved_head_;    // waiting_ops_still_wait: each stream's head after the replayed windows
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
  return Engine(schedule, rank, options, cost_and_flatten(schedule, rank),
                link_capacities(rank, std::max(1, schedule.info.pipeline_stages)))
      .run();
}

RunRecord run_schedule_with_costs(const Schedule& schedule, const Topology& topology, const SimOptions& options,
                                  std::vector<OpCost> costs, std::vector<double> link_caps) {
  OpCostTable table(std::move(costs));
  FlatOps flat = flatten_ops(schedule, table);
  return Engine(schedule, topology, options, CostedOps{.costs = std::move(table), .flat = std::move(flat)}, link_caps)
      .run();
}

}  // namespace fsdpsim
