#include "exec/cuda/cuda_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/error.h"

namespace fsdpsim {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModuleName = "libfsdpsim_cuda.so";

// The folder of the shared object that holds this code (the Python module) or else of the running program. For code
// in the program itself dladdr() names argv[0], which need not be a path, so /proc/self/exe is asked instead.
fs::path folder_of_this_code() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuda_backend_device_available), &info) != 0 && info.dli_fname != nullptr) {
    const fs::path object(info.dli_fname);
    if (object.filename().string().find(".so") != std::string::npos && object.has_parent_path()) {
      return object.parent_path();
    }
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe.parent_path();
}

std::vector<fs::path> candidates() {
  std::vector<fs::path> paths;
  if (const char* env = std::getenv("FSDPSIM_CUDA_BACKEND"); env != nullptr && *env != '\0') {
    paths.emplace_back(env);  // the user's word is final: no other place is tried
    return paths;
  }
  const fs::path here = folder_of_this_code();
  if (!here.empty()) {
    paths.push_back(here / kModuleName);
    paths.push_back(here / FSDPSIM_CUDA_MODULE_FROM_BINDIR / kModuleName);
  }
  paths.emplace_back(FSDPSIM_CUDA_MODULE_BUILD_PATH);
  return paths;
}

// Why a module loaded from `path` does not fit this program, or "".
std::string mismatch(const CudaBackendApi& api) {
  const CudaBackendApi want = cuda_backend_api_shape();
  if (api.abi_version != want.abi_version || api.schedule_bytes != want.schedule_bytes ||
      api.options_bytes != want.options_bytes || api.result_bytes != want.result_bytes) {
    return "it was built from another fsdpsim (interface " + std::to_string(api.abi_version) + ", this program " +
           std::to_string(want.abi_version) + "); use the module built with this program";
  }
  if (api.device_available == nullptr || api.load_kernels_eagerly_for_pipelines == nullptr || api.run == nullptr ||
      api.measure_gpus == nullptr) {
    return "its table of entry points is incomplete";
  }
  return "";
}

struct Loaded {
  const CudaBackendApi* api = nullptr;
  std::string error;  // every place tried and why it failed, when api is null
};

Loaded load() {
  Loaded loaded;
  for (const fs::path& path : candidates()) {
    std::error_code error;
    if (!fs::exists(path, error)) {
      loaded.error += "\n  " + path.string() + ": no such file";
      continue;
    }
    // RTLD_NOW: a missing cuBLAS or NCCL is reported here, not at the first GEMM; RTLD_LOCAL keeps the module's
    // symbols to itself.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      loaded.error += "\n  " + path.string() + ": " + (why != nullptr ? why : "dlopen failed");
      continue;
    }
    using Entry = const CudaBackendApi* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaBackendEntrySymbol));
    const CudaBackendApi* api = entry != nullptr ? entry() : nullptr;
    const std::string wrong = api == nullptr ? std::string("it exports no ") + kCudaBackendEntrySymbol : mismatch(*api);
    if (!wrong.empty()) {
      loaded.error += "\n  " + path.string() + ": " + wrong;
      dlclose(handle);
      continue;
    }
    loaded.api = api;  // the handle stays open for the life of the process
    return loaded;
  }
  return loaded;
}

const Loaded& loaded_once() {
  static const Loaded loaded = load();  // thread-safe initialisation
  return loaded;
}

}  // namespace

const CudaBackendApi& cuda_backend() {
  const Loaded& loaded = loaded_once();
  if (loaded.api == nullptr) {
    throw Error("the CUDA backend could not be loaded; looked at:" + loaded.error +
                "\n  It needs the CUDA runtime, cuBLAS, cuBLASLt and NCCL of a CUDA install: put their folder on "
                "LD_LIBRARY_PATH, or point FSDPSIM_CUDA_BACKEND at the libfsdpsim_cuda.so built with this program.");
  }
  return *loaded.api;
}

bool cuda_backend_device_available(std::string* why) {
  const Loaded& loaded = loaded_once();
  if (loaded.api == nullptr) {
    if (why != nullptr) *why = "the CUDA backend could not be loaded; looked at:" + loaded.error;
    return false;
  }
  return loaded.api->device_available(why);
}

}  // namespace fsdpsim
