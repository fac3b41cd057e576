#include "exec/cuda/nccl/collective_watchdog.h"

#include <algorithm>

#include "exec/cuda/nccl/nccl_nonblocking.h"
#include "exec/fault_report.h"

namespace fsdpsim {
namespace {

// PyTorch's ProcessGroupNCCL watchdog wakes every 100 ms (kWatchdogThreadSleepMillis); a short timeout (tests, a
// small job) is checked at least 20 times within it, and never more often than every millisecond.
constexpr std::chrono::nanoseconds kLongestPeriod = std::chrono::milliseconds(100);
constexpr std::chrono::nanoseconds kShortestPeriod = std::chrono::milliseconds(1);

std::chrono::nanoseconds period_for(TimeNs timeout_ns) {
  return std::clamp(std::chrono::nanoseconds(timeout_ns / 20), kShortestPeriod, kLongestPeriod);
}

}  // namespace

IssueBoard::IssueBoard(int32_t ranks)
    : ranks_(ranks), positions_(std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(ranks))) {
  for (int32_t r = 0; r < ranks; ++r) positions_[static_cast<size_t>(r)].store(-1);
}

void IssueBoard::record(int32_t rank, int64_t position) {
  if (rank >= 0 && rank < ranks_) positions_[static_cast<size_t>(rank)].store(position, std::memory_order_relaxed);
}

int64_t IssueBoard::position(int32_t rank) const {
  if (rank < 0 || rank >= ranks_) return -1;
  return positions_[static_cast<size_t>(rank)].load(std::memory_order_relaxed);
}

CollectiveWatchdog::CollectiveWatchdog(WatchdogSetup setup, NcclGroups& groups)
    : setup_(setup), groups_(groups), period_(period_for(setup.timeout_ns)) {}

CollectiveWatchdog::~CollectiveWatchdog() {
  stop();
}

void CollectiveWatchdog::start(int32_t device) {
  thread_ = std::thread([this, device] {
    (void)cudaSetDevice(device);  // the current device is per thread
    loop();
  });
}

void CollectiveWatchdog::stop() noexcept {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CollectiveWatchdog::watch(OpId op, int32_t step, int64_t position, cudaEvent_t started, cudaEvent_t ended) {
  const std::lock_guard lock(mutex_);
  watched_.push_back(Watched{op, step, position, started, ended, std::nullopt});
}

void CollectiveWatchdog::clear() {
  const std::lock_guard lock(mutex_);
  watched_.clear();
}

std::optional<WatchdogFault> CollectiveWatchdog::fault() const {
  const std::lock_guard lock(mutex_);
  return fault_;
}

WatchdogFault CollectiveWatchdog::raise(CudaFault kind, const std::string& message) {
  WatchdogFault result;
  {
    const std::lock_guard lock(mutex_);
    if (!fault_) {
      const bool first = setup_.stop == nullptr || !setup_.stop->exchange(true);
      fault_ = WatchdogFault{kind, message, first};
    }
    result = *fault_;
  }
  // After the report is recorded: whoever sees the communicators aborted finds the cause here.
  (void)groups_.abort_all();
  cv_.notify_all();
  return result;
}

void CollectiveWatchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool go_on = poll();
    lock.lock();
    if (!go_on) return;
    cv_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

bool CollectiveWatchdog::poll() {
  if (fault().has_value()) return false;
  if (setup_.stop != nullptr && setup_.stop->load()) {
    // Another rank of the process failed: this rank's collectives wait for a peer that has stopped. Aborting its
    // communicators lets its streams drain; its own thread reports that it stopped because of the other rank.
    (void)groups_.abort_all();
    return false;
  }
  std::optional<WatchdogFault> found = check_collectives();
  if (!found) {
    if (std::optional<std::string> report = async_error_report()) {
      found = WatchdogFault{CudaFault::nccl_async_error, *report, false};
    }
  }
  if (!found) return true;
  (void)raise(found->kind, found->message);
  return false;
}

std::optional<WatchdogFault> CollectiveWatchdog::check_collectives() {
  const Clock::time_point now = Clock::now();
  // Event queries do not block: holding the lock over them only delays the rank's next watch() by microseconds.
  const std::lock_guard lock(mutex_);
  for (auto it = watched_.begin(); it != watched_.end();) {
    Watched& w = *it;
    // The run time counts from when the collective started on the device, not from when the host issued it (the
    // host runs ahead): a collective queued behind a long GEMM is not late. It is seen within one period.
    if (!w.began && cudaEventQuery(w.started) == cudaSuccess) w.began = now;
    const cudaError_t e = cudaEventQuery(w.ended);
    if (e == cudaSuccess) {
      it = watched_.erase(it);
      continue;
    }
    const Op& op = setup_.schedule->ops[w.op];
    if (e != cudaErrorNotReady) {
      return WatchdogFault{CudaFault::error,
                           "the device failed while running " + describe_op(op) + " (step " + std::to_string(w.step) +
                               ") on rank " + std::to_string(setup_.site.rank) + ": " + cudaGetErrorName(e) + " (" +
                               cudaGetErrorString(e) + "); " + kAbortedEveryCommunicator,
                           false};
    }
    const TimeNs ran_ns = w.began ? std::chrono::duration_cast<std::chrono::nanoseconds>(now - *w.began).count() : 0;
    if (w.began && ran_ns > setup_.timeout_ns) {
      CollectiveTimeout t{w.op, w.step, ran_ns, setup_.timeout_ns, false, {}, {}};
      issued_by(w.op, w.position, t.issued, t.not_issued);
      return WatchdogFault{CudaFault::collective_timeout, describe_collective_timeout(*setup_.schedule, setup_.site, t),
                           false};
    }
    ++it;
  }
  return std::nullopt;
}

std::optional<std::string> CollectiveWatchdog::async_error_report() const {
  const std::optional<CommFailure> failure = groups_.async_failure();
  if (!failure) return std::nullopt;
  const NcclAsyncError error{failure->group,
                             nccl_result_name(failure->result),
                             ncclGetErrorString(failure->result),
                             failure->detail,
                             failure->last.op,
                             failure->last.step};
  return describe_nccl_async_error(*setup_.schedule, setup_.site, error);
}

std::string CollectiveWatchdog::enqueue_timeout_report(OpId op, int32_t step, int64_t position,
                                                       TimeNs waited_ns) const {
  CollectiveTimeout t{op, step, waited_ns, setup_.timeout_ns, true, {}, {}};
  issued_by(op, position, t.issued, t.not_issued);
  return describe_collective_timeout(*setup_.schedule, setup_.site, t);
}

void CollectiveWatchdog::issued_by(OpId op, int64_t position, std::vector<int32_t>& issued,
                                   std::vector<int32_t>& not_issued) const {
  if (setup_.board == nullptr) return;
  const Op& o = setup_.schedule->ops[op];
  // A send's or receive's peer runs another stage, whose issue order is not this one's: positions do not compare.
  if (!o.group.valid() || is_p2p(o.kind)) return;
  for (const int32_t m : group_members(setup_.schedule->groups[o.group], setup_.site.rank)) {
    (setup_.board->position(m) >= position ? issued : not_issued).push_back(m);
  }
}

}  // namespace fsdpsim
