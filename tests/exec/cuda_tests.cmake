# CUDA backend tests (label gpu)
