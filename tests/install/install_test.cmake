# Installs this build into a scratch prefix, then configures, builds and runs tests/install/consumer against it:
# cmake -DBINARY_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P install_test.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${WORK_DIR}/prefix"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
foreach(installed bin/fsdpsim share/fsdpsim/topologies/presets/dgx-h100-ndr.yaml
        share/fsdpsim/topologies/profiles/h100-sxm.yaml include/fsdpsim/plan/sweep.h
        lib/cmake/fsdpsim/fsdpsimConfig.cmake lib/cmake/fsdpsim/fsdpsimConfigVersion.cmake)
  if(NOT EXISTS "${WORK_DIR}/prefix/${installed}")
    message(FATAL_ERROR "cmake --install did not install ${installed}")
  endif()
endforeach()
execute_process(COMMAND "${WORK_DIR}/prefix/bin/fsdpsim" presets RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "dgx-h100-ndr")
  message(FATAL_ERROR "the installed fsdpsim does not list its presets (${rc}):\n${out}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/install/consumer" -B "${WORK_DIR}/consumer"
                        -G Ninja "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "find_package(fsdpsim) failed:\n${out}\n${err}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer did not build against the installed libraries:\n${out}\n${err}")
endif()
execute_process(COMMAND "${WORK_DIR}/consumer/plan_one" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer's plan failed (${rc}): ${out}")
endif()
