# The NCCL collective cost model: measured busbw rows (docs/architecture.md §6.16), algorithm choice and latency floors,
# link loads and capacities, error paths, the NVLS chunk pipeline and measured Hopper all-reduce sweeps.
fsdpsim_test(test_sim_collectives
  SOURCES
    collective_reference_test.cpp
    collective_choice_test.cpp
    collective_loads_test.cpp
    nvls_pipeline_test.cpp
    xla_collectives_test.cpp
  DEPS fsdpsim_sim fsdpsim_run
  LABELS unit)
