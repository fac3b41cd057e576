#pragma once
/// Nonblocking NCCL communicators (ncclConfig_t::blocking = 0): the only kind ncclCommAbort can stop while a call on
/// it is under way, since no host thread is ever stuck inside NCCL. The price is that every NCCL call may return
/// ncclInProgress, and then the communicator's state (ncclCommGetAsyncError) must be polled until it is ncclSuccess
/// before the next NCCL call or any CUDA work on the streams NCCL uses (NCCL User Guide, API, ncclCommGetAsyncError,
/// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/comms.html#ncclcommgetasyncerror; nccl4py,
/// Communicator.get_async_error, .../docs/nccl4py/communicator/status.html). Internal to exec/cuda.

#include <atomic>
#include <chrono>
#include <string>

#include <nccl.h>

#include "common/units.h"

namespace fsdpsim {

/// How long a wait for a nonblocking communicator may last, and what else ends it.
struct NcclWait {
  TimeNs timeout_ns = 0;                    ///< 0: no limit
  const std::atomic<bool>* stop = nullptr;  ///< raised when another rank failed: the wait ends with an error
  std::string what;                         ///< "ncclCommSplit for group 'dp_shard'", for messages
};

/// A config that makes a communicator nonblocking (NCCL_CONFIG_INITIALIZER, then blocking = 0).
ncclConfig_t nonblocking_config();

/// Throws CudaError naming `call` unless `result` is ncclSuccess or ncclInProgress (what a nonblocking call may
/// return; ncclInProgress means the caller must then wait_ready()).
void check_nonblocking(ncclResult_t result, const char* call, const char* file, int line);

/// Polls the state of `comm` until it is not ncclInProgress. Throws CudaError when the state is an error
/// (CudaFault::nccl_async_error), when `wait.timeout_ns` passes (CudaFault::collective_timeout) or when `wait.stop`
/// is raised (CudaFault::peer_failed).
void wait_ready(ncclComm_t comm, const NcclWait& wait);

/// Waits for the communicator a nonblocking ncclCommSplit or ncclCommInitRankConfig writes into `*slot` — NCCL
/// stores it (atomically, with release order) only when its background job ends (src/init.cc, ncclCommInitRankFunc)
/// — then for it to be ready. Errors of `parent` (may be null) end the wait too. Returns the communicator.
ncclComm_t wait_new_comm(ncclComm_t* slot, ncclComm_t parent, const NcclWait& wait);

/// Throws CudaError when a wait that has lasted since `start` must end: `state` is an error (its text and `detail`,
/// from ncclGetLastError, in the message), `wait.stop` is raised, or `wait.timeout_ns` has passed.
void check_wait(ncclResult_t state, const std::string& detail, const NcclWait& wait,
                std::chrono::steady_clock::time_point start);
/// Pauses between two polls of a wait: eagerly for the first ones, then a millisecond at a time.
void wait_pause(int polls);

/// "ncclRemoteError" and the like, for messages.
const char* nccl_result_name(ncclResult_t result);

}  // namespace fsdpsim

/// Runs an NCCL call on a nonblocking communicator; throws CudaError unless it returns ncclSuccess or ncclInProgress.
#define FSDPSIM_NCCL_NB(call) ::fsdpsim::check_nonblocking((call), #call, __FILE__, __LINE__)
