# The layering of the source tree, checked from the #include lines: each folder may include only itself and the
# folders below it. Runs at configure time (a violation stops the build) and as the ctest Layering.IncludesPointDown
# (a violation added after configuring fails the tests). Usage: cmake -DSOURCE_DIR=<repository> -P CheckLayers.cmake
#
#   common ← schedule (the IR) ← model ← config ← frontends, builders (siblings)
#   common ← topologies;  schedule ← memory ← run ← report;  frontends, builders, topologies ← job
#   memory, run, topologies ← sim, exec (siblings: exec includes nothing from sim) ← plan ← cli
# and inside exec/cuda/: runtime ← gemm, nccl ← the backend.
# tests/, bench/ and fuzz/ may include anything.
cmake_policy(SET CMP0057 NEW)
set(_allowed_common common)
set(_allowed_schedule common schedule)
set(_allowed_model common schedule model)
set(_allowed_config common schedule model config)
set(_allowed_frontends common schedule model config frontends)
set(_allowed_builders common schedule model config builders)
set(_allowed_topologies common topologies)
set(_allowed_memory common schedule memory)
set(_allowed_run common schedule memory run)
set(_allowed_report common schedule topologies memory run report)
set(_allowed_job common schedule model config frontends builders topologies job)
set(_allowed_sim common schedule topologies memory run sim)
set(_allowed_exec common schedule topologies memory run exec)
set(_allowed_plan common schedule model config frontends builders topologies memory run report job sim plan)
set(_allowed_cli common schedule model config frontends builders topologies memory run report job sim exec plan cli)
set(_layers common schedule model config frontends builders topologies memory run report job sim exec plan cli)

# check_room(DIR PREFIX ROOMS ALLOWED_PREFIX): every `#include "PREFIX<room>/..."` in DIR/ must name a room of ROOMS
# that the list variable ALLOWED_PREFIX<this room> holds; a violation is appended to _violations.
function(check_room dir prefix rooms allowed_prefix room)
  file(GLOB_RECURSE _files "${SOURCE_DIR}/${dir}/*.h" "${SOURCE_DIR}/${dir}/*.cpp" "${SOURCE_DIR}/${dir}/*.cu")
  set(_found "${_violations}")
  foreach(_file IN LISTS _files)
    file(STRINGS "${_file}" _includes REGEX "^#include \"${prefix}[a-z_]+/")
    foreach(_line IN LISTS _includes)
      string(REGEX REPLACE "^#include \"${prefix}([a-z_]+)/.*" "\\1" _target "${_line}")
      if(_target IN_LIST rooms AND NOT _target IN_LIST ${allowed_prefix}${room})
        file(RELATIVE_PATH _rel "${SOURCE_DIR}" "${_file}")
        string(REPLACE ";" ", " _may "${${allowed_prefix}${room}}")
        string(APPEND _found "  ${_rel}: ${_line} (${dir}/ may include ${prefix}{${_may}})\n")
      endif()
    endforeach()
  endforeach()
  set(_violations "${_found}" PARENT_SCOPE)
endfunction()

set(_violations "")
foreach(_layer IN LISTS _layers)
  check_room("${_layer}" "" "${_layers}" _allowed_ "${_layer}")
endforeach()
# Inside exec/cuda/ the sub-rooms too: runtime ← gemm, nccl (siblings) ← the backend in exec/cuda/ itself.
set(_allowed_exec_cuda_runtime runtime)
set(_allowed_exec_cuda_gemm runtime gemm)
set(_allowed_exec_cuda_nccl runtime nccl)
foreach(_room runtime gemm nccl)
  check_room("exec/cuda/${_room}" "exec/cuda/" "runtime;gemm;nccl" _allowed_exec_cuda_ "${_room}")
endforeach()

if(_violations)
  message(FATAL_ERROR "fsdpsim layering broken: an include points up or sideways (cmake/CheckLayers.cmake):\n${_violations}")
endif()
