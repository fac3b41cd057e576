#!/usr/bin/env python3
"""Train a few steps of a Llama-shaped model as rank 0 of an N-GPU FSDP job, on one GPU, and record what fsdpsim
predicts: a CUDA memory snapshot and a profiler trace.

PyTorch's fake process group stands in for the other N - 1 ranks: every collective returns at once with tensors of
the right shapes, so rank 0 holds exactly the shards, gathered parameters, gradients and optimizer state it would
hold in the real job, and its kernels run at their real speed. Communication time is not measured (the fake group
sends nothing); compute busy time, peak allocated and peak reserved memory are.

The model comes from a Hugging Face Llama config.json, so fsdpsim reads the very same shape (`--model config.json`).
Weights are random; the data is random tokens. Frameworks:

  fsdp2          torch.distributed.fsdp.fully_shard on every decoder block and the root (torchtitan's wrapping),
                 bf16 parameters, fp32 gradient reduction, AdamW
  megatron-fsdp  megatron_fsdp.fully_shard (pip package megatron-fsdp) with the decoder block as the FSDP unit,
                 ZeRO-3, where that package is installed

Run it through bench/frameworks/run.sh, which also runs fsdpsim and `fsdpsim validate` on the two files.
"""

import argparse
import json
import math
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="Hugging Face Llama config.json (hidden_size, num_hidden_layers, ...)")
    p.add_argument("--framework", choices=["fsdp2", "megatron-fsdp", "none"], default="fsdp2",
                   help="none: the same model unsharded in bf16 (no FSDP hooks), to tell FSDP's CPU-side work from "
                        "eager PyTorch's in --plain step times")
    p.add_argument("--world-size", type=int, default=8, help="GPUs of the job this GPU is rank 0 of")
    p.add_argument("--micro-batch-size", type=int, default=1)
    p.add_argument("--seq-length", type=int, default=4096)
    p.add_argument("--steps", type=int, default=4, help="training steps; the last two are profiled")
    p.add_argument("--recompute", choices=["none", "full"], default="none",
                   help="full: checkpoint every decoder block (torch.utils.checkpoint)")
    p.add_argument("--stacks", choices=["all", "python"], default="all",
                   help="stack frames kept with each allocation: all (PyTorch's default, Python and C++) or python "
                        "(a smaller snapshot, written faster; the Python frames are what fsdpsim classifies by)")
    p.add_argument("--plain", action="store_true",
                   help="no memory history and no profiler: step wall times alone, the last --steps minus two of "
                        "them warm (what a small model's launch- and CPU-bound step costs, unperturbed)")
    p.add_argument("--out", default="out", help="folder for rank0.pickle, rank0.trace.json and job.json")
    return p.parse_args()


def build_model(cfg, torch, nn, F):
    """A Llama decoder in plain PyTorch: RMSNorm, rotary, grouped-query SDPA attention, SwiGLU MLP, untied output."""
    hidden = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", heads)
    head_dim = hidden // heads
    ffn = cfg["intermediate_size"]
    eps = cfg.get("rms_norm_eps", 1e-5)
    theta = cfg.get("rope_theta", 10000.0)

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            # Eager, with the fp32 upcast: fsdpsim's `fused_elementwise: false`.
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * self.weight

    def rotate(x, cos, sin):
        x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm = RMSNorm()
            self.wq = nn.Linear(hidden, heads * head_dim, bias=False)
            self.wk = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.wv = nn.Linear(hidden, kv_heads * head_dim, bias=False)
            self.wo = nn.Linear(heads * head_dim, hidden, bias=False)
            self.ffn_norm = RMSNorm()
            self.w1 = nn.Linear(hidden, ffn, bias=False)
            self.w3 = nn.Linear(hidden, ffn, bias=False)
            self.w2 = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            h = self.attention_norm(x)
            q = self.wq(h).view(b, s, heads, head_dim).transpose(1, 2)
            k = self.wk(h).view(b, s, kv_heads, head_dim).transpose(1, 2)
            v = self.wv(h).view(b, s, kv_heads, head_dim).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            if kv_heads != heads:
                k = k.repeat_interleave(heads // kv_heads, dim=1)
                v = v.repeat_interleave(heads // kv_heads, dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(a.transpose(1, 2).reshape(b, s, heads * head_dim))
            h = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class Llama(nn.Module):
        def __init__(self, recompute):
            super().__init__()
            self.tok_embeddings = nn.Embedding(cfg["vocab_size"], hidden)
            self.layers = nn.ModuleList(Block() for _ in range(cfg["num_hidden_layers"]))
            self.norm = RMSNorm()
            self.output = nn.Linear(hidden, cfg["vocab_size"], bias=False)
            self.recompute = recompute

        def forward(self, tokens):
            s = tokens.shape[1]
            inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=tokens.device).float() / head_dim))
            freqs = torch.outer(torch.arange(s, device=tokens.device).float(), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)
            x = self.tok_embeddings(tokens)
            for i, layer in enumerate(self.layers):
                with torch.profiler.record_function(f"layer.{i} fwd"):
                    if self.recompute == "full":
                        x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, use_reentrant=False)
                    else:
                        x = layer(x, cos, sin)
            return self.output(self.norm(x))

    return Llama, Block


def init_weights(model, torch):
    """Random weights, drawn on each rank's local shard: the values do not matter, only that no kernel sees zeros."""
    with torch.no_grad():
        for p in model.parameters():
            local = p.to_local() if hasattr(p, "to_local") else p
            local.normal_(0.0, 0.02)


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("fsdp_rank0.py: this script needs PyTorch (2.6 or later for fully_shard) and a CUDA GPU")
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if not torch.cuda.is_available():
        sys.exit("fsdp_rank0.py: no CUDA GPU here; this script records a real run and needs one")
    with open(args.config) as f:
        cfg = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    torch.cuda.set_device(0)
    dist.init_process_group("fake", rank=0, world_size=args.world_size, store=FakeStore())
    mesh = init_device_mesh("cuda", (args.world_size,), mesh_dim_names=("dp_shard",))

    # Recording starts before the model exists, so the parameter shards' blocks carry the frames that made them.
    if not args.plain:
        torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks=args.stacks)
    Llama, Block = build_model(cfg, torch, nn, F)
    torch.manual_seed(0)
    with torch.device("meta"):
        model = Llama(args.recompute)
    if args.framework == "none":
        model.to_empty(device="cuda")
        model.to(dtype=torch.bfloat16)
        init_weights(model, torch)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    elif args.framework == "fsdp2":
        try:
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        except ImportError:  # PyTorch < 2.6
            from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
        # The root with the default (None): PyTorch 2.8+ keeps it gathered from forward to backward, as fsdpsim's
        # fsdp2_wrap=blocks_and_root models; an explicit True would reshard it (the 2026-11-26 recordings did).
        fully_shard(model, mesh=mesh, mp_policy=mp)
        model.to_empty(device="cuda")
        init_weights(model, torch)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    else:
        try:
            import megatron_fsdp
        except ImportError:
            sys.exit("fsdp_rank0.py: --framework megatron-fsdp needs the megatron-fsdp package (pip install megatron-fsdp)")
        # Megatron-FSDP keeps the module in the compute dtype and makes the fp32 main weights itself.
        model.to_empty(device="cuda")
        model.to(dtype=torch.bfloat16)
        init_weights(model, torch)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        # Megatron-FSDP asks for a TP dimension, of size 1 here.
        mesh = init_device_mesh("cuda", (args.world_size, 1), mesh_dim_names=("dp_shard", "tp"))
        model, optimizer = megatron_fsdp.fully_shard(
            model, optimizer, device_mesh=mesh, dp_shard_dim="dp_shard", tp_dim="tp", fsdp_unit_modules=[Block],
            zero_dp_strategy=3,
            mixed_precision_policy=megatron_fsdp.MixedPrecisionPolicy(main_params_dtype=torch.float32,
                                                                      main_grads_dtype=torch.float32,
                                                                      grad_comm_dtype=torch.float32))

    vocab = cfg["vocab_size"]

    def train_step():
        tokens = torch.randint(0, vocab, (args.micro_batch_size, args.seq_length + 1), device="cuda")
        logits = model(tokens[:, :-1])
        # The eager fp32 loss: fsdpsim's `loss_implementation: eager_fp32`.
        loss = F.cross_entropy(logits.float().view(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step_s = []
    if args.plain:
        for _ in range(args.steps):
            step_s.append(timed_s(torch, train_step))
    else:
        record_profiled_steps(args, torch, train_step, step_s)
    report(args, cfg, torch, step_s)
    dist.destroy_process_group()


def timed_s(torch, step):
    """Wall seconds of one step, from an idle GPU to an idle GPU."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def record_profiled_steps(args, torch, train_step, step_s):
    """Runs the steps under the profiler (the last two recorded) and writes the trace and the memory snapshot."""
    profiled = min(2, args.steps)
    # One cycle (repeat=1), written when its last active step ends: a repeating schedule would start a new cycle at
    # the last prof.step() and clear the recorded steps before an export after the loop.
    schedule = torch.profiler.schedule(wait=0, warmup=args.steps - profiled, active=profiled, repeat=1)
    trace_path = os.path.join(args.out, "rank0.trace.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                schedule=schedule, on_trace_ready=lambda p: p.export_chrome_trace(trace_path)) as prof:
        for _ in range(args.steps):
            step_s.append(timed_s(torch, train_step))
            prof.step()
    torch.cuda.memory._dump_snapshot(os.path.join(args.out, "rank0.pickle"))
    torch.cuda.memory._record_memory_history(enabled=None)


def report(args, cfg, torch, step_s):
    """Writes job.json (versions, step wall times, PyTorch's peak counters) and prints it."""
    layers = cfg["num_hidden_layers"]
    warm = sorted(step_s[2:]) if args.plain and len(step_s) > 2 else []
    job = {
        "framework": args.framework,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0),
        "world_size": args.world_size,
        "micro_batch_size": args.micro_batch_size,
        "seq_length": args.seq_length,
        "recompute": args.recompute,
        "stacks": args.stacks,
        "layers": layers,
        "plain": args.plain,
        "hidden_size": cfg["hidden_size"],
        "step_s": step_s,
        "median_warm_step_s": warm[len(warm) // 2] if warm else None,
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated(),
        "max_memory_reserved_bytes": torch.cuda.max_memory_reserved(),
        "tokens_per_s": args.micro_batch_size * args.seq_length / min(step_s) if step_s else math.nan,
    }
    with open(os.path.join(args.out, "job.json"), "w") as f:
        json.dump(job, f, indent=2)
    print(json.dumps(job, indent=2))


if __name__ == "__main__":
    main()
