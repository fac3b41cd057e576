#!/usr/bin/env python3
"""Measure the kernel tables fsdpsim's compute model reads: GEMM time by shape, layout and dtype, and attention
time by sequence length, heads, key/value heads, head dim, masking and kernel, on the one GPU at hand (through PyTorch, so the
same cuBLAS, cuBLASLt, FlashAttention and cuDNN kernels a PyTorch training job calls).

GEMMs are measured in the three roles of a training step's linear layer, with W [out, in] and x [tokens, in]:
  forward  y[T, out]  = x · Wᵀ        layout nt: A [m, k], B [n, k]   (m = T,   n = out, k = in)
  dgrad    dx[T, in]  = dy · W        layout nn: A [m, k], B [k, n]   (m = T,   n = in,  k = out)
  wgrad    dW[out,in] = dyᵀ · x       layout tn: A [k, m], B [k, n]   (m = out, n = in,  k = T)
FP8 (e4m3 operands, bf16 output, per-tensor scales: torch._scaled_mm) runs every role in layout nt, as Hopper's
FP8 tensor cores require and Transformer Engine arranges. dtype fp8_rowwise is the same product with one fp32 scale
per row of A ([m, 1]) and per column of B ([1, n]): the GEMMs of torchao's rowwise recipes, whose input gradient
and weight gradient are quantised again along the other axis, so all three roles run scaled (layout nt).

Timing: CUDA events around groups of repeats after a warm-up, the median of five groups; operands rotate through
eight places in large buffers so small GEMMs are not served from L2 (a training step reads each weight once);
inputs are random, never zeros. Output: gemm.csv and attention.csv in --out.

Attention runs each shape with one key/value head per query head (multi-head attention) and, at head dim 128, with
one per 8 query heads (grouped-query attention as Llama-3 and Llama-3.1 run it, `enable_gqa`); the `kv_heads`
column says which, so fsdpsim's table looks a call up by its group size.
"""

import argparse
import csv
import math
import os
import sys
import time

TOKENS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
# Weight dimensions of published models: hidden sizes, GQA key/value widths, FFN widths, and their TP splits.
DIMS = [256, 512, 1024, 1536, 2048, 3072, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384, 28672]
ROTATIONS = 8
ROTATION_STRIDE = 16 << 20  # elements: 32 MiB of bf16 between two copies of an operand


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="out")
    p.add_argument("--skip-gemm", action="store_true")
    p.add_argument("--skip-attention", action="store_true")
    p.add_argument("--quick", action="store_true", help="a few shapes only (a smoke test of the script)")
    p.add_argument("--dtypes", default="bf16,fp8", help="GEMM dtypes, comma-separated: bf16, fp8, fp8_rowwise")
    p.add_argument("--attention-kernels", default="flash,cudnn", help="SDPA backends, comma-separated: flash, cudnn")
    p.add_argument("--gemm-seconds", type=float, default=180.0, help="stop measuring GEMMs after this long")
    p.add_argument("--attention-seconds", type=float, default=150.0, help="stop measuring attention after this long")
    return p.parse_args()


def probe_us(torch, fn):
    """A warm-up call, then one timed call: the events to reuse and that call's time in microseconds (at least 1)."""
    fn(0)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(1)
    end.record()
    end.synchronize()
    return start, end, max(start.elapsed_time(end) * 1000.0, 1.0)


def time_us(torch, fn, target_group_us=500.0, groups=5):
    """Median over `groups` event-timed groups of the mean time of one call, in microseconds (for kernels long
    enough that launching them from Python does not set the pace)."""
    start, end, once_us = probe_us(torch, fn)
    reps = max(1, min(200, math.ceil(target_group_us / once_us)))
    means = []
    call = 0
    for _ in range(groups):
        start.record()
        for _ in range(reps):
            fn(call)
            call += 1
        end.record()
        end.synchronize()
        means.append(start.elapsed_time(end) * 1000.0 / reps)
    means.sort()
    return means[len(means) // 2]


def time_graph_us(torch, fn, target_group_us=300.0, groups=5):
    """As time_us, but the repeats are captured in a CUDA graph and replayed, so a GEMM of a few microseconds is
    timed on the GPU rather than by Python's launch rate."""
    start, end, once_us = probe_us(torch, fn)
    reps = max(1, min(64, math.ceil(target_group_us / once_us)))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for c in range(reps):
            fn(c)
    graph.replay()
    torch.cuda.synchronize()
    means = []
    for _ in range(groups):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        means.append(start.elapsed_time(end) * 1000.0 / reps)
    del graph
    means.sort()
    return means[len(means) // 2]


def measure_gemms(torch, out_path, quick, max_seconds, dtypes):
    tokens = TOKENS[:3] if quick else TOKENS
    dims = DIMS[:4] if quick else DIMS
    max_elems = max(max(tokens) * max(dims), max(dims) * max(dims)) + ROTATIONS * ROTATION_STRIDE
    gen = torch.Generator(device="cuda").manual_seed(0)
    a_buf = torch.randn(max_elems, device="cuda", dtype=torch.bfloat16, generator=gen)
    b_buf = torch.randn(max_elems, device="cuda", dtype=torch.bfloat16, generator=gen)
    c_buf = torch.empty(max(tokens) * max(dims) + max(dims) * max(dims), device="cuda", dtype=torch.bfloat16)
    have_fp8 = hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")
    have_fp8 = have_fp8 and ("fp8" in dtypes or "fp8_rowwise" in dtypes)
    if have_fp8:
        a8_buf, b8_buf = a_buf.to(torch.float8_e4m3fn), b_buf.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        try:
            torch._scaled_mm(a8_buf[:256 * 256].view(256, 256), b8_buf[:256 * 256].view(256, 256).t(), scale_a=one,
                             scale_b=one, out_dtype=torch.bfloat16)
        except (RuntimeError, TypeError) as e:
            print(f"gemm: no fp8 rows, torch._scaled_mm refused a 256^3 product: {str(e).splitlines()[0]}")
            have_fp8 = False

    def view(buf, call, rows, cols):
        off = (call % ROTATIONS) * ROTATION_STRIDE
        return buf[off: off + rows * cols].view(rows, cols)

    def bf16_fn(layout, m, n, k):
        out = c_buf[: m * n].view(m, n)
        if layout == "nt":
            return lambda c: torch.mm(view(a_buf, c, m, k), view(b_buf, c, n, k).t(), out=out)
        if layout == "nn":
            return lambda c: torch.mm(view(a_buf, c, m, k), view(b_buf, c, k, n), out=out)
        return lambda c: torch.mm(view(a_buf, c, k, m).t(), view(b_buf, c, k, n), out=out)  # tn

    def fp8_fn(m, n, k):
        return lambda c: torch._scaled_mm(view(a8_buf, c, m, k), view(b8_buf, c, n, k).t(), scale_a=one,
                                          scale_b=one, out_dtype=torch.bfloat16)

    def fp8_rowwise_fn(m, n, k):
        # Scales of 1 (the kernel reads them all the same): one per row of A, one per column of B.
        scale_a = torch.ones((m, 1), device="cuda", dtype=torch.float32)
        scale_b = torch.ones((1, n), device="cuda", dtype=torch.float32)
        return lambda c: torch._scaled_mm(view(a8_buf, c, m, k), view(b8_buf, c, n, k).t(), scale_a=scale_a,
                                          scale_b=scale_b, out_dtype=torch.bfloat16)

    # Role by role, so that a run cut short by --max-seconds still holds whole roles.
    roles = []
    if "bf16" in dtypes:
        roles += [("forward", "nt", "bf16"), ("dgrad", "nn", "bf16"), ("wgrad", "tn", "bf16")]
    if have_fp8 and "fp8" in dtypes:
        roles += [("forward", "nt", "fp8"), ("wgrad", "nt", "fp8")]
    if have_fp8 and "fp8_rowwise" in dtypes:
        try:
            fp8_rowwise_fn(256, 256, 256)(0)
            roles += [("forward", "nt", "fp8_rowwise"), ("dgrad", "nt", "fp8_rowwise"), ("wgrad", "nt", "fp8_rowwise")]
        except (RuntimeError, TypeError) as e:
            print(f"gemm: no fp8_rowwise rows, torch._scaled_mm refused rowwise scales: {str(e).splitlines()[0]}")
    shapes = []  # (role, layout, dtype, m, n, k)
    for role, layout, dtype in roles:
        for t in tokens:
            for o in dims:
                for i in dims:
                    m, n, k = {"forward": (t, o, i), "dgrad": (t, i, o), "wgrad": (o, i, t)}[role]
                    shapes.append((role, layout, dtype, m, n, k))
    t0 = time.time()
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["role", "layout", "dtype", "m", "n", "k", "time_us", "tflops"])
        done = 0
        for role, layout, dtype, m, n, k in shapes:
            if time.time() - t0 > max_seconds:
                print(f"gemm: stopped at --max-seconds {max_seconds}")
                break
            fn = {"fp8": fp8_fn, "fp8_rowwise": fp8_rowwise_fn}.get(dtype, lambda m, n, k: bf16_fn(layout, m, n, k))(m, n, k)
            us = time_graph_us(torch, fn)
            w.writerow([role, layout, dtype, m, n, k, f"{us:.3f}", f"{2.0 * m * n * k / us / 1e6:.1f}"])
            f.flush()
            done += 1
    print(f"gemm: {done} of {len(shapes)} shapes in {time.time() - t0:.0f} s -> {out_path}", flush=True)


def attention_call_us(torch, F, sdpa_kernel, backend, batch, seq, heads, kv_heads, head_dim, causal, name):
    """Forward and backward time of one SDPA call, or (None, None) where the kernel does not take the shape."""
    q = torch.randn((batch, heads, seq, head_dim), device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn((batch, kv_heads, seq, head_dim), device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(2))
    gqa = {"enable_gqa": True} if kv_heads != heads else {}
    try:
        with sdpa_kernel([backend]):
            do = torch.randn_like(q)

            def fwd(_):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)

            def fwd_bwd(_):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa).backward(do)

            f_us = time_us(torch, fwd, target_group_us=2000.0)
            fb_us = time_us(torch, fwd_bwd, target_group_us=2000.0)
    except (RuntimeError, TypeError) as e:  # a kernel (or a PyTorch before 2.5, for GQA) that does not take it
        print(f"attention {name} {(batch, heads, kv_heads, seq, head_dim)} causal={causal}: {str(e).splitlines()[0]}")
        return None, None
    return f_us, fb_us - f_us


def measure_attention(torch, out_path, quick, max_seconds, kernels):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    backends = {name: backends[name] for name in kernels}
    seqs = [1024, 4096] if quick else [1024, 2048, 4096, 8192, 16384, 32768]
    t0 = time.time()
    rows = 0
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "batch", "seq", "heads", "head_dim", "causal", "forward_us", "backward_us",
                    "forward_tflops", "kv_heads"])
        for name, backend in backends.items():
            for seq in seqs:
                for batch in ([1, 4] if seq <= 4096 else [1]):
                    for heads in [8, 16, 32, 64]:
                        for head_dim in [64, 128]:
                            for kv_heads in ([heads, heads // 8] if head_dim == 128 and heads >= 8 else [heads]):
                                for causal in ([True, False] if seq <= 8192 else [True]):
                                    if time.time() - t0 > max_seconds:
                                        break
                                    f_us, b_us = attention_call_us(torch, F, sdpa_kernel, backend, batch, seq, heads,
                                                                   kv_heads, head_dim, causal, name)
                                    if f_us is None:
                                        continue
                                    flops = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)
                                    w.writerow([name, batch, seq, heads, head_dim, int(causal), f"{f_us:.2f}",
                                                f"{b_us:.2f}", f"{flops / f_us / 1e6:.1f}", kv_heads])
                                    rows += 1
                                    f.flush()
    print(f"attention: {rows} rows in {time.time() - t0:.0f} s -> {out_path}", flush=True)


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("measure_kernel_tables.py: needs PyTorch and a CUDA GPU")
    if not torch.cuda.is_available():
        sys.exit("measure_kernel_tables.py: no CUDA GPU here")
    os.makedirs(args.out, exist_ok=True)
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuda {torch.version.cuda}", flush=True)
    if not args.skip_gemm:
        measure_gemms(torch, os.path.join(args.out, "gemm.csv"), args.quick, args.gemm_seconds,
                      args.dtypes.split(","))
    if not args.skip_attention:
        measure_attention(torch, os.path.join(args.out, "attention.csv"), args.quick, args.attention_seconds,
                          args.attention_kernels.split(","))


if __name__ == "__main__":
    main()
