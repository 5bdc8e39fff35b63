#!/usr/bin/python3
"""Writes the notebooks of this folder from the cell sources below (run with Debian's python3:
/usr/bin/python3 notebooks/make_notebooks.py). Edit here, regenerate, commit both.

Every notebook takes what it plots as a parameter (environment variables, listed at its top and in
docs/sweep.md, "Notebooks"); without one it runs cuboid on its own scenario under scenarios/. It
writes its figure only into the folder CUBOID_FIGURES names, never into the repository."""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from pathlib import Path

HERE = Path(__file__).resolve().parent

COMMON_PARAMETERS = ("- `CUBOID_FIGURES`: the folder the figure is written to (created if missing); "
                     "unset, the figure is only shown in the notebook.\n"
                     "- `CUBOID_BIN`: the `cuboid` binary (default `build/cuboid` from the repository root).\n")

SETUP = '''import atexit, json, os, shutil, subprocess, tempfile
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

NOTEBOOKS = Path.cwd() if (Path.cwd() / "scenarios").is_dir() else Path.cwd() / "notebooks"
ROOT = NOTEBOOKS.parent
CUBOID = os.environ.get("CUBOID_BIN", str(ROOT / "build" / "cuboid"))
WORK = Path(tempfile.mkdtemp(prefix="cuboid-notebook-"))  # files cuboid writes for this notebook,
atexit.register(shutil.rmtree, WORK, ignore_errors=True)  # removed when the kernel exits

def parameter(name):
    """The environment variable `name` when set and not empty, else None."""
    return os.environ.get(name) or None

def cuboid(*args, ok=(0,)):
    p = subprocess.run([CUBOID, *map(str, args)], capture_output=True, text=True)
    if p.returncode not in ok:
        raise RuntimeError(f"cuboid {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
    return p

def save(name, fig=None, table=None):
    """Writes the figure (and the table it shows, as CSV) into CUBOID_FIGURES; without it, nothing."""
    folder = parameter("CUBOID_FIGURES")
    if folder is None:
        print("CUBOID_FIGURES not set: the figure is not written")
        return
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if fig is not None:
        fig.savefig(folder / f"{name}.png", dpi=80)
        print(f"figure: {folder / f'{name}.png'}")
    if table is not None:
        table.to_csv(folder / f"{name}.csv", index=False)
'''

HEATMAP = [
    new_markdown_cell("# Sweep heat map: the best plan per pair of axes\n\n"
                      "Plots the rows of a `cuboid sweep --csv` over two of its axes; each cell is coloured by "
                      "the iteration time of the fastest plan that fits among the cell's points (over every "
                      "other axis, whose values for that plan are printed in the cell). A cell whose plans all "
                      "run out of GPU memory is hatched and marked OOM, one with only invalid plans is grey.\n\n"
                      "Parameters (environment variables):\n\n"
                      "- `CUBOID_SWEEP_CSV`: the sweep CSV to plot (any number of axes: the columns before "
                      "`status`). Unset: runs `cuboid sweep` on `scenarios/heatmap-gpt-7.5b-32xa100.yaml` "
                      "(GPT 7.5B on 32 A100 40GB, tensor x pipeline).\n"
                      "- `CUBOID_X`, `CUBOID_Y`: the axes across and up (column names such as "
                      "`parallel.tensor`); default: the first two axes with more than one value.\n"
                      + COMMON_PARAMETERS +
                      "\nWritten: `sweep_heatmap.png` and `sweep_heatmap.csv` (one row per cell: its best "
                      "plan, or its status)."),
    new_code_cell(SETUP),
    new_code_cell('''if parameter("CUBOID_SWEEP_CSV"):
    csv = Path(parameter("CUBOID_SWEEP_CSV"))
else:
    csv = WORK / "sweep.csv"
    cuboid("sweep", NOTEBOOKS / "scenarios" / "heatmap-gpt-7.5b-32xa100.yaml", "--quiet", "--csv", csv, ok=(0, 3))
rows = pd.read_csv(csv, comment="#")   # comment: a partial sweep starts with "# partial: ..."
# A sweep CSV starts with one column per axis, then "status" (docs/scenario.md, "cuboid sweep").
axes = list(rows.columns[:list(rows.columns).index("status")])
varying = [a for a in axes if rows[a].nunique() > 1]

def chosen_axis(name, other):
    given = parameter(name)
    if given is not None:
        if given not in axes:
            raise ValueError(f"{name}={given!r} is not an axis of {csv}; its axes: {', '.join(axes)}")
        return given
    candidates = [a for a in varying if a != other]
    if not candidates:
        raise ValueError(f"{csv} has {len(varying)} axis(es) with more than one value ({', '.join(varying)}); "
                         f"a heat map needs two: set {name} to one of {', '.join(axes)}")
    return candidates[0]

x_axis = chosen_axis("CUBOID_X", parameter("CUBOID_Y"))
y_axis = chosen_axis("CUBOID_Y", x_axis)
if x_axis == y_axis:
    raise ValueError(f"CUBOID_X and CUBOID_Y are both {x_axis!r}: choose two different axes of {', '.join(axes)}")
others = [a for a in axes if a not in (x_axis, y_axis)]
print(f"{csv}: {len(rows)} points, axes {', '.join(axes)}; x = {x_axis}, y = {y_axis}, best over: "
      f"{', '.join(others) or 'nothing (two axes)'}")'''),
    new_code_cell('''# One row per (y, x) cell: its fastest plan that fits, else the cell's status (oom when some plan
# ran out of memory, else the first invalid reason).
def cell(points):
    fits = points[points["status"] == "ok"]
    if len(fits):
        best = fits.loc[fits["iteration_time_s"].idxmin()]
        return pd.Series({"status": "ok", "iteration_time_s": best["iteration_time_s"],
                          **{a: best[a] for a in others}})
    status = "oom" if (points["status"] == "oom").any() else points["status"].iloc[0]
    return pd.Series({"status": status, "iteration_time_s": float("nan"), **{a: None for a in others}})

cells = rows.groupby([y_axis, x_axis]).apply(cell).reset_index()
cells = cells[[x_axis, y_axis, "status", "iteration_time_s", *others]]
for a in others:  # integer axes stay integers (a cell without a plan has none: <NA>)
    if pd.api.types.is_integer_dtype(rows[a]):
        cells[a] = cells[a].astype("Int64")
cells'''),
    new_code_cell('''xs = sorted(rows[x_axis].unique())
ys = sorted(rows[y_axis].unique())
grid = cells.pivot(index=y_axis, columns=x_axis, values="iteration_time_s").reindex(index=ys, columns=xs)
fig, ax = plt.subplots(figsize=(1.3 * len(xs) + 2.5, 0.9 * len(ys) + 1.8))
ax.set_facecolor("0.85")  # cells without a plan that runs: grey
im = ax.imshow(grid.values.astype(float), cmap="viridis_r", origin="lower", aspect="auto")
fig.colorbar(im, ax=ax, label="iteration time (s)")
for _, c in cells.iterrows():
    x, y = xs.index(c[x_axis]), ys.index(c[y_axis])
    if c["status"] == "ok":
        detail = "\\n".join(f"{a.split('.')[-1]} {c[a]}" for a in others)
        ax.text(x, y, f'{c["iteration_time_s"]:.2f}' + ("\\n" + detail if detail else ""),
                ha="center", va="center", fontsize=9 if not others else 6.5,
                color="k" if im.norm(c["iteration_time_s"]) < 0.5 else "w")  # dark text on the light end
    elif c["status"] == "oom":
        ax.add_patch(plt.Rectangle((x - .5, y - .5), 1, 1, fill=False, hatch="xx", edgecolor="r", lw=0))
        ax.text(x, y, "OOM", ha="center", va="center", color="r", fontweight="bold")
    else:
        ax.text(x, y, "invalid", ha="center", va="center", color="0.3", fontsize=8)
ax.set_xticks(range(len(xs)), xs)
ax.set_yticks(range(len(ys)), ys)
ax.set_xlabel(x_axis)
ax.set_ylabel(y_axis)
title = rows["scenario"].iloc[0]
ax.set_title(title + (f"\\nfastest plan over {', '.join(others)}" if others else ""), fontsize=10)
fig.tight_layout()
save("sweep_heatmap", fig, cells)'''),
]

TIMELINE = [
    new_markdown_cell("# Timeline of one iteration\n\n"
                      "`cuboid run --trace` writes one iteration as Trace Event JSON (one process per GPU, "
                      "one thread per stream). One lane per stream of the chosen GPUs, ops coloured by "
                      "category.\n\n"
                      "Parameters (environment variables):\n\n"
                      "- `CUBOID_TRACE`: the trace to plot (a file written by `cuboid run --trace`). Unset: "
                      "runs `scenarios/timeline-gpt-1.7b-16xa100.yaml` (GPT 1.7B, tensor 2 x pipeline 4 x "
                      "data 2, 1F1B).\n"
                      "- `CUBOID_GPUS`: the GPUs shown, comma separated (`0,4,8,12`). Default: for the "
                      "notebook's own scenario the first GPU of each pipeline stage (0, 4, 8, 12); for a "
                      "trace given, its first four GPUs.\n"
                      + COMMON_PARAMETERS +
                      "\nWritten: `iteration_timeline.png`."),
    new_code_cell(SETUP),
    new_code_cell('''if parameter("CUBOID_TRACE"):
    trace_file = Path(parameter("CUBOID_TRACE"))
    default_gpus = None
else:
    trace_file = WORK / "trace.json"
    cuboid("run", NOTEBOOKS / "scenarios" / "timeline-gpt-1.7b-16xa100.yaml", "--quiet", "--trace", trace_file)
    # Ranks 0, 4, 8, 12: tensor 2 x data 2 per stage (tensor innermost, then data, then pipeline:
    # Megatron-LM's rank order).
    default_gpus = [0, 4, 8, 12]
trace = json.loads(trace_file.read_text())
events = trace["traceEvents"] if isinstance(trace, dict) else trace
names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
ops = pd.DataFrame([e for e in events if e.get("ph") == "X"])
ops[["pid", "tid", "name", "cat", "ts", "dur"]].head()'''),
    new_code_cell('''if parameter("CUBOID_GPUS"):
    gpus = [int(g) for g in parameter("CUBOID_GPUS").split(",")]
else:
    gpus = default_gpus or sorted(ops["pid"].unique())[:4]
missing = sorted(set(gpus) - set(ops["pid"]))
if missing:
    raise ValueError(f"GPU(s) {missing} have no ops in {trace_file}; it has {ops['pid'].min()} to {ops['pid'].max()}")
shown = ops[ops["pid"].isin(gpus)]
lanes = sorted({(p, t) for p, t in zip(shown["pid"], shown["tid"])})
categories = sorted(shown["cat"].unique())
colours = dict(zip(categories, plt.cm.tab10.colors))
fig, ax = plt.subplots(figsize=(11, 0.45 * len(lanes) + 1.2))
for y, (pid, tid) in enumerate(lanes):
    lane = shown[(shown["pid"] == pid) & (shown["tid"] == tid)]
    for cat, group in lane.groupby("cat"):
        ax.broken_barh(list(zip(group["ts"] / 1e3, group["dur"] / 1e3)), (y - 0.4, 0.8), color=colours[cat])
ax.set_yticks(range(len(lanes)), [f"gpu {p} {names.get((p, t), t)}" for p, t in lanes])
ax.invert_yaxis()
ax.set_xlabel("time in the iteration (ms)")
ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[c]) for c in categories], labels=categories,
          loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(categories), frameon=False)
fig.tight_layout()
save("iteration_timeline", fig)'''),
]

WHATIF = [
    new_markdown_cell("# What-if: time and cost per cluster\n\n"
                      "`cuboid whatif STUDY --json` searches the best plan of each (cluster, model) pair and "
                      "reports time to train and cost, rented and owned (fields: docs/search.md). A cost whose "
                      "input the catalog lacks (a purchase price, a cloud price) has no bar and says so.\n\n"
                      "Parameters (environment variables):\n\n"
                      "- `CUBOID_STUDY`: a study file (`.yaml`, run with `cuboid whatif`) or the JSON "
                      "`cuboid whatif --json` wrote (`.json`, read as it is). Unset: runs "
                      "`scenarios/whatif-gpt-7.5b-3-clusters.yaml` (GPT 7.5B on 300e9 tokens, 32 GPUs of "
                      "three generations).\n"
                      + COMMON_PARAMETERS +
                      "\nWritten: `whatif_comparison.png`."),
    new_code_cell(SETUP),
    new_code_cell('''study = Path(parameter("CUBOID_STUDY") or NOTEBOOKS / "scenarios" / "whatif-gpt-7.5b-3-clusters.yaml")
if study.suffix == ".json":
    result = json.loads(study.read_text())
else:
    result = json.loads(cuboid("whatif", study, "--quiet", "--json", "-", ok=(0, 3)).stdout)
rows = pd.json_normalize(result["rows"])
for column in ("training_cost.rented_usd", "training_cost.owned_usd"):
    if column not in rows:
        rows[column] = float("nan")
rows[["cluster", "model", "status", "plan_text", "time_to_train_days", "training_cost.rented_usd",
      "training_cost.owned_usd", "energy_kwh", "wins"]]'''),
    new_code_cell('''ok = rows[rows["status"] == "ok"].reset_index(drop=True)
label = ok["cluster"] + (" " + ok["model"] if ok["model"].nunique() > 1 else "")
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
panels = (("time_to_train_days", "time to train (days)", 1, "time"),
          ("training_cost.rented_usd", "rented cost (thousand USD)", 1e3, "cost"),
          ("training_cost.owned_usd", "owned cost (thousand USD)", 1e3, None))
for ax, (column, title, scale, win) in zip(axes, panels):
    values = ok[column] / scale
    bars = ax.bar(label, values.fillna(0), color="tab:blue" if win == "time" else "tab:orange")
    for i, v in enumerate(values):
        if pd.isna(v):  # no input for this cost in the catalog or the study: say so, never 0
            ax.text(i, 0, "no price\\nin catalog", ha="center", va="bottom", fontsize=7, color="0.3")
        elif win and win in str(ok["wins"][i]).split():
            bars[i].set_edgecolor("k"); bars[i].set_linewidth(2)
    ax.set_ylabel(title)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
fig.suptitle(f'{result["study"]}: best plan per cluster (outlined: the winner)')
fig.tight_layout()
save("whatif_comparison", fig)'''),
]

VALIDATION = [
    new_markdown_cell("# Predicted against measured\n\n"
                      "Every measured run cuboid is checked against, on one plot: the published multi-node "
                      "measurements of vTrain (109 runs of GPT 3.6B to 175B on 64 to 512 A100, "
                      "`validate/data/vtrain/`), predicted by `cuboid-published-check`, and the runs measured "
                      "on your own GPUs by `cuboid-validate --json`. Points on the diagonal are exact; the "
                      "dashed lines are +-15 %.\n\n"
                      "Parameters (environment variables):\n\n"
                      "- `CUBOID_VALIDATE_RESULTS`: the folder of `cuboid-validate --json` results to plot "
                      "(searched recursively for `*.json`). Unset: `validate/results/` (none ship yet).\n"
                      "- `CUBOID_PUBLISHED_CHECK`: the `cuboid-published-check` binary (default: beside "
                      "`CUBOID_BIN`).\n"
                      + COMMON_PARAMETERS +
                      "\nWritten: `predicted_vs_measured.png`."),
    new_code_cell(SETUP + '''
CHECK = os.environ.get("CUBOID_PUBLISHED_CHECK", str(Path(CUBOID).parent / "cuboid-published-check"))
RESULTS = Path(parameter("CUBOID_VALIDATE_RESULTS") or ROOT / "validate" / "results")'''),
    new_code_cell('''csv = WORK / "published.csv"
p = subprocess.run([CHECK, "--only", "vtrain", "--csv", str(csv), "--data", str(ROOT / "validate" / "data"),
                    "--scenarios", str(ROOT / "scenarios")], capture_output=True, text=True)
if p.returncode != 0:
    raise RuntimeError(p.stderr)
published = pd.read_csv(csv)
published["error_pct"] = 100 * published["relative_error"]
published.groupby("model")["error_pct"].describe()[["count", "mean", "min", "max"]]'''),
    new_code_cell('''# cuboid-validate comparisons (JSON written with --json), if any were measured.
own = []
for f in sorted(RESULTS.glob("**/*.json")):
    doc = json.loads(f.read_text())
    for row in doc.get("rows", []) if isinstance(doc, dict) else []:
        if row.get("metric") == "iteration time" and row.get("measured"):
            own.append({"run": doc.get("scenario", f.stem), "predicted_s": row["predicted"],
                        "measured_s": row["measured"]})
own = pd.DataFrame(own, columns=["run", "predicted_s", "measured_s"])
print(f"{len(own)} run(s) measured with cuboid-validate in {RESULTS}" if len(own) else
      f"no cuboid-validate measurements in {RESULTS}")'''),
    new_code_cell('''fig, ax = plt.subplots(figsize=(5.5, 5))
for model, rows in published.groupby("model", sort=False):
    ax.scatter(rows["measured_s"], rows["predicted_s"], s=14, label=f"vTrain {model}")
if len(own):
    ax.scatter(own["measured_s"], own["predicted_s"], marker="*", s=90, color="k", label="cuboid-validate")
lo = 0.8 * min(published["measured_s"].min(), published["predicted_s"].min())
hi = 1.2 * max(published["measured_s"].max(), published["predicted_s"].max())
line = [lo, hi]
ax.plot(line, line, color="0.3", lw=1)
ax.plot(line, [v * 1.15 for v in line], "--", color="0.6", lw=1)
ax.plot(line, [v * 0.85 for v in line], "--", color="0.6", lw=1)
ax.set_xscale("log"); ax.set_yscale("log")
ax.set_xlim(lo, hi); ax.set_ylim(lo, hi)
ax.set_xlabel("measured iteration time (s)"); ax.set_ylabel("predicted iteration time (s)")
mape = published["error_pct"].abs().mean()
ax.set_title(f"predicted vs measured (vTrain MAPE {mape:.1f} %)")
ax.legend(fontsize=8)
fig.tight_layout()
save("predicted_vs_measured", fig)'''),
]

for name, cells in (("sweep_heatmap", HEATMAP), ("iteration_timeline", TIMELINE), ("whatif_comparison", WHATIF),
                    ("predicted_vs_measured", VALIDATION)):
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}})
    nbformat.write(nb, HERE / f"{name}.ipynb")
