# The PyTorch CUDA caching-allocator model (sim/caching_allocator*.cpp).
fsdpsim_test(test_sim_allocator
  SOURCES
    allocator_sizes_test.cpp
    allocator_reuse_test.cpp
    allocator_oom_test.cpp
    allocator_expandable_test.cpp
    allocator_invariants_test.cpp
  DEPS fsdpsim_sim
  LABELS unit)
