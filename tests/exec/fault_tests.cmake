# Fault handling (exec/host/host_faults.h, exec/host/fault_report.h, exec/cuda/cuda_faults.h): injected faults, their
# reports, and `fsdpsim exec --inject` end to end. Every test runs under a ctest TIMEOUT, so that a fault that made the
# executor hang fails its test instead of hanging CI; each takes well under a second (timeouts of 100-200 ms).
# fsdpsim_test() passes no test property but LABELS, hence this variant with the same build settings.
set(FSDPSIM_FAULT_TEST_TIMEOUT_S 30)
function(fsdpsim_fault_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main fsdpsim_warnings
                        fsdpsim_sanitizers)
  target_compile_definitions(${name} PRIVATE FSDPSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             FSDPSIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${FSDPSIM_FAULT_TEST_TIMEOUT_S}
                       DISCOVERY_TIMEOUT 60)
endfunction()

fsdpsim_fault_test(test_exec_faults
  SOURCES host_faults_test.cpp
  DEPS fsdpsim_exec
  LABELS unit)
fsdpsim_fault_test(test_exec_fault_runs
  SOURCES host_fault_run_test.cpp
  DEPS fsdpsim_exec
  LABELS integration)
fsdpsim_fault_test(test_exec_fault_cli
  SOURCES exec_fault_cli_test.cpp
  LABELS integration)
add_dependencies(test_exec_fault_cli fsdpsim)
if(FSDPSIM_HAVE_CUDA)
  # The CUDA backend's fault reports are plain text from plain facts: checked without a GPU.
  fsdpsim_fault_test(test_exec_cuda_faults
    SOURCES cuda_faults_test.cpp
    DEPS fsdpsim_exec_cuda
    LABELS unit)
endif()
