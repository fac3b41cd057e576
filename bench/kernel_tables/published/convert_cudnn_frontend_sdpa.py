#!/usr/bin/env python3
"""Converts NVIDIA cudnn-frontend's published SDPA training benchmarks into the attention table CSV that
`fsdpsim simulate --attention-table` reads.

    convert_cudnn_frontend_sdpa.py SOURCE.csv OUT.csv

cudnn-frontend has published two layouts (benchmark/sdpa_benchmark_training/):
- `artifacts/sdpa_bf16_benchmark_results_NVIDIA_<GPU>.csv` (v1.15-v1.17): one row per shape and backend with
  is_causal, forward_time, backward_time (ms) and fwd_tflops_per_sec, bwd_tflops_per_sec;
- `results/<model>/<gpu>/<model>_<timestamp>.csv` (v1.18 on): one row per shape, backend, data type, mask, pass
  (`fwd` / `bwd`) and deterministic mode, with time_ms and tflops; a pass `both` row gives fwd_tflops and bwd_tflops.

Both count FLOPs as fsdpsim's table does — forward 4·batch·q_heads·seq²·head_dim, halved under a causal mask,
backward 2.5× the forward — so this script keeps the published rate and writes time_us = FLOPs / rate (the rates
carry more significant digits than the published times). The FLOPs count query heads; `kv_heads` (the source's
num_kv_heads) records the grouped-query shape the kernel ran, which a table looks calls up by. Kept: BF16, non-deterministic backward, equal q/k and v head
dims, and the backends below; each is written under the kernel name fsdpsim's tables use.
"""

import csv
import sys
from pathlib import Path

# cudnn-frontend's backend name → the kernel column fsdpsim's attention tables use.
KERNELS = {
    "cudnn": "cudnn",  # cuDNN's fused attention through the cudnn-frontend graph API
    "cudnn_fe": "cudnn",
    "pyt_cudnn": "cudnn",  # the same kernel through PyTorch's SDPA (CUDNN_ATTENTION)
    "pyt_flash_attention": "flash",  # PyTorch's SDPA FLASH_ATTENTION backend: FlashAttention-2
    "flash_attention": "flash_attn2",  # Dao-AILab's flash-attn package, version 2
}
COLUMNS = ["kernel", "batch", "seq", "heads", "head_dim", "causal", "forward_us", "backward_us", "forward_tflops",
           "kv_heads"]


def forward_flops(batch, seq, heads, head_dim, causal):
    flops = 4.0 * batch * seq * seq * heads * head_dim
    return flops / 2 if causal else flops


def time_us(flops, tflops):
    return f"{flops / (tflops * 1e12) * 1e6:.2f}"


def artifact_rows(rows):
    """v1.15-v1.17: both passes in one row; a backend that did not run shows rates of 0."""
    for r in rows:
        kernel = KERNELS.get(r["backend"])
        fwd, bwd = float(r["fwd_tflops_per_sec"]), float(r["bwd_tflops_per_sec"])
        if kernel is None or fwd <= 0 or bwd <= 0 or r["q_seqlen"] != r["kv_seqlen"]:
            continue
        yield kernel, int(r["batch_size"]), int(r["q_seqlen"]), int(r["num_q_heads"]), int(r["num_kv_heads"]), \
            int(r["head_dim"]), r["is_causal"] == "True", fwd, bwd


def result_rows(rows):
    """v1.18 on: one row per pass; the forward and the backward of one shape are paired here."""
    passes = {}
    for r in rows:
        kernel = KERNELS.get(r["backend"])
        if kernel is None or r["data_type"] != "bfloat16" or r["success"] != "True":
            continue
        if r["deterministic_bwd"] != "False" or r["head_dim_qk"] != r["head_dim_vo"] or r["q_seqlen"] != r["kv_seqlen"]:
            continue
        if r["sliding_window_size"]:
            continue
        shape = (kernel, int(r["batch_size"]), int(r["q_seqlen"]), int(r["num_q_heads"]), int(r["num_kv_heads"]),
                 int(r["head_dim_qk"]), r["attn_mask"] == "top_left")
        if r["profile_pass"] == "both":  # v1.19's H200 run: both passes in one row
            passes.setdefault(shape, {}).update(fwd=float(r["fwd_tflops"]), bwd=float(r["bwd_tflops"]))
        else:
            passes.setdefault(shape, {})[r["profile_pass"]] = float(r["tflops"])
    for shape, rates in passes.items():
        if "fwd" in rates and "bwd" in rates:
            yield (*shape, rates["fwd"], rates["bwd"])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{sys.argv[1]}: no rows")
    read = result_rows if "profile_pass" in rows[0] else artifact_rows
    out = []
    for kernel, batch, seq, heads, kv_heads, head_dim, causal, fwd, bwd in read(rows):
        flops = forward_flops(batch, seq, heads, head_dim, causal)
        out.append([kernel, batch, seq, heads, head_dim, int(causal), time_us(flops, fwd), time_us(2.5 * flops, bwd),
                    f"{fwd:.1f}", kv_heads])
    # One order whatever the source's: kernel, mask (causal first), sequence.
    out.sort(key=lambda r: (r[0], -r[5], r[2], r[1], r[3], r[4]))
    with open(Path(sys.argv[2]), "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(out)


if __name__ == "__main__":
    main()
