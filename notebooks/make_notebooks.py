#!/usr/bin/python3
"""Writes the notebooks of this folder from the cell sources below (run with Debian's python3:
/usr/bin/python3 notebooks/make_notebooks.py). Edit here, regenerate, commit both."""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from pathlib import Path

HERE = Path(__file__).resolve().parent

SETUP = '''import json, os, subprocess, tempfile
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

# The cuboid binary (CUBOID_BIN, default build/cuboid from the repository root) and where the
# figure goes (CUBOID_FIGURES, default notebooks/figures).
NOTEBOOKS = Path.cwd() if (Path.cwd() / "scenarios").is_dir() else Path.cwd() / "notebooks"
ROOT = NOTEBOOKS.parent
CUBOID = os.environ.get("CUBOID_BIN", str(ROOT / "build" / "cuboid"))
FIGURES = Path(os.environ.get("CUBOID_FIGURES", NOTEBOOKS / "figures"))
FIGURES.mkdir(parents=True, exist_ok=True)
WORK = Path(tempfile.mkdtemp(prefix="cuboid-notebook-"))

def cuboid(*args, ok=(0,)):
    p = subprocess.run([CUBOID, *map(str, args)], capture_output=True, text=True)
    if p.returncode not in ok:
        raise RuntimeError(f"cuboid {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
    return p
'''

HEATMAP = [
    new_markdown_cell("# Sweep heat map: tensor x pipeline degree\n\n"
                      "`cuboid sweep` over the tensor and pipeline degrees of GPT 7.5B on 32 A100 40GB "
                      "(`scenarios/heatmap-gpt-7.5b-32xa100.yaml`); each cell is coloured by the simulated "
                      "iteration time, plans that do not fit in GPU memory are hatched and marked OOM, "
                      "invalid plans are grey."),
    new_code_cell(SETUP),
    new_code_cell('''scenario = NOTEBOOKS / "scenarios" / "heatmap-gpt-7.5b-32xa100.yaml"
csv = WORK / "sweep.csv"
cuboid("sweep", scenario, "--quiet", "--csv", csv, ok=(0, 3))
rows = pd.read_csv(csv, comment="#")   # comment: a partial sweep starts with "# partial: ..."
rows[["parallel.tensor", "parallel.pipeline", "status", "iteration_time_s", "peak_memory_bytes"]]'''),
    new_code_cell('''tensor = sorted(rows["parallel.tensor"].unique())
pipeline = sorted(rows["parallel.pipeline"].unique())
ran = rows[rows["status"].isin(["ok", "oom"])]
grid = ran.pivot(index="parallel.pipeline", columns="parallel.tensor", values="iteration_time_s").reindex(
    index=pipeline, columns=tensor)
fig, ax = plt.subplots(figsize=(6, 4.5))
ax.set_facecolor("0.85")  # invalid plans: no value, grey
im = ax.imshow(grid.values, cmap="viridis_r", origin="lower")
fig.colorbar(im, ax=ax, label="iteration time (s)")
for _, r in rows.iterrows():
    x, y = tensor.index(r["parallel.tensor"]), pipeline.index(r["parallel.pipeline"])
    if r["status"] == "ok":
        ax.text(x, y, f'{r["iteration_time_s"]:.2f}', ha="center", va="center", color="w", fontsize=9)
    elif r["status"] == "oom":
        ax.add_patch(plt.Rectangle((x - .5, y - .5), 1, 1, fill=False, hatch="xx", edgecolor="r", lw=0))
        ax.text(x, y, "OOM", ha="center", va="center", color="r", fontweight="bold")
    else:
        ax.text(x, y, "invalid", ha="center", va="center", color="0.3", fontsize=8)
ax.set_xticks(range(len(tensor)), tensor)
ax.set_yticks(range(len(pipeline)), pipeline)
ax.set_xlabel("tensor-parallel degree")
ax.set_ylabel("pipeline-parallel degree")
ax.set_title(rows["scenario"].iloc[0])
fig.tight_layout()
fig.savefig(FIGURES / "sweep_heatmap.png", dpi=80)'''),
]

TIMELINE = [
    new_markdown_cell("# Timeline of one iteration\n\n"
                      "`cuboid run --trace` writes one iteration as Trace Event JSON (one process per GPU, "
                      "one thread per stream). Here: GPT 1.7B, tensor 2 x pipeline 4 x data 2, 1F1B "
                      "(`scenarios/timeline-gpt-1.7b-16xa100.yaml`); one lane per stream of the first GPU of "
                      "each pipeline stage, ops coloured by category."),
    new_code_cell(SETUP),
    new_code_cell('''scenario = NOTEBOOKS / "scenarios" / "timeline-gpt-1.7b-16xa100.yaml"
trace_file = WORK / "trace.json"
cuboid("run", scenario, "--quiet", "--trace", trace_file)
trace = json.loads(trace_file.read_text())
events = trace["traceEvents"] if isinstance(trace, dict) else trace
names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
ops = pd.DataFrame([e for e in events if e.get("ph") == "X"])
ops[["pid", "tid", "name", "cat", "ts", "dur"]].head()'''),
    new_code_cell('''# The first GPU of each pipeline stage: ranks 0, 4, 8, 12 with tensor 2 x data 2 per stage
# (tensor innermost, then data, then pipeline: Megatron-LM's rank order).
gpus = [0, 4, 8, 12]
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
fig.savefig(FIGURES / "iteration_timeline.png", dpi=80)'''),
]

WHATIF = [
    new_markdown_cell("# What-if: time and cost per cluster\n\n"
                      "`cuboid whatif STUDY --json` searches the best plan of each (cluster, model) pair and "
                      "reports time to train and cost (fields: docs/search.md). Here: GPT 7.5B on 300e9 tokens, "
                      "32 GPUs of three generations (`scenarios/whatif-gpt-7.5b-3-clusters.yaml`)."),
    new_code_cell(SETUP),
    new_code_cell('''study = NOTEBOOKS / "scenarios" / "whatif-gpt-7.5b-3-clusters.yaml"
result = json.loads(cuboid("whatif", study, "--quiet", "--json", "-").stdout)
rows = pd.DataFrame(result["rows"])
rows[["cluster", "model", "status", "plan_text", "time_to_train_days", "cost_usd", "energy_kwh", "wins"]]'''),
    new_code_cell('''ok = rows[rows["status"] == "ok"]
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
left.bar(ok["cluster"], ok["time_to_train_days"], color="tab:blue")
left.set_ylabel("time to train (days)")
right.bar(ok["cluster"], ok["cost_usd"] / 1e3, color="tab:orange")
right.set_ylabel("cost (thousand USD)")
for ax, column in ((left, "time"), (right, "cost")):
    for i, wins in enumerate(ok["wins"]):
        if column in str(wins).split():
            ax.get_children()[i].set_edgecolor("k"); ax.get_children()[i].set_linewidth(2)
fig.suptitle(f'{result["study"]}: best plan per cluster (outlined: the winner)')
fig.tight_layout()
fig.savefig(FIGURES / "whatif_comparison.png", dpi=80)'''),
]

VALIDATION = [
    new_markdown_cell("# Predicted against measured\n\n"
                      "Every measured run cuboid is checked against, on one plot: the published multi-node "
                      "measurements of vTrain (109 runs of GPT 3.6B to 175B on 64 to 512 A100, "
                      "`validate/data/vtrain/`), predicted by `cuboid-published-check`, and the runs measured "
                      "on your own GPUs by `cuboid-validate --json` and saved under `validate/results/` "
                      "(none ship yet). Points on the diagonal are exact; the dashed lines are +-15 %."),
    new_code_cell(SETUP + '''
CHECK = os.environ.get("CUBOID_PUBLISHED_CHECK", str(Path(CUBOID).parent / "cuboid-published-check"))'''),
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
for f in sorted((ROOT / "validate" / "results").glob("**/*.json")):
    doc = json.loads(f.read_text())
    for row in doc.get("rows", []) if isinstance(doc, dict) else []:
        if row.get("metric") == "iteration time" and row.get("measured"):
            own.append({"run": doc.get("scenario", f.stem), "predicted_s": row["predicted"],
                        "measured_s": row["measured"]})
own = pd.DataFrame(own, columns=["run", "predicted_s", "measured_s"])
print(f"{len(own)} run(s) measured with cuboid-validate" if len(own) else
      "no cuboid-validate measurements in validate/results/ yet")'''),
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
fig.savefig(FIGURES / "predicted_vs_measured.png", dpi=80)'''),
]

for name, cells in (("sweep_heatmap", HEATMAP), ("iteration_timeline", TIMELINE), ("whatif_comparison", WHATIF),
                    ("predicted_vs_measured", VALIDATION)):
    nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}})
    nbformat.write(nb, HERE / f"{name}.ipynb")
