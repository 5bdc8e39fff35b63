#!/usr/bin/env python3
"""GEMM throughput in a short burst against sustained load, with the GPU's clock and power.

A microbenchmark times a GEMM for milliseconds; a training step keeps the tensor cores busy for
seconds, and a GPU at its power limit lowers its clock. This script runs one GEMM shape back to
back for --seconds, and every --window seconds records the achieved TFLOP/s (CUDA events), the SM
clock, the power draw and NVML's clock-event reasons. It writes one CSV row per window and prints
the first window (the burst a microbenchmark sees) against the median of the last half (steady
state).
"""
import argparse
import csv
import statistics
import time

import torch

try:
    import pynvml
except ImportError:  # nvidia-ml-py missing: rates only
    pynvml = None


def gemm_fn(precision, m, n, k):
    if precision == "fp8":
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        return lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    return lambda: a @ b


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--shapes", default="8192x8192x8192,4096x22016x4096")
    p.add_argument("--precisions", default="bf16,fp8")
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--window", type=float, default=0.25)
    p.add_argument("--rest", type=float, default=5.0, help="idle seconds before each run (clock and power settle)")
    a = p.parse_args()
    nvml = None
    if pynvml is not None:
        pynvml.nvmlInit()
        nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
    print(f"# {torch.cuda.get_device_name(0)}; torch {torch.__version__}, CUDA {torch.version.cuda}", flush=True)
    rows = []
    for precision in a.precisions.split(","):
        for shape in a.shapes.split(","):
            m, n, k = (int(x) for x in shape.split("x"))
            fn = gemm_fn(precision, m, n, k)
            fn()
            torch.cuda.synchronize()
            time.sleep(a.rest)
            flops = 2.0 * m * n * k
            # Calls per window from one timed call (the clock may still be low: a lower bound).
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); e.synchronize()
            per_window = max(1, int(a.window * 1e3 / max(s.elapsed_time(e), 1e-3)))
            start = time.time()
            while time.time() - start < a.seconds:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(per_window):
                    fn()
                e.record()
                e.synchronize()
                ms = s.elapsed_time(e)
                row = dict(precision=precision, shape=shape, t_s=round(time.time() - start, 3),
                           tflops=round(flops * per_window / (ms * 1e-3) / 1e12, 1))
                if nvml is not None:
                    row["sm_mhz"] = pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM)
                    row["power_w"] = round(pynvml.nvmlDeviceGetPowerUsage(nvml) / 1000.0, 1)
                    reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
                    row["clock_event_reasons"] = hex(reasons(nvml))
                rows.append(row)
            run = [r for r in rows if r["precision"] == precision and r["shape"] == shape]
            steady = run[len(run) // 2:]
            med = statistics.median(r["tflops"] for r in steady)
            clk = statistics.median(r.get("sm_mhz", 0) for r in steady)
            pw = statistics.median(r.get("power_w", 0) for r in steady)
            print(f"{precision} {shape}: first window {run[0]['tflops']} TFLOP/s at {run[0].get('sm_mhz')} MHz; "
                  f"steady (last half, median) {med} TFLOP/s at {clk} MHz, {pw} W; "
                  f"steady/first {med / run[0]['tflops']:.3f}", flush=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
