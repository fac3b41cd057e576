#include "exec/cuda/cuda_loader.h"

#include "common/error.h"
#include "common/module_loader.h"

namespace fsdpsim {
namespace {

// Why a module does not fit this program, or "".
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

LoadedModule load() {
  ModuleSearch search;
  search.file_name = "libfsdpsim_cuda.so";
  search.env_variable = "FSDPSIM_CUDA_BACKEND";
  search.from_bindir = FSDPSIM_CUDA_MODULE_FROM_BINDIR;
  search.build_path = FSDPSIM_CUDA_MODULE_BUILD_PATH;
  search.entry_symbol = kCudaBackendEntrySymbol;
  search.mismatch = [](const void* table) { return mismatch(*static_cast<const CudaBackendApi*>(table)); };
  return load_module(search);
}

const CudaBackendApi* loaded_once(std::string* places_tried) {
  static const LoadedModule loaded = load();  // thread-safe initialisation
  if (places_tried != nullptr) *places_tried = loaded.places_tried;
  return static_cast<const CudaBackendApi*>(loaded.table);
}

}  // namespace

const CudaBackendApi& cuda_backend() {
  std::string places_tried;
  const CudaBackendApi* api = loaded_once(&places_tried);
  if (api == nullptr) {
    throw Error("the CUDA backend could not be loaded; looked at:" + places_tried +
                "\n  It needs the CUDA runtime, cuBLAS, cuBLASLt and NCCL of a CUDA install: put their folder on "
                "LD_LIBRARY_PATH, or point FSDPSIM_CUDA_BACKEND at the libfsdpsim_cuda.so built with this program.");
  }
  return *api;
}

bool cuda_backend_device_available(std::string* why) {
  std::string places_tried;
  const CudaBackendApi* api = loaded_once(&places_tried);
  if (api == nullptr) {
    if (why != nullptr) *why = "the CUDA backend could not be loaded; looked at:" + places_tried;
    return false;
  }
  return api->device_available(why);
}

}  // namespace fsdpsim
