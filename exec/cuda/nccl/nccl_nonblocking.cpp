#include "exec/cuda/nccl/nccl_nonblocking.h"

#include <chrono>
#include <thread>

#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

// A nonblocking call that returns ncclInProgress usually finishes within microseconds (an enqueue) or seconds (a
// communicator's initialisation, a first connection to the peers): poll eagerly first, then back off so a long
// wait does not spin a core.
constexpr int kEagerPolls = 1000;
constexpr auto kBackoff = std::chrono::milliseconds(1);

std::string last_error(ncclComm_t comm) {
  const char* detail = ncclGetLastError(comm);
  return detail != nullptr ? std::string(detail) : std::string();
}

}  // namespace

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

void wait_pause(int polls) {
  if (polls < kEagerPolls) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(kBackoff);
  }
}

void check_wait(ncclResult_t state, const std::string& detail, const NcclWait& wait,
                std::chrono::steady_clock::time_point start) {
  if (state != ncclSuccess && state != ncclInProgress) {
    throw CudaError(wait.what + ": NCCL reported " + nccl_result_name(state) + " (" + ncclGetErrorString(state) + ")" +
                        (detail.empty() ? "" : ": " + detail),
                    CudaFault::nccl_async_error);
  }
  if (wait.stop != nullptr && wait.stop->load()) {
    throw CudaError(wait.what + ": stopped waiting, another rank failed", CudaFault::peer_failed);
  }
  const auto waited_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  if (wait.timeout_ns > 0 && waited_ns > wait.timeout_ns) {
    throw CudaError(wait.what + ": NCCL was still busy (ncclInProgress) after " + format_time_ns(waited_ns) +
                        " (timeout " + format_time_ns(wait.timeout_ns) +
                        "): a peer that never joined, or a network that does not connect",
                    CudaFault::collective_timeout);
  }
}

void check_nonblocking(ncclResult_t result, const char* call, const char* file, int line) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  throw_nccl_error(result, call, file, line);
}

void wait_ready(ncclComm_t comm, const NcclWait& wait) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    FSDPSIM_NCCL(ncclCommGetAsyncError(comm, &state));
    if (state == ncclSuccess) return;
    check_wait(state, state == ncclInProgress ? std::string() : last_error(comm), wait, start);
    wait_pause(polls);
  }
}

ncclComm_t wait_new_comm(ncclComm_t* slot, ncclComm_t parent, const NcclWait& wait) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    // NCCL's background job writes the slot with release order when it ends; read it with acquire order.
    ncclComm_t comm = std::atomic_ref<ncclComm_t>(*slot).load(std::memory_order_acquire);
    if (comm != nullptr) {
      wait_ready(comm, wait);
      return comm;
    }
    ncclResult_t state = ncclInProgress;
    if (parent != nullptr) FSDPSIM_NCCL(ncclCommGetAsyncError(parent, &state));
    check_wait(state, state == ncclInProgress || state == ncclSuccess ? std::string() : last_error(parent), wait,
               start);
    wait_pause(polls);
  }
}

const char* nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "ncclResult_t(unknown)";
  }
}

}  // namespace fsdpsim
