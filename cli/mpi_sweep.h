#pragma once
/// A sweep over MPI ranks (`mpirun -n N fsdpsim sweep ...`, `srun fsdpsim sweep ...`): each rank evaluates its shard,
/// rank 0 gathers the parts and prints the one ranked result.

#include <optional>
#include <string>
#include <vector>

namespace fsdpsim::cli {

/// This process's place in a launch of several, as the launcher's environment states it before MPI starts (Open
/// MPI's OMPI_COMM_WORLD_*, PMI's PMI_*, Slurm's SLURM_*).
struct MpiLaunch {
  int rank = 0;
  int size = 1;
  int local_size = 1;  ///< processes on this node: they share its cores
};

/// The launch, when more than one process was started; nullopt for a plain run.
std::optional<MpiLaunch> mpi_launch_from_environment();

/// Starts MPI (once; finalised at exit) and checks that its world matches the launch.
void start_mpi(const MpiLaunch& launch);

/// Every rank's text, in rank order, on rank 0; empty on the others. Collective: every rank calls it.
std::vector<std::string> gather_texts_to_rank0(const std::string& mine);

}  // namespace fsdpsim::cli
