#pragma once
/// Finds and opens one of fsdpsim's optional modules (the CUDA backend, the MPI launcher) the first time a command
/// needs it, so that the libraries behind it are mapped only by the commands that use them (docs/architecture.md
/// §8.4). A module is looked for, in order: where its environment variable points (then nowhere else); beside the
/// program or the Python module that runs; in <prefix>/lib/fsdpsim/ of an installed program; where the build put it.

#include <functional>
#include <string>

namespace fsdpsim {

/// Where one module lives and how to recognise it.
struct ModuleSearch {
  std::string file_name;        ///< e.g. "libfsdpsim_mpi.so"
  std::string env_variable;     ///< a path the user gives; when set, the only place looked at
  std::string from_bindir;      ///< the install folder relative to the program's (e.g. "../lib/fsdpsim")
  std::string build_path;       ///< where this build wrote it (tests and the build tree's Python module)
  std::string entry_symbol;     ///< the one C function the module exports; it returns the module's table
  /// Why the table a candidate returned does not fit this program ("" when it does).
  std::function<std::string(const void* table)> mismatch;
};

/// The outcome of a search: the table of the first candidate that loaded and fitted, or every place looked at.
struct LoadedModule {
  const void* table = nullptr;
  std::string places_tried;  ///< one "\n  PATH: reason" line per candidate that failed, when `table` is null
};

/// Looks for the module, dlopens the first candidate that exists (RTLD_NOW, so that a missing library is reported
/// here rather than at the first call) and calls its entry. A loaded module stays open for the life of the process.
[[nodiscard]] LoadedModule load_module(const ModuleSearch& search);

}  // namespace fsdpsim
