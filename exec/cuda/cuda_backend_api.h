#pragma once
/// The CUDA backend's entry points as one table of functions: the contract between the program and the backend's
/// shared module, libfsdpsim_cuda.so (exec/cuda/cuda_module.cpp), which the program loads only when a command drives a
/// GPU (exec/cuda/cuda_loader.h). The planner's commands therefore never map the CUDA runtime, cuBLAS, cuBLASLt or
/// NCCL: `fsdpsim --version` or a `simulate` starts in milliseconds on a CUDA build. Both sides are compiled from this
/// header in one build; the version and the sizes catch a module left over from another build.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cuda/cuda_runner.h"

namespace fsdpsim {

/// Bumped whenever a function's signature or a type handed across changes shape.
inline constexpr int32_t kCudaBackendAbiVersion = 1;

/// The C symbol the module exports: `const void* fsdpsim_cuda_backend_api()`, a `const CudaBackendApi*`.
inline constexpr const char* kCudaBackendEntrySymbol = "fsdpsim_cuda_backend_api";

/// The functions of exec/cuda/cuda_runner.h that the program's commands call.
struct CudaBackendApi {
  int32_t abi_version = 0;
  size_t schedule_bytes = 0;  ///< sizeof(Schedule) where the table was made
  size_t options_bytes = 0;   ///< sizeof(CudaOptions)
  size_t result_bytes = 0;    ///< sizeof(ExecResult)
  bool (*device_available)(std::string* why) = nullptr;
  void (*load_kernels_eagerly_for_pipelines)(const Schedule& schedule, const CudaOptions& options) = nullptr;
  ExecResult (*run)(const Schedule& schedule, const CudaOptions& options) = nullptr;
  GpuMeasurements (*measure_gpus)(const std::vector<int32_t>& devices) = nullptr;
};

/// The version and sizes of this side of the contract, functions empty: what a module must match.
[[nodiscard]] constexpr CudaBackendApi cuda_backend_api_shape() {
  CudaBackendApi shape;
  shape.abi_version = kCudaBackendAbiVersion;
  shape.schedule_bytes = sizeof(Schedule);
  shape.options_bytes = sizeof(CudaOptions);
  shape.result_bytes = sizeof(ExecResult);
  return shape;
}

}  // namespace fsdpsim
