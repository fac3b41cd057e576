# Fault handling (exec/host/host_faults.h, exec/fault_report.h, exec/cuda/runtime/cuda_faults.h): injected faults, their
# reports, and `fsdpsim exec --inject` end to end. Every test runs under a ctest TIMEOUT, so that a fault that made the
# executor hang fails its test instead of hanging CI; each takes well under a second (timeouts of 100-200 ms).
set(FSDPSIM_FAULT_TEST_TIMEOUT_S 30)

fsdpsim_test(test_exec_faults
  SOURCES host_faults_test.cpp
  DEPS fsdpsim_exec
  LABELS unit
  TIMEOUT ${FSDPSIM_FAULT_TEST_TIMEOUT_S})
fsdpsim_test(test_exec_fault_runs
  SOURCES host_fault_run_test.cpp
  DEPS fsdpsim_exec
  LABELS integration
  TIMEOUT ${FSDPSIM_FAULT_TEST_TIMEOUT_S})
fsdpsim_test(test_exec_fault_cli
  SOURCES exec_fault_cli_test.cpp
  LABELS integration
  TIMEOUT ${FSDPSIM_FAULT_TEST_TIMEOUT_S})
add_dependencies(test_exec_fault_cli fsdpsim)
if(FSDPSIM_HAVE_CUDA)
  # The CUDA backend's fault reports are plain text from plain facts: checked without a GPU.
  fsdpsim_test(test_exec_cuda_faults
    SOURCES cuda_faults_test.cpp
    DEPS fsdpsim_exec_cuda
    LABELS unit
    TIMEOUT ${FSDPSIM_FAULT_TEST_TIMEOUT_S})
endif()
