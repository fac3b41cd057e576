#pragma once
/// The CUDA/NCCL Backend of one rank (internal to exec/cuda; run_cuda() drives one per GPU). It runs the IR exactly as
/// schedule/ir.h says: a cudaStream_t per IR stream (priority from Stream::priority), two events per op (start and
/// end, re-used every step; `wait` is cudaStreamWaitEvent on the end event), the IR's buffers from a dedicated
/// stream-ordered pool (cudaMallocFromPoolAsync / cudaFreeAsync on the op's stream, release threshold UINT64_MAX so
/// the memory stays reserved; persistent buffers at setup), nccl_registered buffers from ncclMemAlloc held for the
/// whole run, GEMMs through cuBLAS (gemm_plan.h), collectives through NCCL (collective_plan.h). The pool reuses
/// memory across streams only along the IR's dependencies (an op's end event is recorded after its releases) or once
/// a release has completed, never by inserting dependencies of its own. Peaks come from the
/// pool's UsedMemHigh / ReservedMemHigh, reset at every step; times from cudaEventElapsedTime against a step-start
/// event every stream waits on.
///
/// Pipelines: each stage's GPU is a rank of its own (CudaRankSetup::stage), which runs only its stage's streams, ops
/// and buffers; a send and its receive are an ncclSend and an ncclRecv on the two-rank communicator of their channel
/// (p2p_plan.h), and every step starts from an all-reduce of one byte over the world, so that the stages' clocks
/// start together as the simulator's do. Emulating, a stage runs alone: a send sends nothing, a receive writes zeros.
///
/// Faults (cuda_faults.h): the communicators are nonblocking, a watchdog thread (collective_watchdog.h) times out
/// collectives and polls the communicators' asynchronous errors, aborting them all on a fault; an allocation that
/// does not fit is reported with the memory in use by category (the backend keeps a ledger of its live IR buffers)
/// and the simulator's predicted peak.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "exec/backend.h"
#include "exec/cuda/cuda_runner.h"
#include "exec/cuda/gemm/gemm_plan.h"
#include "exec/cuda/nccl/collective_plan.h"
#include "exec/cuda/nccl/collective_watchdog.h"
#include "exec/cuda/nccl/nccl_groups.h"
#include "exec/cuda/nccl/p2p_plan.h"

namespace fsdpsim {

/// Which rank a backend is and what it may use.
struct CudaRankSetup {
  int32_t device = 0;
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t stage = -1;          ///< the pipeline stage this GPU runs; -1 without pipeline parallelism (every op)
  ncclComm_t world = nullptr;  ///< world communicator (the backend splits its groups from it); null when emulating
  bool emulate = false;        ///< collectives become device copies; no NCCL
  bool check = false;          ///< fill and verify every collective (#wrong)
  std::atomic<bool>* abort = nullptr;  ///< the launcher's stop flag: raised by this rank's watchdog on a fault; when
                                       ///< another rank raised it, waiting stops with an error
  TimeNs collective_timeout_ns = 0;    ///< CudaOptions::collective_timeout_ns (also bounds NCCL setup waits)
  IssueBoard* board = nullptr;         ///< shared by the ranks of this process; null under MPI
  PredictedPeak* predicted = nullptr;  ///< the simulator's prediction for out-of-memory reports; may be null
  int64_t in_use_before_world_bytes = -1;  ///< device memory in use before the world communicator (-1: none made)
  const std::function<std::string(int64_t)>* predict_with_memory = nullptr;  ///< CudaOptions'; may be null
};

/// Device memory in use on the current GPU (cudaMemGetInfo: total − free); `total_bytes`, when given, receives what
/// CUDA lets a process use there.
int64_t device_memory_in_use(int64_t* total_bytes = nullptr);

/// The device resources of one IR stream.
struct CudaStreamResources {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;  ///< only on streams that run GEMMs
  void* blas_workspace = nullptr;
  char* scratch = nullptr;  ///< one cudaMalloc holding the regions below
  char* a = nullptr;
  char* w = nullptr;
  char* c = nullptr;
  char* memory = nullptr;
  char* comm_in = nullptr;
  char* comm_out = nullptr;
  void* pinned = nullptr;  ///< cudaMallocHost
  StreamScratch sizes;
  CommScratch comm_sizes;
};

/// One rank's CUDA backend.
class CudaBackend final : public Backend {
 public:
  /// Touches no device until setup().
  explicit CudaBackend(const CudaRankSetup& setup);
  /// Releases everything still held (aborting the communicators when release() was not called).
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  /// Plans the GEMMs and collectives, splits the group communicators, creates streams, events, the pool, scratch and
  /// cuBLAS handles, allocates registered and persistent buffers.
  void setup(const Schedule& schedule) override;
  /// Zeroes the #wrong counters, resets the pool's high-water marks, records the step-start event.
  void begin_step(int32_t step) override;
  /// cudaStreamWaitEvent on the end event of `op`.
  void wait(StreamId stream, OpId op) override;
  /// Records the op's start event on its stream.
  void mark_start(const Op& op) override;
  /// cudaMallocFromPoolAsync on `stream` (nothing for persistent and registered buffers).
  void allocate(BufferId buffer, StreamId stream) override;
  /// Enqueues the op's GEMMs, memory-bound work, host copies or collective.
  void run(const Op& op) override;
  /// Records the op's end event on its stream.
  void mark_end(const Op& op) override;
  /// cudaFreeAsync on `stream` (nothing for persistent and registered buffers), then re-records the releasing op's
  /// end event after it, so the ops that wait for that op may reuse the memory.
  void release(BufferId buffer, StreamId stream) override;
  /// Waits for every stream, then reads op times, pool peaks and #wrong counts.
  StepMeasurement end_step() override;
  /// Problems found so far (wrong collective results, buffers used while not allocated, partial elements).
  [[nodiscard]] std::vector<std::string> problems() const override { return problems_; }

  /// What this rank used beyond the IR's buffers.
  [[nodiscard]] CudaOverheads overheads() const { return overheads_; }
  /// Measures, after the last step, the device memory used lazily during the run (see CudaOverheads).
  void measure_lazy_overheads();
  /// Frees every device resource; `abort` after a failure (communicators aborted instead of destroyed, which would
  /// wait for the other ranks). Idempotent, never throws.
  void release_all(bool abort) noexcept;
  /// The fault this rank's watchdog recorded (a collective that timed out, an asynchronous NCCL error), if any: the
  /// cause to report in place of the errors that followed it.
  [[nodiscard]] std::optional<WatchdogFault> fault() const;

 private:
  // setup (cuda_backend.cpp)
  void create_streams_and_events();
  void create_pool();
  void create_stream_resources(CudaStreamResources& r, bool gemms);
  void allocate_persistent();
  void note_dropped_bytes();
  void connect_channels();
  [[nodiscard]] bool runs(StreamId stream) const;
  [[nodiscard]] bool runs(const Op& op) const { return runs(op.stream); }
  [[noreturn]] void registered_failed(BufferId buffer, ncclResult_t result);
  // steps (cuda_backend_step.cpp)
  void wait_for_streams();
  void start_with_the_other_stages(cudaStream_t stream);
  void check_step_gate();
  void read_times(StepMeasurement& m) const;
  void read_wrong_counts(int32_t step);
  [[noreturn]] void out_of_memory(BufferId buffer, const std::string& allocator,
                                  CudaFault fault = CudaFault::out_of_memory) const;
  [[nodiscard]] NcclWait nccl_wait(const std::string& what) const;
  void note_allocated(BufferId buffer, bool allocated);
  // work (cuda_backend_ops.cpp)
  void run_gemms(const Op& op);
  void run_memory_bound(StreamId stream, int64_t bytes_touched);
  void run_host_copy(const Op& op, int64_t bytes, bool to_host);
  void run_collective(const Op& op);
  void run_p2p(const Op& op);
  void nccl_collective(const Op& op, const CollectivePlan& p, const void* in, void* out, cudaStream_t s);
  void nccl_call(const Op& op, const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& call);
  void emulate_collective(const Op& op, const CollectivePlan& p, const char* in, char* out, cudaStream_t s);
  void check_input(const Op& op, const CollectivePlan& p, void* in, cudaStream_t s);
  void check_output(const Op& op, const CollectivePlan& p, const void* out, cudaStream_t s);
  char* live_pointer(BufferId buffer, const Op& op, const char* use);
  void problem(const Op& op, const std::string& what);

  CudaRankSetup setup_;
  const Schedule* schedule_ = nullptr;
  ComputePlan compute_;
  CommPlan comm_;
  P2pPlan p2p_;
  char* probe_ = nullptr;  // 256 bytes: the channels' first exchange, the steps' aligning all-reduce (pipelines)
  NcclGroups groups_;
  std::vector<CudaStreamResources> streams_;
  std::vector<cudaEvent_t> start_events_, end_events_;
  cudaEvent_t step_start_ = nullptr;
  // When this step's aligning all-reduce was issued (pipelines only): no watched op starts before it ends, so the
  // watchdog cannot see a stage that never joins it; wait_for_streams times it out itself.
  std::optional<std::chrono::steady_clock::time_point> step_gate_issued_;
  cudaMemPool_t pool_ = nullptr;
  std::vector<char*> pointers_;          // by buffer: live device memory or null
  unsigned long long* wrong_ = nullptr;  // by op: #wrong of the current step (--check)
  OpId current_op_;
  int32_t step_ = 0;
  int64_t issued_ = 0;              // ops issued so far in this step (the IssueBoard position of the last one)
  std::vector<int64_t> positions_;  // by op: its IssueBoard position in this step
  CategoryBytes live_{};            // bytes of the IR buffers live now, by category, in issue order (the ledger)
  int64_t live_bytes_ = 0;
  std::unique_ptr<CollectiveWatchdog> watchdog_;  // only with communicators
  std::vector<std::string> problems_;
  CudaOverheads overheads_;
  bool released_ = false;
};

}  // namespace fsdpsim
