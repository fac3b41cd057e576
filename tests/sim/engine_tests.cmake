fsdpsim_test(test_sim_engine SOURCES engine_test.cpp flow_solver_test.cpp compute_model_test.cpp simulate_test.cpp report_io_test.cpp DEPS fsdpsim_sim)
