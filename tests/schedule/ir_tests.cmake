# Schedule IR, configuration, builders and validation.
fsdpsim_test(test_schedule_ir
  SOURCES
    ids_test.cpp
    validate_test.cpp
    ir_yaml_test.cpp
    config_test.cpp
    megatron_args_test.cpp
    torchtitan_config_test.cpp
    torchtitan_args_test.cpp
    builder_test.cpp
    builder_memory_test.cpp
    builder_megatron_code_test.cpp
    budget_range_test.cpp
  DEPS fsdpsim_builders fsdpsim_frontends)
add_dependencies(test_schedule_ir fsdpsim)  # the torchtitan tests run the program
