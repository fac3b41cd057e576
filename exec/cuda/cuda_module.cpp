// The one symbol libfsdpsim_cuda.so exports: the table of the backend's entry points (exec/cuda/cuda_backend_api.h).
// Everything else in the module is hidden, so the program's own copies of the shared layers never mix with these.

#include "exec/cuda/cuda_backend_api.h"

namespace {

fsdpsim::ExecResult run(const fsdpsim::Schedule& schedule, const fsdpsim::CudaOptions& options) {
  return fsdpsim::run_cuda(schedule, options);
}

}  // namespace

// Returns the table as `const void*`: the loader (common/module_loader.h) calls every module's entry through that one
// type, and a call through a pointer of another function type is undefined behaviour.
extern "C" __attribute__((visibility("default"))) const void* fsdpsim_cuda_backend_api();

extern "C" __attribute__((visibility("default"))) const void* fsdpsim_cuda_backend_api() {
  static const fsdpsim::CudaBackendApi api = [] {
    fsdpsim::CudaBackendApi a = fsdpsim::cuda_backend_api_shape();
    a.device_available = &fsdpsim::cuda_device_available;
    a.load_kernels_eagerly_for_pipelines = &fsdpsim::load_kernels_eagerly_for_pipelines;
    a.run = &run;  // run_cuda is overloaded: name the two-argument one
    a.measure_gpus = &fsdpsim::measure_gpus;
    return a;
  }();
  return &api;
}
