// libfsdpsim_mpi.so: the MPI calls of a sweep spread over MPI ranks, behind the one exported table of
// cli/mpi_module_api.h. Everything else in the module is hidden.
#include <mpi.h>

#include <cstdlib>
#include <limits>

#include "cli/mpi_module_api.h"

namespace {

using fsdpsim::cli::MpiModuleApi;

// "" when the call succeeded, else the call's name and MPI's words for the failure.
std::string failure(int status, const char* call) {
  if (status == MPI_SUCCESS) return "";
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  (void)MPI_Error_string(status, text, &length);
  return std::string(call) + " failed: " + text;
}

void finalize_mpi() {
  int finalized = 0;
  (void)MPI_Finalized(&finalized);
  if (!finalized) (void)MPI_Finalize();
}

std::string start(int* rank, int* size) {
  int initialized = 0;
  if (auto e = failure(MPI_Initialized(&initialized), "MPI_Initialized"); !e.empty()) return e;
  if (!initialized) {
    if (auto e = failure(MPI_Init(nullptr, nullptr), "MPI_Init"); !e.empty()) return e;
    (void)std::atexit(finalize_mpi);  // the module is never unloaded, so the handler stays valid
  }
  if (auto e = failure(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank"); !e.empty()) return e;
  return failure(MPI_Comm_size(MPI_COMM_WORLD, size), "MPI_Comm_size");
}

std::string gather_texts_to_rank0(const std::string& mine, std::vector<std::string>* texts) {
  int rank = 0, size = 0;
  if (auto e = failure(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank"); !e.empty()) return e;
  if (auto e = failure(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size"); !e.empty()) return e;
  // MPI counts are ints: a part beyond 2 GiB cannot be sent in one message.
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return "a rank's sweep part exceeds 2 GiB; run more ranks or shard with --shard";
  }
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? static_cast<size_t>(size) : 0);
  if (auto e = failure(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
      !e.empty()) {
    return e;
  }
  std::vector<int> offsets(lengths.size());
  long long all = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = static_cast<int>(all);
    all += lengths[r];
    if (all > std::numeric_limits<int>::max()) {
      return "the gathered sweep parts exceed 2 GiB; shard with --shard and merge instead";
    }
  }
  std::string joined(static_cast<size_t>(all), '\0');
  if (auto e = failure(MPI_Gatherv(mine.data(), length, MPI_CHAR, joined.data(), lengths.data(), offsets.data(),
                                   MPI_CHAR, 0, MPI_COMM_WORLD),
                       "MPI_Gatherv");
      !e.empty()) {
    return e;
  }
  for (size_t r = 0; r < lengths.size(); ++r) {
    texts->push_back(joined.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  }
  return "";
}

}  // namespace

// Returns the table as `const void*`, the one type through which common/module_loader.h calls every module's entry.
extern "C" __attribute__((visibility("default"))) const void* fsdpsim_mpi_module_api();

extern "C" __attribute__((visibility("default"))) const void* fsdpsim_mpi_module_api() {
  static const MpiModuleApi api{fsdpsim::cli::kMpiModuleAbiVersion, &start, &gather_texts_to_rank0};
  return &api;
}
