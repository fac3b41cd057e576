#!/usr/bin/env bash
# Record rank 0 of an N-GPU FSDP job on this machine's one GPU (fsdp_rank0.py), predict the same job with fsdpsim,
# and score the recording against the prediction with `fsdpsim validate`.
#
#   bench/frameworks/run.sh [--fsdpsim PATH] [--topology dgx-h100-ndr] [--framework fsdp2] [--world-size 8]
#                           [--micro-batch-size 1] [--seq-length 4096] [--recompute none|full]
#                           [--config bench/frameworks/llama3-8b-8-layers.json] [--out OUT] [--recorded]
#                           [--gemm-table bench/results/2026-11-26-h100-kernels/gemm.csv]
#                           [--attention-table bench/results/2026-11-26-h100-kernels/attention.csv
#                            --attention-kernel cudnn]
#
# --recorded skips the recording and scores the rank0.* files already in OUT (a recording made on a GPU machine
# without fsdpsim, such as bench/frameworks/record_all.sh's; pass the arguments it was recorded with). --gemm-table
# predicts GEMMs from a measured table of the same GPU (simulate --gemm-table) instead of the profile's efficiencies;
# --attention-table and --attention-kernel the attention core likewise (the recordings ran cuDNN's kernel).
# OUT gets rank0.pickle, rank0.trace.json and job.json (the recording), predicted.{json,pickle,trace.json} and
# validate.txt / validate.json. The fake process group sends nothing, so compare compute busy time and memory; the
# recorded step has no communication time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
fsdpsim="${FSDPSIM:-$here/../../build/fsdpsim}"
topology=dgx-h100-ndr framework=fsdp2 world=8 mbs=1 seq=4096 recompute=none
config="$here/llama3-8b-8-layers.json" out=out recorded=false tables=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --fsdpsim) fsdpsim="$2"; shift 2 ;;
    --topology) topology="$2"; shift 2 ;;
    --framework) framework="$2"; shift 2 ;;
    --world-size) world="$2"; shift 2 ;;
    --micro-batch-size) mbs="$2"; shift 2 ;;
    --seq-length) seq="$2"; shift 2 ;;
    --recompute) recompute="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --recorded) recorded=true; shift ;;
    --gemm-table | --attention-table | --attention-kernel) tables+=("$1" "$2"); shift 2 ;;
    *) echo "run.sh: unknown argument '$1' (see the comment at the top of the script)" >&2; exit 2 ;;
  esac
done
[[ -x "$fsdpsim" ]] || { echo "run.sh: no fsdpsim at '$fsdpsim' (build it, or pass --fsdpsim PATH)" >&2; exit 2; }
mkdir -p "$out"

$recorded || python3 "$here/fsdp_rank0.py" --config "$config" --framework "$framework" --world-size "$world" \
  --micro-batch-size "$mbs" --seq-length "$seq" --recompute "$recompute" --out "$out"

case "$framework" in
  fsdp2) implementation=(--set implementation=fsdp2 --set fsdp2_wrap=blocks_and_root) ;;
  megatron-fsdp) implementation=(--set implementation=megatron_fsdp) ;;
esac
# The job fsdp_rank0.py ran, key by key: ZeRO-3, bf16 compute, fp32 main weights, gradients and reduction, eager
# elementwise kernels and the eager fp32 loss, one micro-batch per step, torch.optim's AdamW (foreach on CUDA).
"$fsdpsim" simulate --model "$config" --topology "$topology" --set gpus="$world" "${implementation[@]}" \
  --set data_parallel_sharding_strategy=optim_grads_params --set micro_batch_size="$mbs" \
  --set global_batch_size=$((world * mbs)) --set seq_length="$seq" --set recompute_granularity="$recompute" \
  --set loss_implementation=eager_fp32 --set fused_elementwise=false --set main_grads_dtype=fp32 \
  --set grad_comm_dtype=fp32 --set optimizer_implementation=foreach "${tables[@]}" --json "$out/predicted.json" --memory-snapshot "$out/predicted.pickle" \
  --profiler-trace "$out/predicted.trace.json" | tee "$out/predicted.txt"
"$fsdpsim" validate --predicted "$out/predicted.json" --measured-memory "$out/rank0.pickle" \
  --measured-trace "$out/rank0.trace.json" --json "$out/validate.json" | tee "$out/validate.txt"
