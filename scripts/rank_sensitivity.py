#!/usr/bin/env python3
"""How much the per-model rank correlation of the vTrain rows can be trusted: for each model, how
close its measured times lie, how widely its errors spread, the row whose removal moves the
Spearman correlation most, and (with --cuboid) the correlation of a row's signed error with the
share of its predicted time that is exposed tensor communication. docs/accuracy.md ("Reading the
misses") quotes its output.

Usage: build/cuboid-published-check --only vtrain --csv /tmp/rows.csv > /dev/null
       scripts/rank_sensitivity.py /tmp/rows.csv [--cuboid build/cuboid]
"""
import argparse
import csv
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_report import spearman  # noqa: E402  (one definition of the rank correlation)

ROOT = Path(__file__).resolve().parent.parent


def pearson(a, b):
    ma, mb = statistics.mean(a), statistics.mean(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / (va * vb) ** 0.5 if va and vb else float("nan")


def tensor_comm_share(cuboid, model, plan):
    """Exposed tensor communication over the predicted iteration, from `cuboid run --json`."""
    degrees = dict(item.split("=") for item in plan.split())
    keys = {"t": "parallel.tensor", "p": "parallel.pipeline", "d": "parallel.data", "mb": "training.micro_batch"}
    cmd = [cuboid, "run", str(ROOT / "scenarios" / "vtrain" / f"{model}.yaml"), "--quiet", "--json", "-"]
    for short, key in keys.items():
        cmd += ["--set", f"{key}={degrees[short]}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"rank_sensitivity: {' '.join(cmd)} exited with {done.returncode}: {done.stderr.strip()}")
    result = json.loads(done.stdout)
    return result["breakdown_s"]["tp_comm_exposed"] / result["iteration_time_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="the CSV of cuboid-published-check --csv")
    parser.add_argument("--cuboid", help="the cuboid program, to read each row's breakdown")
    args = parser.parse_args()

    by_model = defaultdict(list)
    for r in csv.DictReader(open(args.csv)):
        if r["set"] == "vtrain" and not r["failure"]:
            by_model[r["model"]].append(r)
    if not by_model:
        sys.exit(f"rank_sensitivity: {args.csv} has no vtrain rows")

    header = ("| model | rows | measured (s) | median gap between neighbouring measured times | "
              "rows within 10 % of the fastest | standard deviation of the signed error | Spearman | "
              "row whose removal moves it most |")
    print(header + (" error vs exposed tensor communication |" if args.cuboid else ""))
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |" + (" ---: |" if args.cuboid else ""))
    for model, rows in by_model.items():
        measured = [float(r["measured_s"]) for r in rows]
        predicted = [float(r["predicted_s"]) for r in rows]
        errors = [float(r["relative_error"]) for r in rows]
        ordered = sorted(measured)
        gaps = [b / a - 1 for a, b in zip(ordered, ordered[1:])]
        rho = spearman(predicted, measured)
        # The row without which the correlation changes most (a row of its own decides the target
        # when this moves it past it).
        moves = []
        for i, r in enumerate(rows):
            rest = [j for j in range(len(rows)) if j != i]
            moves.append((spearman([predicted[j] for j in rest], [measured[j] for j in rest]), r["plan"]))
        without, plan = max(moves, key=lambda m: abs(m[0] - rho))
        line = (f"| {model} | {len(rows)} | {ordered[0]:.2f}-{ordered[-1]:.2f} | "
                f"{100 * statistics.median(gaps):.1f} % | {sum(m <= 1.1 * ordered[0] for m in measured)} | "
                f"{100 * statistics.pstdev(errors):.1f} % | {rho:.3f} | {plan}: {without:.3f} |")
        if args.cuboid:
            shares = [tensor_comm_share(args.cuboid, r["model"], r["plan"]) for r in rows]
            line += f" {pearson(shares, errors):+.2f} |"
        print(line)


if __name__ == "__main__":
    main()
