fsdpsim_test(test_plan SOURCES plan_test.cpp DEPS fsdpsim_plan LABELS unit)
fsdpsim_test(test_training_cost SOURCES training_cost_test.cpp DEPS fsdpsim_plan LABELS unit)
fsdpsim_test(test_sweep_parts SOURCES sweep_parts_test.cpp DEPS fsdpsim_plan LABELS unit)
