#!/usr/bin/env python3
"""Measure fused attention (cuDNN's fused attention and FlashAttention-2) on one GPU.

cuboid prices a fused attention kernel by the FLOPs it computes (docs/hardware_models.md):
forward 4*b*h*s*keys*d times the causal tile fraction (n+1)/2n of n = ceil(keys/128) tiles,
backward 2.5 times that. This script times the kernels that training stacks call, through
PyTorch's scaled_dot_product_attention with one backend forced, and writes:

  --csv   every measurement (backend, mask, head dim, keys, batch, heads, direction, median ms,
          spread, TFLOP/s in cuboid's FLOP convention)
  --yaml  the `attention:` section of a cuboid hardware profile (docs/hardware_profile.md) from
          one backend and one mask (default: cudnn, causal), ready to append to a profile

The shapes follow the FlashAttention papers' benchmark: 16k tokens per batch (b = 16384 / s),
hidden size 2048 (h = 2048 / d), bf16. Each point is the median of --reps timed calls after
--warmup calls, timed with CUDA events; forward and backward are timed separately (the backward
after an untimed forward, as in training).
"""
import argparse
import csv
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
TILE = 128
BACKWARD_RATIO = 2.5


def kernel_flops(b, h, s, d, causal, backward):
    n = (s + TILE - 1) // TILE
    fraction = (n + 1) / (2 * n) if causal else 1.0
    forward = 4.0 * b * h * s * s * d * fraction
    return BACKWARD_RATIO * forward if backward else forward


def time_calls(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def measure(backend, b, h, s, d, causal, warmup, reps):
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    dout = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel([BACKENDS[backend]]):
        forward = time_calls(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), warmup, reps)
        # torch.autograd.grad returns the gradients without accumulating them into .grad, so no
        # extra elementwise kernel joins the timed backward.
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        backward = time_calls(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), warmup, reps)
    return forward, backward


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--yaml", required=True)
    p.add_argument("--backends", default="cudnn,flash")
    p.add_argument("--profile-backend", default="cudnn")
    p.add_argument("--head-dims", default="64,128")
    p.add_argument("--seqs", default="512,1024,2048,4096,8192,16384")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("sdpa_sweep: no CUDA device")
    props = torch.cuda.get_device_properties(0)
    print(f"# device {props.name}, {props.multi_processor_count} SMs; torch {torch.__version__}, "
          f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}", flush=True)
    rows = []
    for backend in a.backends.split(","):
        for d in (int(x) for x in a.head_dims.split(",")):
            for causal in (True, False):
                for s in (int(x) for x in a.seqs.split(",")):
                    b, h = max(1, a.tokens // s), a.hidden // d
                    try:
                        fwd, bwd = measure(backend, b, h, s, d, causal, a.warmup, a.reps)
                    except RuntimeError as e:  # a backend that has no kernel for this shape
                        print(f"# {backend} d={d} s={s} causal={causal}: {str(e).splitlines()[0]}", flush=True)
                        continue
                    for direction, (med, lo, hi) in (("forward", fwd), ("backward", bwd)):
                        flops = kernel_flops(b, h, s, d, causal, direction == "backward")
                        row = dict(backend=backend, mask="causal" if causal else "full", head_dim=d, keys=s,
                                   batch=b, heads=h, direction=direction, median_ms=round(med, 5),
                                   min_ms=round(lo, 5), max_ms=round(hi, 5),
                                   tflops=round(flops / (med * 1e-3) / 1e12, 2))
                        rows.append(row)
                        print(",".join(str(row[k]) for k in row), flush=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(a.yaml, "w") as f:
        f.write(f"# {props.name}: torch {torch.__version__}, CUDA {torch.version.cuda}, "
                f"cuDNN {torch.backends.cudnn.version()}, backend {a.profile_backend}, causal mask, bf16\n")
        f.write("attention:\n")
        for r in rows:
            if r["backend"] == a.profile_backend and r["mask"] == "causal":
                f.write(f"  - {{direction: {r['direction']}, keys: {r['keys']}, head_dim: {r['head_dim']}, "
                        f"tflops: {r['tflops']}}}\n")


if __name__ == "__main__":
    main()
