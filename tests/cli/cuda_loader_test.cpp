// The CUDA backend is a module the program loads on first use (exec/cuda/cuda_loader.h): the planner's commands never
// map the GPU libraries, and a GPU command that cannot load the module says where it looked and why.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/run_fsdpsim.h"

namespace {

bool has_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CudaLoader, TheProgramLinksNoGpuLibrary) {
  // What the dynamic loader maps before main: none of the CUDA runtime, cuBLAS, cuBLASLt or NCCL.
  const ProgramResult r = run_program("ldd " + std::string(FSDPSIM_BINARY_DIR) + "/fsdpsim");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_text(r.output, "libc.so")) << r.output;  // the listing is real
  for (const char* library : {"libcudart", "libcublas", "libcublasLt", "libnccl"}) {
    EXPECT_FALSE(has_text(r.output, library)) << library << " is mapped at start-up:\n" << r.output;
  }
}

TEST(CudaLoader, AMissingModuleNamesWhereItLookedAndWhatItNeeds) {
  const ProgramResult r = run_program("FSDPSIM_CUDA_BACKEND=/nonexistent/libfsdpsim_cuda.so " +
                                      std::string(FSDPSIM_BINARY_DIR) +
                                      "/fsdpsim exec --backend cuda --model llama3-8b --topology dgx-h100-ndr");
  EXPECT_NE(r.exit_code, 0) << r.output;
#ifdef FSDPSIM_HAVE_CUDA
  EXPECT_TRUE(has_text(r.output, "the CUDA backend could not be loaded; looked at:")) << r.output;
  EXPECT_TRUE(has_text(r.output, "/nonexistent/libfsdpsim_cuda.so: no such file")) << r.output;
  EXPECT_TRUE(has_text(r.output, "LD_LIBRARY_PATH")) << r.output;
#else
  EXPECT_TRUE(has_text(r.output, "built without the CUDA backend")) << r.output;
#endif
}

TEST(CudaLoader, APlannerCommandNeverLoadsTheModule) {
  // A module that cannot load would fail any command that loaded it: simulate never does.
  const ProgramResult r = run_program("FSDPSIM_CUDA_BACKEND=/nonexistent/libfsdpsim_cuda.so " +
                                      std::string(FSDPSIM_BINARY_DIR) + "/fsdpsim simulate --model llama3-8b");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_text(r.output, "step time")) << r.output;
}

}  // namespace
