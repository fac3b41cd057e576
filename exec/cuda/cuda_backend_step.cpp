// CudaBackend: one step — events, stream-ordered allocation and release, waiting for the streams, and what the step
// measured (op times, pool peaks, #wrong counts).
#include <chrono>
#include <cmath>
#include <thread>

#include "common/units.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/runtime/cuda_check.h"
#include "memory/replay_peak.h"

namespace fsdpsim {
namespace {

// How often the host looks at the streams while a step drains: short next to any real step, long enough not to
// spin a core flat out.
constexpr auto kPollInterval = std::chrono::microseconds(50);

TimeNs elapsed_ns(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  FSDPSIM_CUDA(cudaEventElapsedTime(&ms, from, to));
  return static_cast<TimeNs>(std::llround(static_cast<double>(ms) * 1e6));
}

uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  uint64_t value = 0;  // cuuint64_t
  FSDPSIM_CUDA(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

}  // namespace

void CudaBackend::begin_step(int32_t step) {
  step_ = step;
  current_op_ = {};
  issued_ = 0;
  cudaStream_t first = streams_.front().stream;
  if (wrong_ != nullptr) {
    FSDPSIM_CUDA(cudaMemsetAsync(wrong_, 0, schedule_->ops.size() * sizeof(unsigned long long), first));
  }
  // Resetting a high-water mark sets it to the memory in use now (the persistent buffers): each step reports its own.
  uint64_t zero = 0;
  FSDPSIM_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
  FSDPSIM_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero));
  start_with_the_other_stages(first);
  FSDPSIM_CUDA(cudaEventRecord(step_start_, first));
  for (size_t s = 1; s < streams_.size(); ++s) FSDPSIM_CUDA(cudaStreamWaitEvent(streams_[s].stream, step_start_, 0));
}

// The stages of a pipeline are separate GPUs, each timing its ops from its own step-start event. The simulator starts
// every stage at the step's start; so does the executor, by starting each step with a one-byte all-reduce over the
// world, after which every GPU records its step start within the all-reduce's latency (microseconds) of the others.
// Without it a stage that finished the previous step early would start timing long before its first receive.
void CudaBackend::start_with_the_other_stages(cudaStream_t stream) {
  step_gate_issued_.reset();
  if (setup_.stage < 0 || probe_ == nullptr || !groups_.has_communicators()) return;
  groups_.enqueue(
      GroupId::none(), IssuedOp{},
      [&](ncclComm_t world) { return ncclAllReduce(probe_, probe_, 1, ncclInt8, ncclSum, world, stream); },
      nccl_wait("the all-reduce that starts step " + std::to_string(step_) + " on every stage together"));
  // The previous step has drained, so the all-reduce starts on the device as it is issued.
  step_gate_issued_ = std::chrono::steady_clock::now();
}

// A stage that never reaches this step's aligning all-reduce (its process died, or hangs before it) holds every other
// stage at the step's start, where no watched op has started: time it out as the watchdog times out a collective.
void CudaBackend::check_step_gate() {
  if (!step_gate_issued_ || cudaEventQuery(step_start_) != cudaErrorNotReady) return;
  const auto waited = std::chrono::steady_clock::now() - *step_gate_issued_;
  const TimeNs waited_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count();
  if (setup_.collective_timeout_ns <= 0 || waited_ns < setup_.collective_timeout_ns) return;
  const std::string message = "rank " + std::to_string(setup_.rank) + " (stage " + std::to_string(setup_.stage) +
                              ") waited " + std::to_string(waited_ns / 1'000'000'000) +
                              " s for the all-reduce that starts step " + std::to_string(step_) +
                              " on every stage together: a stage did not reach that step";
  if (watchdog_ != nullptr) {
    const WatchdogFault f = watchdog_->raise(CudaFault::collective_timeout, message);
    throw CudaError(f.message, f.kind);
  }
  throw CudaError(message, CudaFault::collective_timeout);
}

void CudaBackend::wait(StreamId stream, OpId op) {
  FSDPSIM_CUDA(cudaStreamWaitEvent(streams_[stream.index()].stream, end_events_[op.index()], 0));
}

void CudaBackend::mark_start(const Op& op) {
  current_op_ = op.id;
  // Every rank issues the same ops in the same order: step·(ops + 1) + the place in that order tells, for any two
  // ranks, whether one has issued an op the other is waiting in.
  const auto position = static_cast<int64_t>(step_) * static_cast<int64_t>(schedule_->ops.size() + 1) + ++issued_;
  positions_[op.id.index()] = position;
  if (setup_.board != nullptr) setup_.board->record(setup_.rank, position);
  FSDPSIM_CUDA(cudaEventRecord(start_events_[op.id.index()], streams_[op.stream.index()].stream));
}

void CudaBackend::mark_end(const Op& op) {
  const auto i = op.id.index();
  FSDPSIM_CUDA(cudaEventRecord(end_events_[i], streams_[op.stream.index()].stream));
  const bool communicates =
      (is_collective(op.kind) && comm_.ops[i].count > 0) || (is_p2p(op.kind) && p2p_.ops[i].bytes > 0);
  if (watchdog_ != nullptr && communicates) {
    watchdog_->watch(op.id, step_, positions_[i], start_events_[i], end_events_[i]);
  }
}

void CudaBackend::allocate(BufferId buffer, StreamId stream) {
  const Buffer& b = schedule_->buffers[buffer];
  // Persistent buffers live from setup; registered ones are held for the whole run (ncclMemAlloc is not stream-
  // ordered and registration is collective), so for them an IR allocation changes nothing on the device.
  if (b.persistent || b.nccl_registered || b.size_bytes <= 0) return;
  char*& p = pointers_[buffer.index()];
  if (p != nullptr) {
    problem(schedule_->ops[current_op_], "allocates buffer '" + b.name + "', which is still live");
    return;
  }
  void* memory = nullptr;
  const cudaError_t e =
      cudaMallocFromPoolAsync(&memory, static_cast<size_t>(b.size_bytes), pool_, streams_[stream.index()].stream);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky, but leave no error behind for the teardown's checks
    out_of_memory(buffer, "cudaMallocFromPoolAsync on stream '" + schedule_->streams[stream].name + "'");
  }
  if (e != cudaSuccess) throw_cuda_error(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  p = static_cast<char*>(memory);
  note_allocated(buffer, true);
}

void CudaBackend::release(BufferId buffer, StreamId stream) {
  const Buffer& b = schedule_->buffers[buffer];
  if (b.persistent || b.nccl_registered) return;
  char*& p = pointers_[buffer.index()];
  if (p == nullptr) return;
  cudaStream_t s = streams_[stream.index()].stream;
  FSDPSIM_CUDA(cudaFreeAsync(p, s));
  p = nullptr;
  note_allocated(buffer, false);
  // The op's end event moves past its releases (the IR releases `frees` when the op ends): a stream that waits for
  // the op then also follows the release, so the pool may hand the memory to that stream along the IR's own
  // dependency (cudaMemPoolReuseFollowEventDependencies) instead of growing because the host ran ahead.
  if (current_op_.valid()) FSDPSIM_CUDA(cudaEventRecord(end_events_[current_op_.index()], s));
}

StepMeasurement CudaBackend::end_step() {
  wait_for_streams();
  StepMeasurement m;
  read_times(m);
  // Registered buffers are outside the pool and held throughout: they count as live for the whole step.
  const int64_t registered = groups_.registered_bytes();
  m.peak_allocated_bytes = static_cast<int64_t>(pool_attribute(pool_, cudaMemPoolAttrUsedMemHigh)) + registered;
  m.peak_reserved_bytes = static_cast<int64_t>(pool_attribute(pool_, cudaMemPoolAttrReservedMemHigh)) + registered;
  const ReplayedPeak replayed = replay_peak(*schedule_, m.start_ns, m.end_ns, setup_.stage);
  m.peak_op = replayed.op;
  m.peak_breakdown = replayed.breakdown;
  read_wrong_counts(step_);
  if (watchdog_ != nullptr) watchdog_->clear();  // the streams have drained: every watched collective finished
  return m;
}

void CudaBackend::wait_for_streams() {
  for (;;) {
    // A fault the watchdog found is the cause of whatever the streams do next (aborted kernels, errors).
    if (const std::optional<WatchdogFault> f = fault()) throw CudaError(f->message, f->kind);
    bool busy = false;
    for (const CudaStreamResources& r : streams_) {
      const cudaError_t e = cudaStreamQuery(r.stream);
      if (e == cudaErrorNotReady) {
        busy = true;
      } else if (e != cudaSuccess) {
        if (const std::optional<WatchdogFault> f = fault()) throw CudaError(f->message, f->kind);
        throw_cuda_error(e, "cudaStreamQuery (a kernel, copy or collective of this step failed)", __FILE__, __LINE__);
      }
    }
    if (!busy) return;
    check_step_gate();
    if (setup_.abort != nullptr && setup_.abort->load()) {
      throw CudaError("rank " + std::to_string(setup_.rank) + " stopped waiting: another rank failed",
                      CudaFault::peer_failed);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::optional<WatchdogFault> CudaBackend::fault() const {
  return watchdog_ != nullptr ? watchdog_->fault() : std::nullopt;
}

NcclWait CudaBackend::nccl_wait(const std::string& what) const {
  return NcclWait{setup_.collective_timeout_ns, setup_.abort, what};
}

void CudaBackend::note_allocated(BufferId buffer, bool allocated) {
  const Buffer& b = schedule_->buffers[buffer];
  const int64_t bytes = allocated ? b.size_bytes : -b.size_bytes;
  live_[static_cast<size_t>(b.category)] += bytes;
  live_bytes_ += bytes;
}

void CudaBackend::read_times(StepMeasurement& m) const {
  const size_t n = schedule_->ops.size();
  m.start_ns.assign(n, -1);  // -1: another stage's op, which this GPU does not run
  m.end_ns.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (!runs(schedule_->ops[i])) continue;
    m.start_ns[i] = elapsed_ns(step_start_, start_events_[i]);
    m.end_ns[i] = elapsed_ns(step_start_, end_events_[i]);
    m.step_ns = std::max(m.step_ns, m.end_ns[i]);
  }
}

void CudaBackend::read_wrong_counts(int32_t step) {
  if (wrong_ == nullptr) return;
  std::vector<unsigned long long> wrong(schedule_->ops.size(), 0);
  FSDPSIM_CUDA(cudaMemcpy(wrong.data(), wrong_, wrong.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < wrong.size(); ++i) {
    if (wrong[i] == 0) continue;
    const Op& op = schedule_->ops[i];
    if (is_p2p(op.kind)) {
      problem(op, "step " + std::to_string(step) + ": " + std::to_string(wrong[i]) + " of " +
                      std::to_string(p2p_.ops[i].bytes / 2) + " received BF16 elements differ from what " +
                      describe_op(schedule_->ops[op.peer]) + " sent");
      continue;
    }
    const CollectivePlan& p = comm_.ops[i];
    const int64_t outputs = op.kind == OpKind::all_gather || op.kind == OpKind::all_to_all
                                ? p.count * groups_.membership(op.group).size
                                : p.count;
    problem(op, "step " + std::to_string(step) + ": " + std::to_string(wrong[i]) + " of " + std::to_string(outputs) +
                    " output elements wrong (" + std::string(to_string(op.kind)) + " over '" +
                    schedule_->groups[op.group].name + "' of " + std::to_string(groups_.membership(op.group).size) +
                    " ranks, " + std::string(to_string(op.dtype)) + ", reduce " + std::string(to_string(op.reduce_op)) +
                    ")");
  }
}

void CudaBackend::out_of_memory(BufferId buffer, const std::string& allocator, CudaFault fault) const {
  DeviceOutOfMemory oom;
  oom.failure = AllocationFailure{buffer, current_op_, current_op_.valid() ? step_ : -1, live_bytes_, live_};
  oom.allocator = allocator;
  uint64_t reserved = 0;
  if (pool_ != nullptr) (void)cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved);
  oom.pool_reserved_bytes = static_cast<int64_t>(reserved);
  oom.registered_bytes = groups_.registered_bytes();
  oom.executor_bytes = overheads_.scratch_bytes + overheads_.cublas_workspace_bytes + overheads_.check_bytes;
  size_t free_bytes = 0, total_bytes = 0;
  (void)cudaMemGetInfo(&free_bytes, &total_bytes);
  oom.device_free_bytes = static_cast<int64_t>(free_bytes);
  oom.device_total_bytes = static_cast<int64_t>(total_bytes);
  const std::optional<MemoryPeak> predicted =
      setup_.predicted != nullptr ? setup_.predicted->get() : std::optional<MemoryPeak>{};
  if (setup_.predict_with_memory != nullptr) {
    // The simulator given what this run had: the device less the executor's own scratch (its overheads it counts
    // itself). Any failure to predict leaves the report as it is.
    try {
      oom.same_memory_prediction =
          (*setup_.predict_with_memory)(oom.device_total_bytes - overheads_.scratch_bytes - overheads_.check_bytes);
    } catch (const std::exception&) {
      oom.same_memory_prediction.clear();
    }
  }
  throw CudaError(
      describe_device_oom(*schedule_, FaultSite{setup_.rank, setup_.device, setup_.world_size}, oom, predicted), fault);
}

char* CudaBackend::live_pointer(BufferId buffer, const Op& op, const char* use) {
  char* p = pointers_[buffer.index()];
  if (p == nullptr) {
    problem(op, std::string(use) + " buffer '" + schedule_->buffers[buffer].name +
                    "', which is not allocated when the op is issued (the work is skipped)");
  }
  return p;
}

void CudaBackend::problem(const Op& op, const std::string& what) {
  problems_.push_back("op '" + op.name + "' (id " + std::to_string(op.id.value()) + "): " + what);
}

}  // namespace fsdpsim
