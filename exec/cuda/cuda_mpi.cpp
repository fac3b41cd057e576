// The MPI launcher: one process per GPU under mpirun/srun. Each process takes the GPU of its node-local rank, rank 0
// creates the NCCL unique id and broadcasts it over MPI (as nccl-tests does), every rank joins the world with
// ncclCommInitRank and runs the interpreter; rank 0 gathers every rank's problems and returns the run.
#include "exec/cuda/cuda_launch.h"

#if FSDPSIM_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <vector>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/nccl/nccl_nonblocking.h"
#include "exec/cuda/runtime/cuda_check.h"
#include "exec/stage_runs.h"
#endif

namespace fsdpsim {

#if FSDPSIM_HAVE_MPI
namespace {

/// Runs an MPI call; throws CudaError naming the call and MPI's error string unless it returns MPI_SUCCESS.
#define FSDPSIM_MPI(call)                                                                          \
  do {                                                                                             \
    const int fsdpsim_mpi_status_ = (call);                                                        \
    if (fsdpsim_mpi_status_ != MPI_SUCCESS) throw_mpi_error(fsdpsim_mpi_status_, #call, __LINE__); \
  } while (false)

[[noreturn]] void throw_mpi_error(int status, const char* call, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  (void)MPI_Error_string(status, text, &length);
  throw CudaError(std::string(call) + " failed at " + __FILE__ + ":" + std::to_string(line) + ": " + text, false);
}

void finalize_mpi() {
  int finalized = 0;
  (void)MPI_Finalized(&finalized);
  if (!finalized) (void)MPI_Finalize();
}

// MPI_Init when nobody did; MPI_Finalize then runs at process exit (MPI cannot be initialised twice).
void ensure_mpi() {
  int initialized = 0;
  FSDPSIM_MPI(MPI_Initialized(&initialized));
  if (initialized) return;
  FSDPSIM_MPI(MPI_Init(nullptr, nullptr));
  (void)std::atexit(finalize_mpi);
}

int32_t local_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  FSDPSIM_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int rank = 0;
  FSDPSIM_MPI(MPI_Comm_rank(node, &rank));
  FSDPSIM_MPI(MPI_Comm_free(&node));
  return rank;
}

int32_t device_of(const CudaOptions& o, int32_t local) {
  int count = 0;
  FSDPSIM_CUDA(cudaGetDeviceCount(&count));
  if (!o.devices.empty() && local >= static_cast<int32_t>(o.devices.size())) {
    throw ConfigError(SourceLocation{"<exec --backend cuda --mpi>", 0, 0}, "--devices",
                      "lists " + std::to_string(o.devices.size()) + " GPUs but node-local rank " +
                          std::to_string(local) + " needs one",
                      "list one GPU per process of a node, or leave --devices out");
  }
  const int32_t device = o.devices.empty() ? local : o.devices[static_cast<size_t>(local)];
  if (device >= count) {
    throw ConfigError(SourceLocation{"<exec --backend cuda --mpi>", 0, 0}, "--devices",
                      "node-local rank " + std::to_string(local) + " would use GPU " + std::to_string(device) +
                          " but the node has " + std::to_string(count),
                      "start at most " + std::to_string(count) + " processes per node");
  }
  return device;
}

// Every rank's problems, prefixed with the rank, in rank order on rank 0 (empty elsewhere).
std::vector<std::string> gather_problems(const std::vector<std::string>& mine, int32_t rank, int32_t size) {
  std::string text;
  for (const auto& p : mine) text += "rank " + std::to_string(rank) + ": " + p + '\n';
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size), 0), offsets(static_cast<size_t>(size), 0);
  FSDPSIM_MPI(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  int total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(rank == 0 ? total : 0), '\0');
  FSDPSIM_MPI(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                          MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\n', start);
    out.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// With pipeline parallelism, each stage's first rank measured that stage: rank 0 receives the others' steps and merges
// them into one run (exec/stage_runs.h); the other ranks return their own.
RunRecord gather_pipeline(const Schedule& schedule, RunRecord mine, int32_t rank) {
  const int32_t stages = schedule.info.pipeline_stages;
  if (stages <= 1) return mine;
  constexpr int kTag = 7;
  const int32_t place = rank % ranks_per_stage(schedule);
  if (rank != 0) {
    if (place != 0) return mine;
    const std::vector<int64_t> packed = pack_steps(mine);
    const auto count = static_cast<int64_t>(packed.size());
    FSDPSIM_MPI(MPI_Send(&count, 1, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD));
    FSDPSIM_MPI(MPI_Send(packed.data(), static_cast<int>(count), MPI_INT64_T, 0, kTag, MPI_COMM_WORLD));
    return mine;
  }
  std::vector<RunRecord> by_stage{std::move(mine)};
  for (int32_t stage = 1; stage < stages; ++stage) {
    const int32_t from = rank_in_stage(schedule, 0, stage);
    int64_t count = 0;
    FSDPSIM_MPI(MPI_Recv(&count, 1, MPI_INT64_T, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    std::vector<int64_t> packed(static_cast<size_t>(std::max<int64_t>(0, count)));
    FSDPSIM_MPI(MPI_Recv(packed.data(), static_cast<int>(packed.size()), MPI_INT64_T, from, kTag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
    by_stage.push_back(unpack_steps(packed, schedule.ops.size()));
  }
  const Measurement origin = *by_stage.front().measurement();
  RunRecord merged = merge_stage_runs(schedule, by_stage);
  merged.origin = origin;
  return merged;
}

// One rank's run under MPI (run_cuda_mpi below ends the job when it throws).
ExecResult run_mpi_rank(const Schedule& schedule, const CudaOptions& options, CudaOverheads& overheads, int rank,
                        int size) {
  if (size != schedule.info.world_size) {
    throw ConfigError(SourceLocation{"<exec --backend cuda --mpi>", 0, 0}, "MPI world size",
                      std::to_string(size) + " processes were started but the schedule was built for " +
                          std::to_string(schedule.info.world_size) + " GPUs",
                      "start " + std::to_string(schedule.info.world_size) + " processes (one per GPU)");
  }
  std::string why;
  if (!cuda_device_available(&why)) throw CudaError("rank " + std::to_string(rank) + " has no GPU: " + why, false);
  const int32_t device = device_of(options, local_rank());
  FSDPSIM_CUDA(cudaSetDevice(device));
  ncclUniqueId id{};
  FSDPSIM_CUDA(cudaFree(nullptr));  // creates the context, so that what NCCL then takes can be measured apart
  const int64_t before_world = device_memory_in_use();
  if (rank == 0) FSDPSIM_NCCL(ncclGetUniqueId(&id));
  FSDPSIM_MPI(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD));
  // A nonblocking world communicator (nccl_nonblocking.h); NCCL may write the slot after a failed wait, so the slot
  // is left to it then.
  auto slot = std::make_unique<ncclComm_t>(nullptr);
  ncclConfig_t config = nonblocking_config();
  FSDPSIM_NCCL_NB(ncclCommInitRankConfig(slot.get(), size, id, rank, &config));
  ncclComm_t world = nullptr;
  try {
    world = wait_new_comm(
        slot.get(), nullptr,
        NcclWait{options.collective_timeout_ns, nullptr, "ncclCommInitRankConfig for rank " + std::to_string(rank)});
  } catch (...) {
    (void)slot.release();
    throw;
  }
  std::atomic<bool> abort{false};  // no other rank in this process; NCCL reports remote failures as async errors
  PredictedPeak predicted(options.predicted_peak);
  RankOutcome outcome = run_rank(schedule, options, device, rank, size, world, RankShared{&abort, nullptr, &predicted},
                                 nullptr, before_world);
  ExecResult result;
  result.run = gather_pipeline(schedule, std::move(outcome.run), rank);
  result.problems = gather_problems(outcome.problems, rank, size);
  result.measurement().device =
      describe_devices({device}, "rank " + std::to_string(rank) + " of " + std::to_string(size) + " MPI processes");
  overheads = outcome.overheads;
  return result;
}

}  // namespace

ExecResult run_cuda_mpi(const Schedule& schedule, const CudaOptions& options, CudaOverheads& overheads) {
  ensure_mpi();
  int rank = 0, size = 0;
  FSDPSIM_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  FSDPSIM_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  try {
    return run_mpi_rank(schedule, options, overheads, rank, size);
  } catch (const std::exception& e) {
    if (size <= 1) throw;
    // The other ranks may be waiting for this one in MPI (rank 0 gathers every rank's problems and every stage's
    // run), and MPI_Finalize at exit would wait for them: end the whole job, as torchrun ends a job whose rank
    // failed, once this rank has said why.
    std::fprintf(stderr, "fsdpsim exec: rank %d of %d: %s\n", rank, size, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    throw;  // not reached: MPI_Abort ends the process
  }
}

#else

ExecResult run_cuda_mpi(const Schedule& /*schedule*/, const CudaOptions& /*options*/, CudaOverheads& /*overheads*/) {
  throw ConfigError(SourceLocation{"<exec --backend cuda>", 0, 0}, "--mpi", "this fsdpsim was built without MPI",
                    "install libopenmpi-dev and reconfigure with -DFSDPSIM_MPI=ON, or drop --mpi");
}

#endif

}  // namespace fsdpsim
