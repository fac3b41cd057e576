#!/usr/bin/env bash
# Stages what a GPU machine needs to run the CUDA backend, built here: the fsdpsim program, the `gpu` test program,
# and the shared libraries they link that a CUDA image lacks (yaml-cpp, OpenMPI and its helpers). cuBLAS, NCCL and
# the CUDA runtime are left out on purpose: the GPU machine's own are used, matched to its driver.
#   bench/gpu/stage.sh BUILD_DIR DEST     (then run bench/gpu/session.sh DEST OUT there)
set -euo pipefail
build=${1:?usage: bench/gpu/stage.sh BUILD_DIR DEST}
dest=${2:?usage: bench/gpu/stage.sh BUILD_DIR DEST}
rm -rf "$dest" && mkdir -p "$dest/lib"
cp "$build/fsdpsim" "$build/tests/exec/test_exec_cuda" "$dest/"
# Every library ldd resolves, minus the C runtime, the C++ runtime and the CUDA libraries.
ldd "$build/fsdpsim" "$build/tests/exec/test_exec_cuda" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
  grep -Ev '^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libz|libudev)[.]so|^lib(cudart|cublas|cublasLt|nccl)[.]so' |
  sort -u | while read -r name path; do cp -L "$path" "$dest/lib/$name"; done
du -sh "$dest"
