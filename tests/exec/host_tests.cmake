# host backend tests: the unit suite (layout, memory checks, collectives, memory order, run_host on a hand-built
# schedule) and the integration suite (Llama-3-8B-shaped schedules of every strategy: measured peak == predicted).
fsdpsim_test(test_exec_host
  SOURCES
    host_plan_test.cpp
    host_memory_test.cpp
    host_collectives_test.cpp
    host_memory_order_test.cpp
    host_runner_test.cpp
    stage_runs_test.cpp
  DEPS fsdpsim_exec fsdpsim_sim fsdpsim_builders
  LABELS unit)
fsdpsim_test(test_exec_host_llama
  SOURCES host_llama_test.cpp host_pipeline_test.cpp
  DEPS fsdpsim_exec fsdpsim_sim fsdpsim_builders
  LABELS integration)
fsdpsim_no_unity(host_pipeline_test.cpp host_runner_test.cpp)
