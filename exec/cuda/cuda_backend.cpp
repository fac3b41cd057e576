// CudaBackend: setup and teardown (streams, events, the memory pool, per-stream scratch and cuBLAS handles, the
// communicators and registered buffers, the persistent buffers).
#include "exec/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "common/units.h"
#include "exec/cuda/nccl/nccl_nonblocking.h"
#include "exec/cuda/runtime/check_kernels.h"
#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

// cuBLAS API reference, cublasSetWorkspace: the recommended user workspace is 32 MiB on Hopper and 4 MiB on earlier
// architectures (PyTorch sizes its cuBLAS workspace the same way, pytorch/pytorch#120925).
int64_t cublas_workspace_bytes(int device) {
  int major = 0;
  FSDPSIM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9 ? 32 * kMiB : 4 * kMiB;
}

constexpr int64_t kAlign = kOperandAlignBytes;
int64_t aligned(int64_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Carves `bytes` from `cursor` (null when zero bytes are asked for).
char* carve(char*& cursor, int64_t bytes) {
  if (bytes <= 0) return nullptr;
  char* p = cursor;
  cursor += aligned(bytes);
  return p;
}

// Scratch is filled with small BF16 integers rather than left as it comes: GEMMs on zeros draw less power and would
// run faster than on real data.
void fill_scratch(char* p, int64_t bytes, cudaStream_t s) {
  if (p == nullptr || bytes < 2) return;
  check_kernels::fill(p, bytes / 2, check_kernels::ElemType::bf16, check_kernels::Pattern::gather, 0, 1, s);
  FSDPSIM_CUDA(cudaGetLastError());
}

}  // namespace

int64_t device_memory_in_use(int64_t* total_bytes) {
  size_t free_bytes = 0, total = 0;
  FSDPSIM_CUDA(cudaMemGetInfo(&free_bytes, &total));
  if (total_bytes != nullptr) *total_bytes = static_cast<int64_t>(total);
  return static_cast<int64_t>(total - free_bytes);
}

CudaBackend::CudaBackend(const CudaRankSetup& setup) : setup_(setup) {
  groups_.adopt_world(setup.world);  // from here on the world communicator is released with the others
}

CudaBackend::~CudaBackend() {
  release_all(true);
}

void CudaBackend::setup(const Schedule& schedule) {
  schedule_ = &schedule;
  FSDPSIM_CUDA(cudaSetDevice(setup_.device));
  const int64_t at_start = device_memory_in_use(&overheads_.device_total_bytes);
  // Without a world communicator, what is in use now is the context; with one, the context is what was in use
  // before the launcher created it.
  overheads_.measured_context_bytes =
      setup_.in_use_before_world_bytes >= 0 ? std::min(setup_.in_use_before_world_bytes, at_start) : at_start;
  compute_ = plan_compute(schedule, 2);  // every GEMM runs in BF16 (FP8 ops too: see cuda_backend_ops.cpp)
  comm_ = plan_collectives(schedule, setup_.check);
  p2p_ = plan_p2p(schedule);
  int64_t probe_bytes = 0;  // what the probe's cudaMalloc took (the driver's granularity), kept out of NCCL's share
  if (setup_.stage >= 0 && setup_.world != nullptr) {  // emulating, a stage exchanges nothing
    const int64_t before = device_memory_in_use(nullptr);
    FSDPSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&probe_), 256));
    probe_bytes = device_memory_in_use(nullptr) - before;
    overheads_.scratch_bytes += probe_bytes;
  }
  groups_.setup(schedule, setup_.rank, setup_.world_size, nccl_wait("splitting the group communicators"));
  groups_.setup_channels(schedule, p2p_.channels, setup_.rank, nccl_wait("splitting the pipeline channels"));
  connect_channels();
  overheads_.measured_nccl_bytes = device_memory_in_use(nullptr) - overheads_.measured_context_bytes - probe_bytes;
  overheads_.communicators = groups_.communicator_count();
  create_streams_and_events();
  create_pool();
  std::vector<bool> gemms(schedule.streams.size(), false);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    if (!compute_.launches[i].empty()) gemms[schedule.ops[i].stream.index()] = true;
  }
  // A pipeline stage's GPU holds the resources of its own streams only.
  for (size_t s = 0; s < streams_.size(); ++s) {
    if (runs(StreamId(static_cast<int32_t>(s)))) create_stream_resources(streams_[s], gemms[s]);
  }
  if (setup_.check) {
    const size_t bytes = schedule.ops.size() * sizeof(unsigned long long);
    FSDPSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&wrong_), std::max<size_t>(bytes, 8)));
    overheads_.check_bytes = static_cast<int64_t>(bytes);
  }
  groups_.register_buffers(schedule, setup_.stage, nccl_wait("registering the NCCL buffers"),
                           [this](BufferId b, ncclResult_t r) { registered_failed(b, r); });
  allocate_persistent();
  note_dropped_bytes();
  positions_.assign(schedule.ops.size(), 0);
  FSDPSIM_CUDA(cudaDeviceSynchronize());
  if (!groups_.has_communicators()) return;  // emulating: no NCCL, nothing can hang
  watchdog_ = std::make_unique<CollectiveWatchdog>(
      WatchdogSetup{&schedule, FaultSite{setup_.rank, setup_.device, setup_.world_size}, setup_.collective_timeout_ns,
                    setup_.abort, setup_.board},
      groups_);
  watchdog_->start(setup_.device);
}

void CudaBackend::measure_lazy_overheads() {
  FSDPSIM_CUDA(cudaSetDevice(setup_.device));
  FSDPSIM_CUDA(cudaDeviceSynchronize());
  uint64_t pool_reserved = 0;
  FSDPSIM_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &pool_reserved));
  const CudaOverheads& o = overheads_;
  const int64_t accounted = static_cast<int64_t>(pool_reserved) + o.scratch_bytes + o.check_bytes +
                            groups_.registered_bytes() + o.measured_context_bytes + o.measured_nccl_bytes +
                            o.measured_cublas_bytes;
  overheads_.measured_context_bytes += std::max<int64_t>(0, device_memory_in_use(nullptr) - accounted);
}

void CudaBackend::registered_failed(BufferId buffer, ncclResult_t result) {
  // The ledger before any persistent buffer: the registered buffers allocated so far (in id order).
  for (size_t b = 0; b < buffer.index(); ++b) {
    const Buffer& earlier = schedule_->buffers[b];
    if (earlier.nccl_registered && earlier.size_bytes > 0) note_allocated(earlier.id, true);
  }
  const char* detail = ncclGetLastError(nullptr);
  const std::string allocator = std::string("ncclMemAlloc returned ") + nccl_result_name(result) +
                                (detail != nullptr && detail[0] != '\0' ? std::string(": ") + detail : "");
  // ncclMemAlloc says only that a CUDA call failed: call it out of memory when the device has no room for the buffer.
  size_t free_bytes = 0, total_bytes = 0;
  (void)cudaMemGetInfo(&free_bytes, &total_bytes);
  const bool no_room = static_cast<int64_t>(free_bytes) < schedule_->buffers[buffer].size_bytes;
  out_of_memory(buffer, allocator, no_room ? CudaFault::out_of_memory : CudaFault::error);
}

void CudaBackend::create_streams_and_events() {
  int least = 0, greatest = 0;
  FSDPSIM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  streams_.resize(schedule_->streams.size());
  for (size_t s = 0; s < streams_.size(); ++s) {
    // CUDA priorities: lower is higher, within [greatest, least] (0 and -5 on Hopper); the IR uses 0 normal, -1 high.
    const int priority = std::clamp(schedule_->streams[s].priority, greatest, least);
    FSDPSIM_CUDA(cudaStreamCreateWithPriority(&streams_[s].stream, cudaStreamNonBlocking, priority));
    streams_[s].sizes = compute_.scratch[s];
    streams_[s].comm_sizes = comm_.scratch[s];
    // A send reads its bytes from the stream's input scratch.
    streams_[s].comm_sizes.input_bytes = std::max(streams_[s].comm_sizes.input_bytes, p2p_.send_scratch_bytes[s]);
  }
  start_events_.assign(schedule_->ops.size(), nullptr);
  end_events_.assign(schedule_->ops.size(), nullptr);
  for (size_t i = 0; i < schedule_->ops.size(); ++i) {
    FSDPSIM_CUDA(cudaEventCreate(&start_events_[i]));
    FSDPSIM_CUDA(cudaEventCreate(&end_events_[i]));
  }
  FSDPSIM_CUDA(cudaEventCreate(&step_start_));
}

void CudaBackend::create_pool() {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = setup_.device;
  FSDPSIM_CUDA(cudaMemPoolCreate(&pool_, &props));
  // Keep every byte the pool reserved (the reserved peak is then the pool's high-water mark, as PyTorch's caching
  // allocator keeps its segments), and let the pool reuse memory only along the IR's own dependencies or once a free
  // has completed: inserting dependencies of its own would change when ops run.
  uint64_t keep = UINT64_MAX;
  FSDPSIM_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  int no = 0;
  FSDPSIM_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &no));
}

void CudaBackend::create_stream_resources(CudaStreamResources& r, bool gemms) {
  const StreamScratch& z = r.sizes;
  const CommScratch& cz = r.comm_sizes;
  const int64_t total = aligned(z.a_bytes) + aligned(z.w_bytes) + aligned(z.c_bytes) + aligned(z.memory_bytes) +
                        aligned(cz.input_bytes) + aligned(cz.output_bytes);
  if (total > 0) {
    FSDPSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&r.scratch), static_cast<size_t>(total)));
    char* cursor = r.scratch;
    r.a = carve(cursor, z.a_bytes);
    r.w = carve(cursor, z.w_bytes);
    r.c = carve(cursor, z.c_bytes);
    r.memory = carve(cursor, z.memory_bytes);
    r.comm_in = carve(cursor, cz.input_bytes);
    r.comm_out = carve(cursor, cz.output_bytes);
    fill_scratch(r.scratch, total, r.stream);
    overheads_.scratch_bytes += total;
  }
  if (z.pinned_host_bytes > 0) {
    FSDPSIM_CUDA(cudaMallocHost(&r.pinned, static_cast<size_t>(z.pinned_host_bytes)));
    overheads_.pinned_host_bytes += z.pinned_host_bytes;
  }
  if (!gemms) return;
  // Measured around the handle and its workspace alone: the scratch fill above loads a kernel module, which is
  // context memory.
  FSDPSIM_CUDA(cudaStreamSynchronize(r.stream));
  const int64_t before = device_memory_in_use(nullptr);
  const int64_t workspace = cublas_workspace_bytes(setup_.device);
  FSDPSIM_CUDA(cudaMalloc(&r.blas_workspace, static_cast<size_t>(workspace)));
  FSDPSIM_CUBLAS(cublasCreate(&r.blas));
  // cublasSetStream resets the workspace to cuBLAS's default pool, so the stream is set first.
  FSDPSIM_CUBLAS(cublasSetStream(r.blas, r.stream));
  FSDPSIM_CUBLAS(cublasSetWorkspace(r.blas, r.blas_workspace, static_cast<size_t>(workspace)));
  overheads_.cublas_workspace_bytes += workspace;
  overheads_.measured_cublas_bytes += std::max<int64_t>(0, device_memory_in_use(nullptr) - before);
}

void CudaBackend::allocate_persistent() {
  pointers_.assign(schedule_->buffers.size(), nullptr);
  for (size_t b = 0; b < schedule_->buffers.size(); ++b) {
    const Buffer& buffer = schedule_->buffers[b];
    if (setup_.stage >= 0 && buffer.stage != setup_.stage) continue;  // another stage's GPU holds it
    if (buffer.nccl_registered) {
      pointers_[b] = static_cast<char*>(groups_.registered(buffer.id));
      if (pointers_[b] != nullptr) note_allocated(buffer.id, true);  // held for the whole run
      continue;
    }
    if (!buffer.persistent || buffer.size_bytes <= 0) continue;
    void* p = nullptr;
    const cudaError_t e =
        cudaMallocFromPoolAsync(&p, static_cast<size_t>(buffer.size_bytes), pool_, streams_.front().stream);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky, but leave no error behind for the teardown's checks
      out_of_memory(buffer.id, "cudaMallocFromPoolAsync, persistent buffer");
    }
    if (e != cudaSuccess) throw_cuda_error(e, "cudaMallocFromPoolAsync(persistent buffer)", __FILE__, __LINE__);
    pointers_[b] = static_cast<char*>(p);
    note_allocated(buffer.id, true);
  }
  FSDPSIM_CUDA(cudaStreamSynchronize(streams_.front().stream));
}

void CudaBackend::note_dropped_bytes() {
  for (size_t i = 0; i < comm_.ops.size(); ++i) {
    const CollectivePlan& p = comm_.ops[i];
    if (p.dropped_bytes <= 0 || !runs(schedule_->ops[i])) continue;
    problem(schedule_->ops[i], std::to_string(p.dropped_bytes) + " byte(s) of its per-rank size are not a whole " +
                                   std::string(to_string(schedule_->ops[i].dtype)) +
                                   " element; the call leaves them out (give sizes in whole elements)");
  }
}

bool CudaBackend::runs(StreamId stream) const {
  return setup_.stage < 0 || schedule_->streams[stream].stage == setup_.stage;
}

// NCCL connects two ranks on their first send and receive, and a nonblocking communicator's connection waits for the
// peer's: were the first calls of the step the first ones, a rank could wait on one channel while its peer waits on
// another. Every channel is connected here instead, in plan order on every rank, so that the lowest channel not yet
// connected always has both ends at it; the probe's byte goes out on one setup stream, in the same order.
void CudaBackend::connect_channels() {
  if (!groups_.has_communicators() || p2p_.channels.empty()) return;
  cudaStream_t s = nullptr;
  FSDPSIM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  try {
    for (size_t c = 0; c < p2p_.channels.size(); ++c) {
      const P2pChannel& channel = p2p_.channels[c];
      const ChannelMembership m = channel_membership(*schedule_, channel, setup_.rank);
      if (m.color < 0) continue;
      groups_.enqueue_channel(
          static_cast<int32_t>(c), IssuedOp{},
          [&](ncclComm_t comm) {
            return m.rank == 0 ? ncclSend(probe_, 1, ncclInt8, 1, comm, s) : ncclRecv(probe_, 1, ncclInt8, 0, comm, s);
          },
          nccl_wait("connecting the pipeline channel from stream '" + schedule_->streams[channel.send_stream].name +
                    "' to stream '" + schedule_->streams[channel.recv_stream].name + "'"));
    }
    const NcclWait wait = nccl_wait("the pipeline channels' first exchange");
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      const cudaError_t e = cudaStreamQuery(s);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) throw_cuda_error(e, "cudaStreamQuery (connecting channels)", __FILE__, __LINE__);
      check_wait(ncclInProgress, "", wait, start);
      wait_pause(polls);
    }
  } catch (...) {
    (void)cudaStreamDestroy(s);
    throw;
  }
  FSDPSIM_CUDA(cudaStreamDestroy(s));
}

void CudaBackend::release_all(bool abort) noexcept {
  if (released_) return;
  released_ = true;
  if (watchdog_ != nullptr) watchdog_->stop();  // before the events and communicators it polls go
  (void)cudaSetDevice(setup_.device);
  // After a failure nothing waits for the device: a stream may wait for a peer that will never come.
  if (!abort) (void)cudaDeviceSynchronize();
  for (size_t b = 0; b < pointers_.size(); ++b) {
    const bool pooled = pointers_[b] != nullptr && !schedule_->buffers[b].nccl_registered;
    if (pooled && !streams_.empty()) (void)cudaFreeAsync(pointers_[b], streams_.front().stream);
    pointers_[b] = nullptr;
  }
  groups_.release(abort, nccl_wait("tearing down the communicators"));
  for (CudaStreamResources& r : streams_) {
    if (r.blas != nullptr) (void)cublasDestroy(r.blas);
    if (r.blas_workspace != nullptr) (void)cudaFree(r.blas_workspace);
    if (r.scratch != nullptr) (void)cudaFree(r.scratch);
    if (r.pinned != nullptr) (void)cudaFreeHost(r.pinned);
    if (r.stream != nullptr) (void)cudaStreamDestroy(r.stream);
  }
  streams_.clear();
  for (cudaEvent_t e : start_events_) (void)cudaEventDestroy(e);
  for (cudaEvent_t e : end_events_) (void)cudaEventDestroy(e);
  start_events_.clear();
  end_events_.clear();
  if (step_start_ != nullptr) (void)cudaEventDestroy(step_start_);
  if (wrong_ != nullptr) (void)cudaFree(wrong_);
  if (probe_ != nullptr) (void)cudaFree(probe_);
  probe_ = nullptr;
  if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
  step_start_ = nullptr;
  wrong_ = nullptr;
  pool_ = nullptr;
}

}  // namespace fsdpsim
