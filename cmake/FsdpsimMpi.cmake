# FSDPSIM_MPI=AUTO|ON|OFF: the MPI launcher of the executor (one process per GPU under mpirun/srun, rank 0's NCCL
# unique id broadcast over MPI, as nccl-tests does). Sets FSDPSIM_HAVE_MPI.
set(FSDPSIM_HAVE_MPI OFF)
if(NOT FSDPSIM_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(FSDPSIM_HAVE_MPI ON)
  elseif(FSDPSIM_MPI STREQUAL "ON")
    message(FATAL_ERROR "FSDPSIM_MPI=ON but no MPI was found: install libopenmpi-dev or configure -DFSDPSIM_MPI=OFF")
  endif()
endif()
