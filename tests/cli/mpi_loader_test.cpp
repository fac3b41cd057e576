// The MPI launcher is a module the program loads only under mpirun/srun (cli/mpi_sweep.h): a plain run maps no MPI
// library, and a launched sweep that cannot load the module says where it looked and what it needs.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/run_fsdpsim.h"

namespace {

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kProgram = std::string(FSDPSIM_BINARY_DIR) + "/fsdpsim";

TEST(MpiLoader, TheProgramLinksNoMpiLibrary) {
  const ProgramResult r = run_program("ldd " + kProgram);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(mentions(r.output, "libc.so")) << r.output;  // the listing is real
  for (const char* library : {"libmpi", "libopen-pal", "libopen-rte", "libhwloc", "libevent"}) {
    EXPECT_FALSE(mentions(r.output, library)) << library << " is mapped at start-up:\n" << r.output;
  }
}

TEST(MpiLoader, ALaunchedSweepWithoutTheModuleNamesWhereItLooked) {
  // Open MPI's variables as mpirun sets them for rank 0 of 2; the module is pointed at a file that does not exist.
  const ProgramResult r = run_program(
      "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 "
      "FSDPSIM_MPI_MODULE=/nonexistent/libfsdpsim_mpi.so " +
      kProgram + " sweep --model llama3-8b --topology dgx-h100-ndr --grid nodes=1,2");
  EXPECT_NE(r.exit_code, 0) << r.output;
  if (mentions(run_program(kProgram + " --version").output, "without MPI")) {
    EXPECT_TRUE(mentions(r.output, "built without MPI")) << r.output;
    return;
  }
  EXPECT_TRUE(mentions(r.output, "the MPI launcher could not be loaded; looked at:")) << r.output;
  EXPECT_TRUE(mentions(r.output, "/nonexistent/libfsdpsim_mpi.so: no such file")) << r.output;
  EXPECT_TRUE(mentions(r.output, "--shard i/N")) << r.output;
}

TEST(MpiLoader, APlainSweepNeverLoadsTheModule) {
  // A module that cannot load would fail any run that loaded it: a sweep that no launcher started never does.
  const ProgramResult r = run_program("FSDPSIM_MPI_MODULE=/nonexistent/libfsdpsim_mpi.so " + kProgram +
                                      " sweep --model llama3-8b --topology dgx-h100-ndr --grid nodes=1,2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
