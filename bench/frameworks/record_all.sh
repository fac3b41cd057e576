#!/usr/bin/env bash
# One GPU lease, every recording: the FSDP2 (and, where its package is on PYTHONPATH_MFSDP, Megatron-FSDP) runs
# that `fsdpsim validate` scores, and the GEMM and attention tables of bench/kernel_tables. Each step has its own
# time limit and a failed step does not stop the next; each run is packed as OUT/NAME.tar.xz, so the whole lease
# comes back as at most eight files:
#
#   bench/frameworks/record_all.sh OUT [--smoke | --recordings-only]
#
# --smoke runs the tiny model under each framework and a few table shapes: a minute that shows every step works
# before the long run. --recordings-only leaves out the kernel tables.
#
# fsdpsim itself runs afterwards, on any machine: bench/results/README.md says how.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: record_all.sh OUT [--smoke | --recordings-only]}"
mode="${2:-}"
mkdir -p "$out"
work="$(mktemp -d)"
log="$out/record.log"
exec > >(tee -a "$log") 2>&1
export PYTHONUNBUFFERED=1

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.memory,power.limit --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'

record() {  # NAME SECONDS [fsdp_rank0.py arguments...]
  local name="$1" seconds="$2"
  shift 2
  echo "== $name: fsdp_rank0.py $*"
  local start=$SECONDS
  timeout "$seconds" python3 "$here/fsdp_rank0.py" --out "$work/$name" "$@" || echo "== $name failed"
  echo "== $name: $((SECONDS - start)) s"
  [[ -d "$work/$name" ]] || return 0
  if command -v xz > /dev/null; then
    tar -C "$work" -cf - "$name" | xz -T0 -6 > "$out/$name.tar.xz"
  else
    python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1], "w:gz"); t.add(sys.argv[2], sys.argv[3]); t.close()' \
      "$out/$name.tar.gz" "$work/$name" "$name"
  fi
  ls -l "$out/$name".tar.* 2>/dev/null
}

llama8="$here/llama3-8b-8-layers.json"
tiny="$here/tiny-llama.json"
llama70="$here/llama3-70b-2-layers.json"
if [[ "$mode" == --smoke ]]; then
  record tiny-fsdp2-w4-s512 90 --config "$tiny" --world-size 4 --seq-length 512 --steps 3
  if [[ -n "${PYTHONPATH_MFSDP:-}" ]]; then
    PYTHONPATH="$PYTHONPATH_MFSDP" record tiny-mfsdp-w4-s512 90 --config "$tiny" --framework megatron-fsdp \
      --world-size 4 --seq-length 512 --steps 3
  fi
  timeout 60 python3 "$here/../kernel_tables/measure_kernel_tables.py" --out "$out" --quick || echo "== tables failed"
  ls -l "$out"
  exit 0
fi
record tiny-fsdp2-w4-s512 60 --config "$tiny" --world-size 4 --seq-length 512 --steps 3
if [[ -n "${PYTHONPATH_MFSDP:-}" ]]; then
  PYTHONPATH="$PYTHONPATH_MFSDP" record tiny-mfsdp-w4-s512 60 --config "$tiny" --framework megatron-fsdp \
    --world-size 4 --seq-length 512 --steps 3
fi
record fsdp2-w8-s4096 100 --config "$llama8" --world-size 8 --seq-length 4096 --stacks python
record fsdp2-w8-s4096-full 100 --config "$llama8" --world-size 8 --seq-length 4096 --recompute full --stacks python
if [[ -n "${PYTHONPATH_MFSDP:-}" ]]; then
  PYTHONPATH="$PYTHONPATH_MFSDP" record mfsdp-w8-s4096 100 --config "$llama8" --framework megatron-fsdp \
    --world-size 8 --seq-length 4096 --stacks python
fi
record fsdp2-w32-s8192 100 --config "$llama8" --world-size 32 --seq-length 8192 --stacks python
record fsdp2-70b2-w64-s8192 100 --config "$llama70" --world-size 64 --seq-length 8192 --stacks python
[[ "$mode" == --recordings-only ]] && { ls -l "$out"; exit 0; }

echo "== kernel tables"
timeout 200 python3 "$here/../kernel_tables/measure_kernel_tables.py" --out "$out" --gemm-seconds 120 \
  --attention-seconds 60 || echo "== kernel tables failed"
echo "== done $(date -u +%Y-%m-%dT%H:%M:%SZ)"
ls -l "$out"
