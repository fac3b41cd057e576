#pragma once
/// The watchdog of one rank's collectives (internal to exec/cuda), after PyTorch's ProcessGroupNCCL watchdog and
/// nccl-tests' timeout: a thread that polls the start and end events of every collective in flight (cudaEventQuery)
/// and the asynchronous state of every communicator (ncclCommGetAsyncError). A collective that has run longer than
/// the timeout since it started on the device, or a communicator in an error state, is a fault: the watchdog writes
/// its report, aborts every communicator of the rank (ncclCommAbort, which makes NCCL's kernels and proxy threads
/// quit, so the streams drain) and raises the launcher's stop flag so the other ranks of the process stop too. The
/// rank's own thread, polling its streams, then throws the report.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "exec/cuda/cuda_runner.h"
#include "exec/cuda/nccl/nccl_groups.h"
#include "exec/cuda/runtime/cuda_faults.h"

namespace fsdpsim {

/// How far each rank of this process has issued its step, shared by the ranks of the single-process launcher, so
/// that a timed-out collective's report can say which members of its group had issued it.
class IssueBoard {
 public:
  /// A board for ranks 0 .. ranks-1, none of which has issued anything.
  explicit IssueBoard(int32_t ranks);
  /// Rank `rank` has issued everything up to `position` (step·(ops + 1) + the op's place in the issue order).
  void record(int32_t rank, int64_t position);
  /// How far `rank` has issued; -1 when it is not on the board or has issued nothing.
  [[nodiscard]] int64_t position(int32_t rank) const;

 private:
  int32_t ranks_ = 0;
  std::unique_ptr<std::atomic<int64_t>[]> positions_;
};

/// What the watchdog works with.
struct WatchdogSetup {
  const Schedule* schedule = nullptr;
  FaultSite site;
  TimeNs timeout_ns = 0;
  std::atomic<bool>* stop = nullptr;  ///< the launcher's flag: raised on a fault here; raised elsewhere, it makes
                                      ///< the watchdog abort this rank's communicators too (their peer is gone)
  const IssueBoard* board = nullptr;  ///< null when the rank's peers run in other processes (MPI)
};

/// A fault the watchdog (or the rank's thread through raise()) found.
struct WatchdogFault {
  CudaFault kind = CudaFault::error;
  std::string message;
  bool first = false;  ///< this rank raised the stop flag: the root cause, not a consequence of another rank's fault
};

/// One rank's watchdog.
class CollectiveWatchdog {
 public:
  /// `setup.schedule` and `groups` must outlive the watchdog.
  CollectiveWatchdog(WatchdogSetup setup, NcclGroups& groups);
  /// Stops the thread.
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  /// Starts the thread on the rank's device.
  void start(int32_t device);
  /// Stops and joins the thread (idempotent, never throws).
  void stop() noexcept;
  /// Watches collective `op` of `step`, issued at `position` (IssueBoard), whose start and end events are recorded
  /// on its stream (they are not re-recorded before clear()).
  void watch(OpId op, int32_t step, int64_t position, cudaEvent_t started, cudaEvent_t ended);
  /// Forgets the collectives of a step whose streams have drained.
  void clear();
  /// The fault found, if any (the communicators are aborted by then).
  [[nodiscard]] std::optional<WatchdogFault> fault() const;
  /// Records a fault the rank's own thread found (a collective NCCL could not enqueue in time, an asynchronous error
  /// seen while waiting): aborts the communicators and raises the stop flag, as a fault found here. The first fault
  /// wins; returns it.
  WatchdogFault raise(CudaFault kind, const std::string& message);
  /// The report of collective `op` of `step`, issued at `position`, that NCCL was still enqueueing after `waited_ns`.
  [[nodiscard]] std::string enqueue_timeout_report(OpId op, int32_t step, int64_t position, TimeNs waited_ns) const;
  /// The report of the communicators' first asynchronous error, if one is in an error state now.
  [[nodiscard]] std::optional<std::string> async_error_report() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Watched {
    OpId op;
    int32_t step = 0;
    int64_t position = 0;
    cudaEvent_t started = nullptr;
    cudaEvent_t ended = nullptr;
    std::optional<Clock::time_point> began;  // when the watchdog first saw the start event complete
  };
  void loop();
  bool poll();  // false once polling is over (a fault, or another rank's)
  std::optional<WatchdogFault> check_collectives();
  void issued_by(OpId op, int64_t position, std::vector<int32_t>& issued, std::vector<int32_t>& not_issued) const;

  WatchdogSetup setup_;
  NcclGroups& groups_;
  std::chrono::nanoseconds period_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Watched> watched_;
  std::optional<WatchdogFault> fault_;
  std::thread thread_;
};

}  // namespace fsdpsim
