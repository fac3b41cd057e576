fsdpsim_test(test_plan SOURCES plan_test.cpp DEPS fsdpsim_plan LABELS unit)
