# CUDA backend tests, built only with the CUDA backend. test_exec_cuda (label gpu) needs a GPU and skips every test,
# printing why, where there is none. test_exec_cuda_plan (label unit) checks what needs no GPU: the backend's
# host-side planning, its option errors and its check macros' messages.
if(FSDPSIM_HAVE_CUDA)
  fsdpsim_test(test_exec_cuda
    SOURCES cuda_backend_test.cpp cuda_emulate_test.cpp cuda_measure_test.cpp cuda_pipeline_test.cpp
    DEPS fsdpsim_exec_cuda fsdpsim_sim fsdpsim_report fsdpsim_builders fsdpsim_schedule fsdpsim_topology CUDA::cudart
    LABELS gpu)
  fsdpsim_test(test_exec_cuda_plan
    SOURCES cuda_plan_test.cpp cuda_p2p_plan_test.cpp cuda_options_test.cpp cuda_check_test.cpp
    DEPS fsdpsim_exec_cuda fsdpsim_builders CUDA::cudart CUDA::cublas fsdpsim_nccl
    LABELS unit)
endif()
