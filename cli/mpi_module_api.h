#pragma once
/// The MPI launcher's entry points as one table of functions: the contract between the program and its MPI module,
/// libfsdpsim_mpi.so (cli/mpi_module.cpp), which the program loads only when a launcher started it as one of several
/// processes (cli/mpi_sweep.h). Every other run maps no MPI library: Open MPI and what it pulls in (hwloc, libevent,
/// PMIx) cost a plain `fsdpsim --version` about 6 ms of its start-up. Errors come back as text, never as exceptions,
/// so that no exception type has to cross the module's boundary.

#include <cstdint>
#include <string>
#include <vector>

namespace fsdpsim::cli {

/// Bumped whenever a function's signature changes.
inline constexpr int32_t kMpiModuleAbiVersion = 1;

/// The C symbol the module exports: `const void* fsdpsim_mpi_module_api()`, a `const MpiModuleApi*`.
inline constexpr const char* kMpiModuleEntrySymbol = "fsdpsim_mpi_module_api";

struct MpiModuleApi {
  int32_t abi_version = 0;
  /// Starts MPI once (finalised at exit) and reports MPI_COMM_WORLD's rank and size; "" or what failed.
  std::string (*start)(int* rank, int* size) = nullptr;
  /// Every rank's text, in rank order, into `texts` on rank 0 (left empty on the others); "" or what failed.
  /// Collective: every rank calls it.
  std::string (*gather_texts_to_rank0)(const std::string& mine, std::vector<std::string>* texts) = nullptr;
};

}  // namespace fsdpsim::cli
