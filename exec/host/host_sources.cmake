# The host backend (threads as ranks): target_sources(fsdpsim_exec PRIVATE ...), always built.
target_sources(fsdpsim_exec PRIVATE
  host/host_plan.cpp
  host/host_memory.cpp
  host/host_collectives.cpp
  host/host_world.cpp
  host/host_compute.cpp
  host/host_collective_op.cpp
  host/host_p2p.cpp
  host/host_backend.cpp
  host/host_backend_faults.cpp
  host/host_faults.cpp
  host/host_memory_order.cpp
  host/host_runner.cpp)
