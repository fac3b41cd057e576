#pragma once
/// What the single-process launcher (cuda_runner.cpp) and the MPI launcher (cuda_mpi.cpp) share: running one rank's
/// steps on its GPU, and the option checks made before any device is touched. Internal to exec/cuda.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nccl.h>

#include "exec/cuda/cuda_runner.h"
#include "exec/cuda/nccl/collective_watchdog.h"

namespace fsdpsim {

/// What a rank shares with the other ranks of its process.
struct RankShared {
  std::atomic<bool>* stop = nullptr;   ///< raised by the first rank that fails (or whose watchdog finds a fault)
  IssueBoard* board = nullptr;         ///< how far each rank has issued (null under MPI: the peers are elsewhere)
  PredictedPeak* predicted = nullptr;  ///< the simulator's prediction, for out-of-memory reports
};

/// What one rank produced.
struct RankOutcome {
  RunRecord run;
  std::vector<std::string> problems;
  CudaOverheads overheads;
};

/// Runs `options.steps` steps of `schedule` as world rank `rank` on `device`, through the interpreter. Takes over
/// `world` (a nonblocking communicator; null when emulating): it is destroyed at the end, or aborted when the run
/// fails — then `shared.stop` is raised for the other ranks of this process, `*root_cause` (when given) says whether
/// this rank failed first, and the error is rethrown (the watchdog's report when it found the fault).
RankOutcome run_rank(const Schedule& schedule, const CudaOptions& options, int32_t device, int32_t rank,
                     int32_t world_size, ncclComm_t world, const RankShared& shared, bool* root_cause,
                     int64_t in_use_before_world_bytes = -1);

/// Throws ConfigError, naming the option and the fix, for options that cannot run `schedule`.
void check_cuda_options(const Schedule& schedule, const CudaOptions& options);

/// "NVIDIA H100 80GB HBM3 x8 (NCCL 2.28.9)" and the like, for ExecResult::device.
std::string describe_devices(const std::vector<int32_t>& devices, const std::string& mode);

/// The MPI launcher: one process per GPU; rank 0 returns the run (cuda_mpi.cpp). Throws ConfigError when fsdpsim was
/// built without MPI.
ExecResult run_cuda_mpi(const Schedule& schedule, const CudaOptions& options, CudaOverheads& overheads);

}  // namespace fsdpsim
