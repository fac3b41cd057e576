// dlopen() of fsdpsim's optional modules, with the search order of common/module_loader.h.
#include "common/module_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fsdpsim {
namespace {

namespace fs = std::filesystem;

// The folder of the shared object that holds this code (the Python module) or else of the running program. For code
// in the program itself dladdr() names argv[0], which need not be a path, so /proc/self/exe is asked instead.
fs::path folder_of_this_code() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_module), &info) != 0 && info.dli_fname != nullptr) {
    const fs::path object(info.dli_fname);
    if (object.filename().string().find(".so") != std::string::npos && object.has_parent_path()) {
      return object.parent_path();
    }
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe.parent_path();
}

std::vector<fs::path> candidates(const ModuleSearch& search) {
  std::vector<fs::path> paths;
  if (const char* env = std::getenv(search.env_variable.c_str()); env != nullptr && *env != '\0') {
    paths.emplace_back(env);  // the user's word is final: no other place is tried
    return paths;
  }
  const fs::path here = folder_of_this_code();
  if (!here.empty()) {
    paths.push_back(here / search.file_name);
    paths.push_back(here / search.from_bindir / search.file_name);
  }
  paths.emplace_back(search.build_path);
  return paths;
}

}  // namespace

LoadedModule load_module(const ModuleSearch& search) {
  LoadedModule loaded;
  for (const fs::path& path : candidates(search)) {
    std::error_code error;
    if (!fs::exists(path, error)) {
      loaded.places_tried += "\n  " + path.string() + ": no such file";
      continue;
    }
    // RTLD_LOCAL keeps the module's symbols to itself.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      loaded.places_tried += "\n  " + path.string() + ": " + (why != nullptr ? why : "dlopen failed");
      continue;
    }
    using Entry = const void* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, search.entry_symbol.c_str()));
    const void* table = entry != nullptr ? entry() : nullptr;
    const std::string wrong =
        table == nullptr ? "it exports no " + search.entry_symbol : (search.mismatch ? search.mismatch(table) : "");
    if (!wrong.empty()) {
      loaded.places_tried += "\n  " + path.string() + ": " + wrong;
      dlclose(handle);
      continue;
    }
    loaded.table = table;  // the handle stays open for the life of the process
    return loaded;
  }
  return loaded;
}

}  // namespace fsdpsim
