#!/usr/bin/env python3
"""Renders the table sections of docs/accuracy.md (from "## Megatron-LM SC'21" on; the sections
before them are written by hand) from the CSV of `cuboid-published-check --csv FILE`.

Usage: build/cuboid-published-check --csv /tmp/rows.csv > /dev/null
       scripts/accuracy_report.py /tmp/rows.csv > /tmp/tables.md   # replaces the table sections
A CSV of `--only single` (the 1,440 calibration rows) renders its per-model summary only.
Rows marked not expressible (the `modern` set: what cuboid does not model) are listed apart, with
what they need, and are not counted as failed.
"""
import csv
import sys
from collections import defaultdict


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    if len(a) < 2:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    m = (len(a) + 1) / 2
    cov = sum((x - m) * (y - m) for x, y in zip(ra, rb))
    va = sum((x - m) ** 2 for x in ra)
    vb = sum((y - m) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else float("nan")


def main(path):
    rows = list(csv.DictReader(open(path)))
    by_set = defaultdict(list)
    for r in rows:
        by_set[r["set"]].append(r)
    titles = {"megatron-sc21": "Megatron-LM SC'21 Table 1 (Selene: DGX A100 80GB, 8 x HDR per node)",
              "vtrain": "vTrain multi-node measurements (A100, Megatron-DeepSpeed)",
              "vtrain-single": "vTrain single-node measurements (calibration set of the host dispatch time)",
              "modern": "Published runs on today's stacks (NeMo, Megatron-Bridge, torchtitan, llm-foundry)"}
    # Sets this large get the per-model summary only (the rows are in the CSV).
    max_rows_listed = 200
    for name, all_items in by_set.items():
        unexpressible = [r for r in all_items if r.get("expressible", "1") == "0"]
        items = [r for r in all_items if r.get("expressible", "1") != "0"]
        ok = [r for r in items if not r["failure"]]
        errs = [abs(float(r["relative_error"])) for r in ok]
        print(f"## {titles.get(name, name)}\n")
        if unexpressible:
            print(f"{len(items)} of {len(all_items)} rows expressible. ", end="")
        print(f"{len(ok)} rows simulated, {len(items) - len(ok)} failed; "
              f"MAPE {100 * sum(errs) / max(1, len(errs)):.1f} %, worst row {100 * max(errs, default=0):.1f} %.\n")
        groups = defaultdict(list)
        for r in ok:
            groups[r["model"]].append(r)
        # The modern set's rows of one model differ in batch and GPU count: no order to compare.
        if name != "modern" and any(len(g) > 1 for g in groups.values()):
            print("| model | rows | MAPE | Spearman (predicted vs measured order) |\n| --- | ---: | ---: | ---: |")
            for model, g in groups.items():
                e = [abs(float(r["relative_error"])) for r in g]
                rho = spearman([float(r["predicted_s"]) for r in g], [float(r["measured_s"]) for r in g])
                print(f"| {model} | {len(g)} | {100 * sum(e) / len(e):.1f} % | {rho:.3f} |")
            print()
        if len(items) > max_rows_listed:
            continue
        print("| model | plan | predicted (s) | measured (s) | error |\n| --- | --- | ---: | ---: | ---: |")
        for r in items:
            if r["failure"]:
                print(f"| {r['model']} | {r['plan']} | failed | {float(r['measured_s']):.3f} | {r['failure']} |")
            else:
                print(f"| {r['model']} | {r['plan']} | {float(r['predicted_s']):.3f} | "
                      f"{float(r['measured_s']):.3f} | {100 * float(r['relative_error']):+.1f} % |")
        print()
        if unexpressible:
            print("Not expressible (not counted as failed):\n\n| row | needs |\n| --- | --- |")
            for r in unexpressible:
                print(f"| {r['plan']} | {r['failure']} |")
            print()


if __name__ == "__main__":
    main(sys.argv[1])
