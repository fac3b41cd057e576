#include "cli/mpi_sweep.h"

#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "cli/mpi_module_api.h"
#include "common/error.h"
#include "common/module_loader.h"

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
const MpiModuleApi& mpi_module() {
  static const LoadedModule loaded = [] {
    ModuleSearch search;
    search.file_name = "libfsdpsim_mpi.so";
    search.env_variable = "FSDPSIM_MPI_MODULE";
    search.from_bindir = FSDPSIM_MPI_MODULE_FROM_BINDIR;
    search.build_path = FSDPSIM_MPI_MODULE_BUILD_PATH;
    search.entry_symbol = kMpiModuleEntrySymbol;
    search.mismatch = [](const void* table) -> std::string {
      const auto& api = *static_cast<const MpiModuleApi*>(table);
      if (api.abi_version != kMpiModuleAbiVersion || api.start == nullptr || api.gather_texts_to_rank0 == nullptr) {
        return "it was built from another fsdpsim; use the module built with this program";
      }
      return "";
    };
    return load_module(search);
  }();
  if (loaded.table == nullptr) {
    throw Error("the MPI launcher could not be loaded; looked at:" + loaded.places_tried +
                "\n  It needs Open MPI's libmpi (Debian: libopenmpi3): install it, or point FSDPSIM_MPI_MODULE at the "
                "libfsdpsim_mpi.so built with this program; or run one process per shard with --shard i/N and merge.");
  }
  return *static_cast<const MpiModuleApi*>(loaded.table);
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
  int rank = 0, size = 0;
  if (const std::string error = mpi_module().start(&rank, &size); !error.empty()) throw std::runtime_error(error);
  if (rank != launch.rank || size != launch.size) {
    // srun without an MPI plugin starts N singletons: each would sweep everything and print it.
    throw ConfigError(SourceLocation{"<mpi>", 0, 0}, "",
                      "the launcher started " + std::to_string(launch.size) + " processes but MPI sees a world of " +
                          std::to_string(size),
                      "launch with mpirun, or srun --mpi=pmix (or pmi2), so that the processes form one MPI world");
  }
}

std::vector<std::string> gather_texts_to_rank0(const std::string& mine) {
  std::vector<std::string> texts;
  if (const std::string error = mpi_module().gather_texts_to_rank0(mine, &texts); !error.empty()) {
    throw std::runtime_error(error);
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
