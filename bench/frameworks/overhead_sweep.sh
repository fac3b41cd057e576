#!/usr/bin/env bash
# Unprofiled step times of small Llama-shaped models under FSDP2 (rank 0 of a 4-rank job, fake process group), at
# several widths and depths: where a step is bound by kernel launches and PyTorch's CPU-side work rather than by
# the GPU, the time grows with the number of layers and hardly with their width.
#
#   bench/frameworks/overhead_sweep.sh OUT [FRAMEWORK]     (on a machine with PyTorch and one CUDA GPU)
#
# FRAMEWORK is fsdp_rank0.py's --framework (default fsdp2; none runs the model unsharded, for eager PyTorch alone).
#
# Writes OUT/overhead.csv: hidden, layers, seq, micro_batch, steps, median and minimum of the warm steps (all but
# the first two), peak allocated; and OUT/overhead.log. Each model is bench/frameworks/tiny-llama.json with hidden,
# FFN (3 × hidden), heads (hidden / 64) and layers changed.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out=${1:?usage: overhead_sweep.sh OUT [FRAMEWORK]}
framework=${2:-fsdp2}
mkdir -p "$out"
work=$(mktemp -d)
[[ -s "$out/overhead.csv" ]] || echo "framework,hidden,layers,seq,micro_batch,steps,median_warm_step_s,min_warm_step_s,max_memory_allocated_bytes" >>"$out/overhead.csv"
run() {  # hidden layers seq
  local hidden=$1 layers=$2 seq=$3 name="h$1-l$2-s$3"
  python3 - "$here/tiny-llama.json" "$work/$name.json" "$hidden" "$layers" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
hidden, layers = int(sys.argv[3]), int(sys.argv[4])
cfg.update(hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
           num_attention_heads=hidden // 64, num_key_value_heads=max(1, hidden // 128))
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
  timeout 60 python3 "$here/fsdp_rank0.py" --config "$work/$name.json" --world-size 4 --seq-length "$seq" --framework "$framework" \
    --steps 22 --plain --out "$work/$name" >>"$out/overhead.log" 2>&1 || { echo "$name: failed" | tee -a "$out/overhead.log"; return; }
  python3 - "$work/$name/job.json" "$hidden" "$layers" "$seq" >>"$out/overhead.csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
warm = sorted(j["step_s"][2:])
print(f"{j['framework']},{sys.argv[2]},{sys.argv[3]},{sys.argv[4]},{j['micro_batch_size']},{len(warm)},"
      f"{warm[len(warm) // 2]:.6f},{warm[0]:.6f},{j['max_memory_allocated_bytes']}")
PY
  tail -1 "$out/overhead.csv"
}
for hidden in 256 1024; do
  for layers in 2 8 16; do run "$hidden" "$layers" 512; done
done
run 2048 8 512
run 1024 8 2048
