# Model specs, presets, YAML schema, Hugging Face import and FSDP unit derivation (schedule/model*.cpp).
fsdpsim_test(test_schedule_model
  SOURCES
    model_count_test.cpp
    model_yaml_test.cpp
    model_hf_test.cpp
    model_units_test.cpp
    model_units_moe_test.cpp
    model_units_pytorch_test.cpp
    model_units_fp8_saved_test.cpp
    loss_test.cpp
  DEPS fsdpsim_builders fsdpsim_frontends
  LABELS unit)
