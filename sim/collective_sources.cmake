# The NCCL collective cost model (collective_model.h) and its internal pieces (nccl_*.h).
target_sources(fsdpsim_sim PRIVATE collective_model.cpp nccl_tables.cpp nccl_graph.cpp nccl_ring_tree.cpp nccl_offload.cpp
                   nccl_pipeline.cpp)
