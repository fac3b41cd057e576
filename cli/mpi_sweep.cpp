#include "cli/mpi_sweep.h"

#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "common/error.h"

#if FSDPSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace fsdpsim::cli {
namespace {

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(n);
}

#if FSDPSIM_HAVE_MPI
void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  (void)MPI_Error_string(status, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + text);
}

void finalize_mpi() {
  int finalized = 0;
  (void)MPI_Finalized(&finalized);
  if (!finalized) (void)MPI_Finalize();
}
#endif

}  // namespace

std::optional<MpiLaunch> mpi_launch_from_environment() {
  // Open MPI's mpirun, then a PMI launcher (MPICH, srun --mpi=pmi2), then Slurm's own variables.
  const char* const names[][3] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                                  {"PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"},
                                  {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE"}};
  for (const auto& [rank_name, size_name, local_name] : names) {
    const auto rank = env_int(rank_name);
    const auto size = env_int(size_name);
    if (!rank || !size) continue;
    if (*size <= 1) return std::nullopt;
    MpiLaunch launch;
    launch.rank = *rank;
    launch.size = *size;
    launch.local_size = env_int(local_name).value_or(1);
    if (launch.local_size < 1) launch.local_size = 1;
    return launch;
  }
  return std::nullopt;
}

#if FSDPSIM_HAVE_MPI

void start_mpi(const MpiLaunch& launch) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    check(MPI_Init(nullptr, nullptr), "MPI_Init");
    (void)std::atexit(finalize_mpi);
  }
  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (rank != launch.rank || size != launch.size) {
    // srun without an MPI plugin starts N singletons: each would sweep everything and print it.
    throw ConfigError(SourceLocation{"<mpi>", 0, 0}, "",
                      "the launcher started " + std::to_string(launch.size) + " processes but MPI sees a world of " +
                          std::to_string(size),
                      "launch with mpirun, or srun --mpi=pmix (or pmi2), so that the processes form one MPI world");
  }
}

std::vector<std::string> gather_texts_to_rank0(const std::string& mine) {
  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw std::runtime_error("a rank's sweep part exceeds 2 GiB; run more ranks or shard with --shard");
  }
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? static_cast<size_t>(size) : 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  long long all = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = static_cast<int>(all);
    all += lengths[r];
    if (all > std::numeric_limits<int>::max()) {
      throw std::runtime_error("the gathered sweep parts exceed 2 GiB; shard with --shard and merge instead");
    }
  }
  std::string joined(static_cast<size_t>(all), '\0');
  check(MPI_Gatherv(mine.data(), length, MPI_CHAR, joined.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> texts;
  for (size_t r = 0; r < lengths.size(); ++r) {
    texts.push_back(joined.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  }
  return texts;
}

#else

void start_mpi(const MpiLaunch& launch) {
  throw ConfigError(SourceLocation{"<mpi>", 0, 0}, "",
                    "started as one of " + std::to_string(launch.size) +
                        " processes, but this fsdpsim was built "
                        "without MPI",
                    "install libopenmpi-dev and rebuild, or run one process per shard with --shard i/N and merge");
}

std::vector<std::string> gather_texts_to_rank0(const std::string&) {
  throw std::logic_error("gather_texts_to_rank0 without MPI");
}

#endif

}  // namespace fsdpsim::cli
