// CudaBackend: one step — events, stream-ordered allocation and release, waiting for the streams, and what the step
// measured (op times, pool peaks, #wrong counts).
#include <chrono>
#include <cmath>
#include <thread>

#include "common/units.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/measured_peak.h"

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
  current_op_ = -1;
  cudaStream_t first = streams_.front().stream;
  if (wrong_ != nullptr) {
    FSDPSIM_CUDA(cudaMemsetAsync(wrong_, 0, schedule_->ops.size() * sizeof(unsigned long long), first));
  }
  // Resetting a high-water mark sets it to the memory in use now (the persistent buffers): each step reports its own.
  uint64_t zero = 0;
  FSDPSIM_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
  FSDPSIM_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero));
  FSDPSIM_CUDA(cudaEventRecord(step_start_, first));
  for (size_t s = 1; s < streams_.size(); ++s) FSDPSIM_CUDA(cudaStreamWaitEvent(streams_[s].stream, step_start_, 0));
}

void CudaBackend::wait(int32_t stream, int32_t op) {
  FSDPSIM_CUDA(
      cudaStreamWaitEvent(streams_[static_cast<size_t>(stream)].stream, end_events_[static_cast<size_t>(op)], 0));
}

void CudaBackend::mark_start(const Op& op) {
  current_op_ = op.id;
  FSDPSIM_CUDA(
      cudaEventRecord(start_events_[static_cast<size_t>(op.id)], streams_[static_cast<size_t>(op.stream)].stream));
}

void CudaBackend::mark_end(const Op& op) {
  FSDPSIM_CUDA(
      cudaEventRecord(end_events_[static_cast<size_t>(op.id)], streams_[static_cast<size_t>(op.stream)].stream));
}

void CudaBackend::allocate(int32_t buffer, int32_t stream) {
  const Buffer& b = schedule_->buffers[static_cast<size_t>(buffer)];
  // Persistent buffers live from setup; registered ones are held for the whole run (ncclMemAlloc is not stream-
  // ordered and registration is collective), so for them an IR allocation changes nothing on the device.
  if (b.persistent || b.nccl_registered || b.size_bytes <= 0) return;
  char*& p = pointers_[static_cast<size_t>(buffer)];
  if (p != nullptr) {
    problem(schedule_->ops[static_cast<size_t>(current_op_)], "allocates buffer '" + b.name + "', which is still live");
    return;
  }
  void* memory = nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&memory, static_cast<size_t>(b.size_bytes), pool_,
                                                streams_[static_cast<size_t>(stream)].stream);
  if (e == cudaErrorMemoryAllocation) out_of_memory(buffer, stream);
  if (e != cudaSuccess) throw_cuda_error(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  p = static_cast<char*>(memory);
}

void CudaBackend::release(int32_t buffer, int32_t stream) {
  const Buffer& b = schedule_->buffers[static_cast<size_t>(buffer)];
  if (b.persistent || b.nccl_registered) return;
  char*& p = pointers_[static_cast<size_t>(buffer)];
  if (p == nullptr) return;
  cudaStream_t s = streams_[static_cast<size_t>(stream)].stream;
  FSDPSIM_CUDA(cudaFreeAsync(p, s));
  p = nullptr;
  // The op's end event moves past its releases (the IR releases `frees` when the op ends): a stream that waits for
  // the op then also follows the release, so the pool may hand the memory to that stream along the IR's own
  // dependency (cudaMemPoolReuseFollowEventDependencies) instead of growing because the host ran ahead.
  if (current_op_ >= 0) FSDPSIM_CUDA(cudaEventRecord(end_events_[static_cast<size_t>(current_op_)], s));
}

StepMeasurement CudaBackend::end_step() {
  wait_for_streams();
  StepMeasurement m;
  read_times(m);
  // Registered buffers are outside the pool and held throughout: they count as live for the whole step.
  const int64_t registered = groups_.registered_bytes();
  m.peak_allocated_bytes = static_cast<int64_t>(pool_attribute(pool_, cudaMemPoolAttrUsedMemHigh)) + registered;
  m.peak_reserved_bytes = static_cast<int64_t>(pool_attribute(pool_, cudaMemPoolAttrReservedMemHigh)) + registered;
  const ReplayedPeak replayed = replay_peak(*schedule_, m.start_ns, m.end_ns);
  m.peak_op = replayed.op;
  m.peak_breakdown = replayed.breakdown;
  read_wrong_counts(step_);
  return m;
}

void CudaBackend::wait_for_streams() {
  for (;;) {
    bool busy = false;
    for (const CudaStreamResources& r : streams_) {
      const cudaError_t e = cudaStreamQuery(r.stream);
      if (e == cudaErrorNotReady) {
        busy = true;
      } else if (e != cudaSuccess) {
        throw_cuda_error(e, "cudaStreamQuery (a kernel, copy or collective of this step failed)", __FILE__, __LINE__);
      }
    }
    if (!busy) return;
    const ncclResult_t nccl = groups_.async_error();
    if (nccl != ncclSuccess) throw_nccl_error(nccl, "ncclCommGetAsyncError", __FILE__, __LINE__);
    if (setup_.abort != nullptr && setup_.abort->load()) {
      throw CudaError("rank " + std::to_string(setup_.rank) + " stopped waiting: another rank failed", false);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void CudaBackend::read_times(StepMeasurement& m) const {
  const size_t n = schedule_->ops.size();
  m.start_ns.assign(n, 0);
  m.end_ns.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
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
    const CollectivePlan& p = comm_.ops[i];
    const int64_t outputs = op.kind == OpKind::all_gather || op.kind == OpKind::all_to_all
                                ? p.count * groups_.membership(op.group).size
                                : p.count;
    problem(op, "step " + std::to_string(step) + ": " + std::to_string(wrong[i]) + " of " + std::to_string(outputs) +
                    " output elements wrong (" + std::string(to_string(op.kind)) + " over '" +
                    schedule_->groups[static_cast<size_t>(op.group)].name + "' of " +
                    std::to_string(groups_.membership(op.group).size) + " ranks, " + std::string(to_string(op.dtype)) +
                    ", reduce " + std::string(to_string(op.reduce_op)) + ")");
  }
}

void CudaBackend::out_of_memory(int32_t buffer, int32_t stream) const {
  const Buffer& b = schedule_->buffers[static_cast<size_t>(buffer)];
  uint64_t used = 0, reserved = 0;
  (void)cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used);
  (void)cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved);
  size_t free_bytes = 0, total_bytes = 0;
  (void)cudaMemGetInfo(&free_bytes, &total_bytes);
  const std::string who = current_op_ >= 0 ? "op '" + schedule_->ops[static_cast<size_t>(current_op_)].name + "' (id " +
                                                 std::to_string(current_op_) + ")"
                                           : std::string("setup (persistent buffers)");
  const int64_t overhead = overheads_.scratch_bytes + overheads_.cublas_workspace_bytes + overheads_.check_bytes;
  throw CudaError("out of GPU memory on device " + std::to_string(setup_.device) + " (rank " +
                      std::to_string(setup_.rank) + "): " + who + " allocating buffer '" + b.name + "' (" +
                      std::string(to_string(b.category)) + ", " + format_bytes(b.size_bytes) + ") on stream '" +
                      schedule_->streams[static_cast<size_t>(stream)].name +
                      "'; in use: " + format_bytes(static_cast<int64_t>(used)) + " of IR buffers (the pool reserves " +
                      format_bytes(static_cast<int64_t>(reserved)) + "), " + format_bytes(groups_.registered_bytes()) +
                      " registered, " + format_bytes(overhead) + " executor scratch; the device has " +
                      format_bytes(static_cast<int64_t>(free_bytes)) + " free of " +
                      format_bytes(static_cast<int64_t>(total_bytes)),
                  true);
}

char* CudaBackend::live_pointer(int32_t buffer, const Op& op, const char* use) {
  char* p = pointers_[static_cast<size_t>(buffer)];
  if (p == nullptr) {
    problem(op, std::string(use) + " buffer '" + schedule_->buffers[static_cast<size_t>(buffer)].name +
                    "', which is not allocated when the op is issued (the work is skipped)");
  }
  return p;
}

void CudaBackend::problem(const Op& op, const std::string& what) {
  problems_.push_back("op '" + op.name + "' (id " + std::to_string(op.id) + "): " + what);
}

}  // namespace fsdpsim
