#!/usr/bin/python3
"""Runs one notebook headless for the tests (notebooks/CMakeLists.txt) and checks what it wrote:

    run_notebook.py NOTEBOOK OUTPUT_DIR --figure NAME [--best-per-cell SWEEP_CSV]

- the figure NAME.png is written anew into $CUBOID_FIGURES;
- nothing under the repository's notebooks/ folder changed (the notebooks write only where told);
- with --best-per-cell: the heat map's table ($CUBOID_FIGURES/NAME.csv, one row per cell) holds,
  for every pair of values of its two axes, the fastest plan that fits among the sweep's rows
  with those values, over every other axis (computed here independently of the notebook).
Exits 1 with the reason on the first check that fails."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def snapshot(folder):
    """Every file under the folder with its size and modification time."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def fail(reason):
    print(f"run_notebook: {reason}", file=sys.stderr)
    sys.exit(1)


def check_best_per_cell(sweep_csv, cells_csv):
    import pandas as pd
    rows = pd.read_csv(sweep_csv, comment="#")
    cells = pd.read_csv(cells_csv)
    x_axis, y_axis = cells.columns[0], cells.columns[1]
    axes = list(rows.columns[:list(rows.columns).index("status")])
    others = [a for a in axes if a not in (x_axis, y_axis)]
    if list(cells.columns[4:]) != others:
        fail(f"{cells_csv}: columns after the time {list(cells.columns[4:])}, expected the other axes {others}")
    if len(cells) != len(rows.groupby([x_axis, y_axis])):
        fail(f"{cells_csv}: {len(cells)} cells, expected one per ({x_axis}, {y_axis}) pair")
    fits = rows[rows["status"] == "ok"]
    for _, c in cells.iterrows():
        same = fits[(fits[x_axis] == c[x_axis]) & (fits[y_axis] == c[y_axis])]
        where = f"cell {x_axis}={c[x_axis]} {y_axis}={c[y_axis]}"
        if same.empty:
            if c["status"] == "ok":
                fail(f"{where}: shown as a plan that fits, but no point of it fits")
            continue
        fastest = same["iteration_time_s"].min()
        if c["status"] != "ok" or abs(c["iteration_time_s"] - fastest) > 1e-12 * fastest:
            fail(f"{where}: shows {c['status']} {c['iteration_time_s']}, the fastest plan that fits takes {fastest}")
        best = same[same["iteration_time_s"] == fastest].iloc[0]
        for a in others:
            numeric = pd.api.types.is_number(best[a]) and pd.api.types.is_number(c[a])
            if (float(best[a]) != float(c[a])) if numeric else (str(best[a]) != str(c[a])):
                fail(f"{where}: {a} = {c[a]}, the fastest plan has {best[a]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("notebook", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--figure", required=True)
    parser.add_argument("--best-per-cell", type=Path)
    args = parser.parse_args()
    figures = os.environ.get("CUBOID_FIGURES")
    if not figures:
        fail("CUBOID_FIGURES must name the folder the figure goes to")
    figure = Path(figures) / f"{args.figure}.png"
    figure.unlink(missing_ok=True)
    before = snapshot(HERE)
    run = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                          "--output-dir", str(args.output_dir), str(args.notebook)])
    if run.returncode != 0:
        fail(f"{args.notebook.name} failed (exit {run.returncode})")
    after = snapshot(HERE)
    if before != after:
        changed = sorted(str(p.relative_to(HERE)) for p in set(before) ^ set(after)
                         | {p for p in before if p in after and before[p] != after[p]})
        fail(f"{args.notebook.name} wrote into the repository: notebooks/{', notebooks/'.join(changed)}")
    if not figure.is_file() or figure.stat().st_size == 0:
        fail(f"{args.notebook.name} did not write {figure}")
    if args.best_per_cell:
        check_best_per_cell(args.best_per_cell, Path(figures) / f"{args.figure}.csv")


if __name__ == "__main__":
    main()
