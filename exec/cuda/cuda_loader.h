#pragma once
/// Loads the CUDA backend's module (libfsdpsim_cuda.so) the first time a command needs a GPU, so that the CUDA
/// runtime, cuBLAS, cuBLASLt and NCCL are mapped only then (docs/architecture.md §8.4). The module is looked for, in
/// order: where $FSDPSIM_CUDA_BACKEND points; beside the program (or the Python module) that runs; in
/// <prefix>/lib/fsdpsim/ of an installed program; where this build put it. Includes no CUDA header.

#include <string>

#include "exec/cuda/cuda_backend_api.h"

namespace fsdpsim {

/// The backend's entry points, loaded once per process. Throws Error naming each place looked at and what went wrong
/// there (no such file, a library it needs that the dynamic loader cannot find, a module from another build).
[[nodiscard]] const CudaBackendApi& cuda_backend();

/// True when the module loads and a CUDA device can be used; otherwise `why` says what is missing.
bool cuda_backend_device_available(std::string* why);

}  // namespace fsdpsim
