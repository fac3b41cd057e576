# FSDPSIM_CUDA=AUTO|ON|OFF: the CUDA/NCCL executor backend. AUTO turns it on when nvcc, the CUDA toolkit (cuBLAS)
# and NCCL are all found; ON makes a missing piece an error. Sets FSDPSIM_HAVE_CUDA and the target fsdpsim_nccl.
set(FSDPSIM_HAVE_CUDA OFF)
if(NOT FSDPSIM_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  set(_nccl_hints "")
  if(CUDAToolkit_FOUND)
    list(APPEND _nccl_hints "${CUDAToolkit_LIBRARY_ROOT}" "${CUDAToolkit_LIBRARY_DIR}/.." "${CUDAToolkit_TARGET_DIR}")
  endif()
  if(DEFINED ENV{NCCL_HOME})
    list(APPEND _nccl_hints "$ENV{NCCL_HOME}")
  endif()
  find_path(FSDPSIM_NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(FSDPSIM_NCCL_LIBRARY nccl HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublas AND FSDPSIM_NCCL_INCLUDE_DIR
     AND FSDPSIM_NCCL_LIBRARY)
    set(FSDPSIM_HAVE_CUDA ON)
  elseif(FSDPSIM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FSDPSIM_CUDA=ON but the CUDA backend cannot be built: nvcc='${CMAKE_CUDA_COMPILER}' "
                        "toolkit=${CUDAToolkit_FOUND} nccl.h='${FSDPSIM_NCCL_INCLUDE_DIR}' "
                        "libnccl='${FSDPSIM_NCCL_LIBRARY}'. Install the CUDA toolkit with NCCL, set NCCL_HOME, "
                        "or configure with -DFSDPSIM_CUDA=OFF.")
  endif()
endif()

if(FSDPSIM_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Hopper (H100/H200) is what the executor is validated on; add 80 (A100) or 100 (B200) as needed.
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 does not know nvcc 13's C++20 flag; .cu files stay C++17
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  add_library(fsdpsim_nccl INTERFACE)
  target_include_directories(fsdpsim_nccl INTERFACE "${FSDPSIM_NCCL_INCLUDE_DIR}")
  target_link_libraries(fsdpsim_nccl INTERFACE "${FSDPSIM_NCCL_LIBRARY}")
endif()
