#!/usr/bin/env bash
# One GPU session's measurements, as bench/results/README.md lists them, in one call (device time is scarce).
# Runs on the GPU machine over what bench/gpu/stage.sh staged; writes every output under OUT and prints a summary.
#   bench/gpu/session.sh STAGED OUT        (TOPOLOGY=hgx-h200-ndr on an H200; default dgx-h100-ndr)
set -uo pipefail
staged=$(cd "${1:?usage: bench/gpu/session.sh STAGED OUT}" && pwd)
# The device tool returns at most 8 files, so the outputs are gathered in a work folder and packed into
# FINAL/session.tar.gz after every step: a call stopped at its time limit still returns what was done.
final=${2:?usage: bench/gpu/session.sh STAGED OUT}
out=$(mktemp -d)
mkdir -p "$final"
# The machine's own CUDA runtime, cuBLAS and NCCL: the first copy of each that `find` sees.
libdirs=""
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  path=$(find /usr/local /opt /usr/lib -name "$name" 2>/dev/null | sort | head -1)
  echo "$name: ${path:-MISSING}" | tee -a "$out/environment.txt"
  [[ -n $path ]] && libdirs="$libdirs:$(dirname "$path")"
done
export LD_LIBRARY_PATH="$staged/lib$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fsdpsim="$staged/fsdpsim"
topology=${TOPOLOGY:-dgx-h100-ndr}
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1
  "$fsdpsim" --version
} 2>&1 | tee -a "$out/environment.txt"

# step NAME SECONDS COMMAND...: runs a command with a time limit, its output in OUT/NAME.log, and records its status.
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$out/steps.txt"
  tar -czf "$final/session.tar.gz" -C "$out" .
}

step gpu-tests 150 "$staged/test_exec_cuda" --gtest_color=no
step calibrate 120 "$fsdpsim" calibrate --gpu --topology "$topology" -o "$out/measured-profile.yaml"

# Llama-3-8B on 64 GPUs, rank 0 alone on this GPU: memory plan and per-op times against the prediction.
job8=(--model llama3-8b --topology "$topology" --set nodes=8)
step predict-8b 60 "$fsdpsim" simulate "${job8[@]}" --json "$out/predicted-8b.json"
step exec-8b 120 "$fsdpsim" exec --backend cuda "${job8[@]}" --emulate-world 64 --json "$out/measured-8b.json" \
  --trace "$out/trace-8b.json"
step validate-8b 60 "$fsdpsim" validate --predicted "$out/predicted-8b.json" --measured "$out/measured-8b.json"
step predict-8b-cal 60 "$fsdpsim" simulate "${job8[@]}" --profile "$out/measured-profile.yaml" \
  --json "$out/predicted-8b-cal.json"
step validate-8b-cal 60 "$fsdpsim" validate --predicted "$out/predicted-8b-cal.json" --measured "$out/measured-8b.json"

# A pipeline (Llama-3-8B, pp 2 over 64 GPUs): the first GPU of each stage in turn on this GPU, every stage's peaks
# against the prediction (each stage run alone holds no bubble: compare memory and compute, not the step).
jobPp=(--model llama3-8b --topology "$topology" --set nodes=8 --set pp=2 --set global_batch_size=64)
step predict-8b-pp 60 "$fsdpsim" simulate "${jobPp[@]}" --json "$out/predicted-8b-pp.json"
step exec-8b-pp 150 "$fsdpsim" exec --backend cuda "${jobPp[@]}" --emulate-world 64 --json "$out/measured-8b-pp.json"
step validate-8b-pp 60 "$fsdpsim" validate --predicted "$out/predicted-8b-pp.json" --measured "$out/measured-8b-pp.json"

# scripts/run's best plan (Llama-3-70B, 64 GPUs, TP 4, selective recompute, predicted 69.0 of 79.6 GiB), with 16
# sequences per step (one micro-batch per data-parallel rank) so that a step takes seconds: the peak is the same.
job70=(--model llama3-70b --topology "$topology" --set nodes=8 --set seq_length=8192 --set global_batch_size=16 --set tp=4
       --set data_parallel_sharding_strategy=optim_grads_params --set micro_batch_size=1
       --set recompute_granularity=selective)
step predict-70b 60 "$fsdpsim" simulate "${job70[@]}" --json "$out/predicted-70b.json"
step exec-70b 120 "$fsdpsim" exec --backend cuda "${job70[@]}" --emulate-world 64 --json "$out/measured-70b.json"
step validate-70b 60 "$fsdpsim" validate --predicted "$out/predicted-70b.json" --measured "$out/measured-70b.json"

# The README's out-of-memory case (no TP, sequence 8192): predicted to fail in fwd.layer.26; where does it fail here?
jobOom=(--model llama3-70b --topology "$topology" --set nodes=8 --set seq_length=8192 --set global_batch_size=64)
step predict-oom 60 "$fsdpsim" simulate "${jobOom[@]}" --json "$out/predicted-oom.json"
step exec-oom 90 "$fsdpsim" exec --backend cuda "${jobOom[@]}" --emulate-world 64 --json "$out/measured-oom.json"

{
echo "== summary"
cat "$out/steps.txt"
for f in validate-8b validate-8b-cal validate-8b-pp validate-70b; do echo "== $f"; head -40 "$out/$f.log"; done
echo "== exec-oom"; tail -30 "$out/exec-oom.log"
echo "== measured memory (bytes)"
for f in measured-8b measured-70b; do
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(sys.argv[2], "gpu", r["gpu_memory_bytes"], "overheads", r["overhead_bytes"], "scratch", r["executor_scratch_bytes"],
      "reserved", r["peak_reserved_bytes"], "allocated", r["peak_allocated_bytes"])' "$out/$f.json" "$f" 2>&1
done
echo "== gpu-tests"; grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) ' "$out/gpu-tests.log"
echo "== calibrate"; head -30 "$out/calibrate.log"
} | tee "$final/summary.txt"
