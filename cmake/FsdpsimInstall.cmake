# `cmake --install`: the program, the topology presets and GPU profiles as YAML (they are also built into the
# program), the headers, and a CMake package so that another project links the libraries:
#   find_package(fsdpsim 0.1 REQUIRED)
#   target_link_libraries(mytool PRIVATE fsdpsim::plan)   # or fsdpsim::sim, fsdpsim::schedule, ...
# The CUDA backend stays with the program: its libraries are the GPU machine's, not a dependency to export.
include(CMakePackageConfigHelpers)

set(_fsdpsim_exported common schedule model config frontends builders topology memory run report job sim exec plan)
set(_fsdpsim_targets fsdpsim_warnings fsdpsim_sanitizers)
foreach(_name IN LISTS _fsdpsim_exported)
  set_target_properties(fsdpsim_${_name} PROPERTIES EXPORT_NAME ${_name})
  list(APPEND _fsdpsim_targets fsdpsim_${_name})
endforeach()

install(TARGETS fsdpsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET fsdpsim_cuda)
  # The CUDA backend's module, loaded by the program on first use (exec/cuda/cuda_loader.h).
  install(TARGETS fsdpsim_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/fsdpsim)
endif()
if(TARGET fsdpsim_mpi)
  # The MPI launcher's module, loaded by the program only under mpirun/srun (cli/mpi_sweep.h).
  install(TARGETS fsdpsim_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/fsdpsim)
endif()
install(TARGETS ${_fsdpsim_targets} EXPORT fsdpsimTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY common schedule model config frontends builders topologies memory run report job sim exec plan
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fsdpsim
  FILES_MATCHING PATTERN "*.h"
  PATTERN "cuda" EXCLUDE)
install(DIRECTORY topologies/presets topologies/profiles DESTINATION ${CMAKE_INSTALL_DATADIR}/fsdpsim/topologies)
install(EXPORT fsdpsimTargets NAMESPACE fsdpsim:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fsdpsim)

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/fsdpsimConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/fsdpsimConfig.cmake" INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fsdpsim)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/fsdpsimConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/fsdpsimConfig.cmake" "${PROJECT_BINARY_DIR}/fsdpsimConfigVersion.cmake"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fsdpsim)
