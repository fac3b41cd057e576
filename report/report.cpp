#include "report/report.h"

#include "common/text.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "common/int_math.h"
#include "common/text.h"
#include "run/bus_bandwidth.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

std::string kind_label(const Schedule& s, const Op& op) {
  const std::string& stream = s.streams[op.stream].name;
  if (is_collective(op.kind)) return std::string(to_string(op.kind));
  if (op.kind == OpKind::copy && (op.send_bytes > 0 || op.recv_bytes > 0)) return "offload";
  if (op.kind == OpKind::sync) return "sync";
  return op.stream == s.compute_stream(s.stage_of(op)) ? std::string(kComputeStream)
                                                       : stream + " stream";  // e.g. grad_accum after a reduce-scatter
}

// The exposure maps' entries, each looked up once per label rather than once per gap: a step of 128 micro-batches
// has tens of thousands of gaps and compute-stream collectives, and a label is a string. A cached slot is the map's
// own entry (std::map keeps references stable), so the sums are the map's, added in the same order.
class ExposureSlots {
 public:
  ExposureSlots(const Schedule& s, Report& r) : s_(s), r_(r), by_stream_(s.streams.size(), nullptr) {}

  double& phase(Phase p) {
    double*& slot = by_phase_.at(static_cast<size_t>(p));
    if (slot == nullptr) slot = &r_.exposed_comm_by_phase_s[std::string(to_string(p))];
    return *slot;
  }
  // The kind_label of a blocker: its collective kind, offload, sync, or the stream it ran on.
  double& blocker(const Op& op) {
    if (is_collective(op.kind)) return cached(by_kind_.at(static_cast<size_t>(op.kind)), op);
    if (op.kind == OpKind::copy && (op.send_bytes > 0 || op.recv_bytes > 0)) return cached(offload_, op);
    if (op.kind == OpKind::sync) return cached(sync_, op);
    return cached(by_stream_.at(op.stream.index()), op);
  }
  double& start() {
    if (start_ == nullptr) start_ = &r_.exposed_comm_by_kind_s["start"];
    return *start_;
  }
  double& on_compute_stream(OpKind kind) {
    double*& slot = on_compute_.at(static_cast<size_t>(kind));
    if (slot == nullptr) slot = &r_.exposed_comm_by_kind_s[std::string(to_string(kind)) + " (on compute stream)"];
    return *slot;
  }

 private:
  double& cached(double*& slot, const Op& op) {
    if (slot == nullptr) slot = &r_.exposed_comm_by_kind_s[kind_label(s_, op)];
    return *slot;
  }
  const Schedule& s_;
  Report& r_;
  std::array<double*, 4> by_phase_{};
  std::array<double*, kOpKindCount> by_kind_{}, on_compute_{};
  double* offload_ = nullptr;
  double* sync_ = nullptr;
  double* start_ = nullptr;
  std::vector<double*> by_stream_;  // a blocker that is compute or other stream work, by its stream
};

// Keeps the longest waits, longest first and equal ones in the order they came: what a stable sort of every wait
// would keep, without holding each gap of a long step.
void keep_longest(std::vector<ComputeWait>& longest, const ComputeWait& wait) {
  constexpr size_t kKept = 8;
  if (longest.size() == kKept && wait.wait_ns <= longest.back().wait_ns) return;
  const auto at = std::upper_bound(longest.begin(), longest.end(), wait,
                                   [](const ComputeWait& a, const ComputeWait& b) { return a.wait_ns > b.wait_ns; });
  longest.insert(at, wait);
  if (longest.size() > kKept) longest.pop_back();
}

// The dependency of `op` that finished last: what a gap before it waited for.
OpId last_finished_dependency(const Op& op, const StepRun& step) {
  OpId blocker;
  for (const OpId d : op.deps) {
    if (!blocker.valid() || step.ops[d].end_ns > step.ops[blocker].end_ns) blocker = d;
  }
  return blocker;
}

// The part of the gap before `op` (its stream free since `prev_end`) that its stage's host kept it waiting: an op that
// started when the host issued it, after its stream and `blocker` were done, waited for the host from the later of
// those; the rest of the gap is the blocker's.
TimeNs host_wait_ns(const Op& op, const StepRun& step, TimeNs prev_end, OpId blocker,
                    const std::vector<TimeNs>* issued) {
  const OpTiming& t = step.ops[op.id];
  if (issued == nullptr || t.start_ns != step.start_ns + (*issued)[op.id.index()]) return 0;
  const TimeNs ready = std::max(prev_end, blocker.valid() ? step.ops[blocker].end_ns : prev_end);
  return std::clamp<TimeNs>(t.start_ns - ready, 0, t.start_ns - prev_end);
}

// Each stage's bubble: the gaps on its compute stream that waited for a send or receive, less what its host kept
// them waiting, counted as add_exposure counts stage 0's.
std::vector<double> stage_bubbles_s(const Schedule& s, const StepRun& step, const std::vector<TimeNs>* issued) {
  const auto stages = static_cast<size_t>(std::max(1, s.info.pipeline_stages));
  std::vector<double> bubble(stages, 0.0);
  std::vector<TimeNs> prev_end(stages, step.start_ns);
  std::vector<int32_t> stage_of_stream(s.streams.size(), -1);
  for (size_t k = 0; k < stages; ++k)
    stage_of_stream[s.compute_stream(static_cast<int32_t>(k)).index()] = static_cast<int32_t>(k);
  for (const Op& op : s.ops) {
    const int32_t k = stage_of_stream[op.stream.index()];
    if (k < 0) continue;
    const OpTiming& t = step.ops[op.id];
    TimeNs& end = prev_end[static_cast<size_t>(k)];
    if (t.start_ns > end) {
      const OpId blocker = last_finished_dependency(op, step);
      if (blocker.valid() && is_p2p(s.ops[blocker].kind)) {
        const TimeNs waited = t.start_ns - end - host_wait_ns(op, step, end, blocker, issued);
        bubble[static_cast<size_t>(k)] += static_cast<double>(waited) / 1e9;
      }
    }
    end = std::max(end, t.end_ns);
  }
  return bubble;
}

// Gaps on the compute stream, each attributed to the dependency that finished last, and collectives that run on
// the compute stream itself (TP/CP/EP): both are communication the compute stream waits for.
void add_exposure(const Schedule& s, const RunRecord& run, const StepRun& step, Report& r) {
  const StreamId compute = s.compute_stream();
  const Prediction* prediction = run.prediction();
  const std::vector<TimeNs>* issued =
      prediction != nullptr && !prediction->host_issue_ns.empty() ? &prediction->host_issue_ns : nullptr;
  TimeNs prev_end = step.start_ns;
  std::vector<ComputeWait> waits;
  ExposureSlots slots(s, r);
  for (const Op& op : s.ops) {
    if (op.stream != compute) continue;
    const OpTiming& t = step.ops[op.id];
    const TimeNs gap = t.start_ns - prev_end;
    const OpId blocker = gap > 0 ? last_finished_dependency(op, step) : OpId::none();
    // The part of the gap the host kept the op waiting is the CPU's; the rest (`waited`) what the blocker did.
    TimeNs host = 0;
    if (gap > 0) {
      host = host_wait_ns(op, step, prev_end, blocker, issued);
      r.host_bound_s += static_cast<double>(host) / 1e9;
      const bool host_paced = 2 * host > gap;
      keep_longest(waits, ComputeWait{op.id, host_paced ? OpId::none() : blocker, gap, host_paced});
    }
    const TimeNs waited = gap - host;
    if (waited > 0) {
      if (blocker.valid() && is_p2p(s.ops[blocker].kind)) {
        // Waiting for another stage's activations or gradients: the pipeline bubble, not FSDP communication.
        r.pipeline_bubble_s += static_cast<double>(waited) / 1e9;
        prev_end = std::max(prev_end, t.end_ns);
        continue;
      }
      r.exposed_comm_s += static_cast<double>(waited) / 1e9;
      slots.phase(op.phase) += static_cast<double>(waited) / 1e9;
      (blocker.valid() ? slots.blocker(s.ops[blocker]) : slots.start()) += static_cast<double>(waited) / 1e9;
    }
    if (is_collective(op.kind)) {
      const double d = static_cast<double>(t.end_ns - t.start_ns) / 1e9;
      r.exposed_comm_s += d;
      slots.phase(op.phase) += d;
      slots.on_compute_stream(op.kind) += d;
    }
    prev_end = std::max(prev_end, t.end_ns);
  }
  r.longest_waits = waits;
  for (const auto& w : waits) {
    r.longest_wait_lines.push_back(format_time_ns(w.wait_ns) + "  " + s.ops[w.op].name + " waited for " +
                                   (w.host              ? std::string("the host to issue it")
                                    : w.blocker.valid() ? s.ops[w.blocker].name
                                                        : std::string("the step start")));
  }
}

void add_collectives(const Schedule& s, const Topology& t, const RunRecord& run, Report& r) {
  const StepRun& step = run.steps.back();
  std::map<std::pair<OpKind, GroupId>, size_t> index;
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind)) continue;
    const auto key = std::make_pair(op.kind, op.group);
    auto it = index.find(key);
    if (it == index.end()) {
      const Group& g = s.groups[op.group];
      const GroupPlacement p = place_group(t, s.info.world_size, g.size, g.stride);
      r.collectives.push_back(CollectiveTotals{.kind = op.kind,
                                               .group = g.name,
                                               .ranks = g.size,
                                               .domains = p.domains,
                                               .count = 0,
                                               .size_bytes = 0,
                                               .busy_ns = 0,
                                               .algorithm = "",
                                               .busbw_bytes_per_s = 0});
      it = index.emplace(key, r.collectives.size() - 1).first;
    }
    CollectiveTotals& c = r.collectives[it->second];
    const OpTiming& timing = step.ops[op.id];
    ++c.count;
    c.busy_ns += timing.end_ns - timing.start_ns;
    if (collective_size_bytes(op) > c.size_bytes) {
      c.size_bytes = collective_size_bytes(op);
      if (const Prediction* predicted = run.prediction()) {
        const CollectiveChoice& choice = predicted->collectives[op.id.index()];
        c.algorithm = std::string(choice.algorithm) + "/" + std::string(choice.protocol);
        c.busbw_bytes_per_s = choice.busbw_bytes_per_s;
      } else {
        // A measured run: the busbw nccl-tests would print for this call's measured time.
        const double seconds = static_cast<double>(timing.end_ns - timing.start_ns) / 1e9;
        c.algorithm = "measured";
        c.busbw_bytes_per_s = busbw_bytes_per_s(op.kind, c.size_bytes, c.ranks, seconds);
      }
    }
  }
}

// CPU offload: the activations one GPU keeps in host memory at once. FSDP runs the micro-batches one after another,
// each reloading what it offloaded before the next starts, so the largest micro-batch's offloaded bytes are the peak.
void add_host_offload(const Schedule& s, const Topology& t, Report& r) {
  std::map<int32_t, int64_t> per_micro_batch;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::copy || op.send_bytes <= 0) continue;
    if (s.streams[op.stream].name != to_string(StreamRole::offload)) continue;
    per_micro_batch[op.micro_batch] += op.send_bytes;
  }
  for (const auto& [mb, bytes] : per_micro_batch)
    r.host_offload_bytes_per_gpu = std::max(r.host_offload_bytes_per_gpu, bytes);
  r.host_offload_bytes_per_node = r.host_offload_bytes_per_gpu * t.gpus_per_node;
  r.host_memory_bytes = t.host_memory_bytes;
  r.host_bw_per_gpu_bytes_per_s = t.host_bw_per_gpu_bytes_per_s();
  r.gpus_per_host_link = t.gpus_per_host_link;
}

void add_memory(const Schedule& s, const Topology& t, const RunRecord& run, double margin, Report& r) {
  const StepRun& steady = run.steps.back();
  const StepRun& first = run.steps.front();
  r.gpu_memory_bytes = t.gpu.hbm_bytes;
  if (const Prediction* predicted = run.prediction()) r.overheads = predicted->overheads;
  const Measurement* measured = run.measurement();
  if (measured != nullptr && measured->device_memory) {
    // A GPU run states its overheads and its GPU's memory as measured, not as the profile gives them.
    r.overheads = measured->device_memory->overheads;
    r.overheads_measured = true;
    r.executor_scratch_bytes = measured->device_memory->executor_scratch_bytes;
    r.gpu_memory_bytes = measured->device_memory->device_total_bytes;
  }
  r.peak_allocated_bytes = steady.peak_allocated.bytes;
  r.peak_reserved_bytes = 0;
  for (const auto& st : run.steps) r.peak_reserved_bytes = std::max(r.peak_reserved_bytes, st.peak_reserved.bytes);
  r.first_step_peak_reserved_bytes = first.peak_reserved.bytes;
  // What the caching allocator holds beyond the allocated peak: block rounding, per-stream pools, split blocks.
  r.fragmentation_bytes = std::max<int64_t>(0, r.peak_reserved_bytes - r.peak_allocated_bytes);
  r.cuda_malloc_calls_first_step = first.cuda_malloc_calls;
  r.peak_time_s = static_cast<double>(steady.peak_allocated.time_ns - steady.start_ns) / 1e9;
  if (steady.peak_allocated.op.valid()) {
    const Op& op = s.ops[steady.peak_allocated.op];
    r.peak_op = op.name;
    r.peak_phase = std::string(to_string(op.phase));
  }
  int64_t categorised = 0;
  for (const BufferCategory c : all_buffer_categories()) {
    const int64_t bytes = steady.peak_allocated.breakdown[static_cast<size_t>(c)];
    r.memory_breakdown[std::string(to_string(c))] = bytes;
    categorised += bytes;
  }
  // The caching allocator counts each block at its size, not the request's: rounded up to 512 B, or the whole block
  // when the remainder is too small to split off (PyTorch's c10/cuda/CUDACachingAllocator.cpp: round_size,
  // should_split). That difference is part of the allocated peak too.
  r.memory_breakdown["allocator_rounding"] = std::max<int64_t>(0, steady.peak_allocated.bytes - categorised);
  for (const Buffer& b : s.buffers) {
    if (!b.persistent || b.stage != run.memory_stage) continue;  // the fullest pipeline stage's GPU
    r.persistent_bytes[std::string(to_string(b.category))] += b.size_bytes;
    r.persistent_total_bytes += b.size_bytes;
  }
  r.memory_breakdown["cuda_context"] = r.overheads.cuda_context_bytes;
  r.memory_breakdown["cublas_workspace"] = r.overheads.cublas_workspace_bytes;
  r.memory_breakdown["nccl"] = r.overheads.nccl_bytes + r.overheads.nccl_registration_bytes;
  const int64_t needed = r.peak_reserved_bytes + r.overheads.total();
  const bool predicted = run.prediction() != nullptr;
  add_host_offload(s, t, r);
  r.memory = with_host_memory(memory_verdict(needed, r.gpu_memory_bytes, run.oom.has_value(), margin,
                                             predicted ? published_error_bands().memory : ErrorBand{}),
                              r.host_offload_bytes_per_node, r.host_memory_bytes);
  if (run.oom) {
    const OomEvent& e = *run.oom;
    r.oom = true;
    r.oom_reason = "allocating " + format_bytes(e.request_bytes) + " for " + s.buffers[e.buffer].name + " in " +
                   (e.op.valid() ? s.ops[e.op].name : std::string("setup")) + " (step " + std::to_string(e.step + 1) +
                   ") fails with " + format_bytes(e.reserved_bytes) + " reserved";
  } else if (needed > r.gpu_memory_bytes) {
    r.oom = true;
    r.oom_reason = "peak reserved " + format_bytes(r.peak_reserved_bytes) + " + overheads " +
                   format_bytes(r.overheads.total()) + " exceeds the GPU's " + format_bytes(r.gpu_memory_bytes);
  } else if (r.memory.fit == MemoryFit::out_of_memory) {
    r.oom = true;
    r.oom_reason = "offloaded activations need " + format_bytes(r.host_offload_bytes_per_node) +
                   " of host memory per node (" + std::to_string(t.gpus_per_node) + " GPUs × " +
                   format_bytes(r.host_offload_bytes_per_gpu) + "), more than its " + format_bytes(r.host_memory_bytes);
  }
}

// "the busiest expert-parallel rank (1.5× the mean token-expert pairs)", "a straggler (compute 1.11× slower)".
std::string simulated_rank_text(const Schedule& s, const RunRecord& run) {
  std::vector<std::string> parts;
  if (s.info.moe_routing_skew != 1.0) {
    parts.push_back("the busiest expert-parallel rank (" + shortest_decimal(s.info.moe_routing_skew) +
                    "× the mean token-expert pairs)");
  }
  if (const Prediction* predicted = run.prediction(); predicted != nullptr && predicted->straggler.any()) {
    std::vector<std::string> slow;
    if (predicted->straggler.compute_slowdown != 1.0) {
      slow.push_back("compute " + shortest_decimal(predicted->straggler.compute_slowdown) + "× slower");
    }
    if (predicted->straggler.nic_slowdown != 1.0) {
      slow.push_back("NICs " + shortest_decimal(predicted->straggler.nic_slowdown) + "× slower");
    }
    parts.push_back("a straggler (" + join(slow, ", ") + ")");
  }
  return join(parts, " that is also ");
}

}  // namespace

Report make_report(const Schedule& s, const Topology& t, const RunRecord& run, ReportDetail detail,
                   double memory_margin) {
  Report r;
  r.model = s.info.model;
  r.implementation = s.info.implementation;
  r.strategy = s.info.strategy;
  r.topology = t.name;
  r.gpu = t.gpu.name;
  r.world_size = s.info.world_size;
  const int32_t per_node = std::max(1, t.gpus_per_node);
  r.nodes = static_cast<int32_t>(ceil_div(s.info.world_size, per_node));  // a partial last node counts
  r.micro_batches = s.info.micro_batches;
  r.model_size = model_size(s);
  r.events = run.events;
  if (const Measurement* measured = run.measurement()) {
    r.source = "fsdpsim exec (" + measured->backend + ", " + measured->device + ")";
    r.collectives_emulated = measured->collectives_emulated;
  }
  const StepRun& steady = run.steps.back();
  const double step_s = static_cast<double>(steady.end_ns - steady.start_ns) / 1e9;
  r.step_time_s = step_s;
  r.first_step_time_s = static_cast<double>(run.steps.front().end_ns - run.steps.front().start_ns) / 1e9;
  if (step_s > 0) {
    r.tokens_per_s_per_gpu = static_cast<double>(s.info.global_tokens_per_step) / s.info.world_size / step_s;
    r.tflops_per_gpu = static_cast<double>(s.info.model_flops_per_gpu) / step_s / 1e12;
    r.mfu = static_cast<double>(s.info.model_flops_per_gpu) / step_s / t.gpu.dense_bf16_flops_per_s;
  }
  r.pipeline_stages = s.info.pipeline_stages;
  r.virtual_stages = s.info.virtual_stages;
  r.pipeline_schedule = s.info.pipeline_schedule;
  r.memory_stage = run.memory_stage;
  for (const StagePeaks& p : steady.stage_peaks) {
    r.stage_peak_allocated_bytes.push_back(p.allocated.bytes);
    r.stage_peak_reserved_bytes.push_back(p.reserved.bytes);
  }
  add_exposure(s, run, steady, r);
  if (const Prediction* p = run.prediction(); p != nullptr && p->host_step_ns > 0) {
    r.host_walk_s = static_cast<double>(p->host_step_ns) / 1e9;
    r.host_kernels_per_step = p->host_kernels_per_step;
    r.host_dispatch = std::string(to_string(s.info.host_dispatch));
  }
  if (r.pipeline_stages > 1) {
    const Prediction* p = run.prediction();
    r.pipeline_stage_bubble_s =
        stage_bubbles_s(s, steady, p != nullptr && !p->host_issue_ns.empty() ? &p->host_issue_ns : nullptr);
  }
  r.simulated_rank = simulated_rank_text(s, run);
  add_memory(s, t, run, memory_margin, r);
  r.memory.rank = r.simulated_rank;
  if (r.pipeline_stages > 1) {
    const std::string stage = "pipeline stage " + std::to_string(r.memory_stage);
    r.memory.rank = r.memory.rank.empty() ? stage : r.memory.rank + ", " + stage;
  }
  const ErrorBand throughput = run.prediction() != nullptr ? published_error_bands().throughput : ErrorBand{};
  r.tokens_per_s_band_low = r.tokens_per_s_per_gpu * (throughput.runs > 0 ? throughput.low_ratio : 1.0);
  r.tokens_per_s_band_high = r.tokens_per_s_per_gpu * (throughput.runs > 0 ? throughput.high_ratio : 1.0);
  if (detail == ReportDetail::summary) return r;
  add_collectives(s, t, run, r);
  for (const Op& op : s.ops) {
    const OpTiming& timing = steady.ops[op.id];
    r.ops.push_back(OpRecord{op.id, op.name, op.kind, op.phase, s.streams[op.stream].name,
                             timing.start_ns - steady.start_ns, timing.end_ns - timing.start_ns});
  }
  return r;
}

}  // namespace fsdpsim
