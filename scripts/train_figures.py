"""Figures, table and findings of an `attnbench train` run folder (plot.py and report.py call it).

Reads the committed rows of RUN/train.csv, train_final.csv, train_attention.csv (scripts/lib/run_folder.py:
what the journal commits; a damaged file raises RunFolderError "file:line: reason") and meta.json
(results/README.md) and writes:

    train_curves       token_acc and align_acc against step, one panel per task, a line per scorer
                       (mean over seeds), the seeds' min..max as a band
    train_heatmaps     the trained attention on held-out example 0 of reverse and recall, per scorer
                       (lowest seed), outputs down, source positions across
and, as text, the final table (mean and spread over seeds) and the findings
"Does tanh matter? Does scaling matter?" with the measured numbers and the command that made them.
"""

import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import run_folder  # noqa: E402  (scripts/lib/run_folder.py: committed rows, damage as file:line)

KEY = []    # the key columns, read from train_final.csv's header (those before `status`) by load_train_run
GROUP = []  # KEY without seed: a configuration; its seeds are repetitions
TEXT = {"task", "scorer", "impl", "dtype", "status"}
FINAL_METRICS = ["token_acc", "seq_acc", "align_acc", "gold_mass", "entropy_norm", "drift", "seq_acc_long",
                 "align_acc_long", "ms_per_step"]
HEATMAP_TASKS = ["reverse", "recall"]


def is_train_run(folder):
    return os.path.exists(os.path.join(folder, "train_final.csv"))


def _cell(column, text):
    """A cell of the train CSVs: text for TEXT and the heatmap's symbols, else a number ("" is NaN)."""
    if column in TEXT or column in ("target", "source"):
        return text
    return float(text) if text != "" else float("nan")


def load_train_run(folder):
    """The run's committed rows (run_folder: what the journal commits) and meta.json. Raises
    run_folder.RunFolderError "file:line: reason" for a damaged or malformed file."""
    header, final = run_folder.read_table(folder, "train_final.csv", _cell)
    if "status" not in header:
        raise run_folder.RunFolderError(f"{os.path.join(folder, 'train_final.csv')}:1: not a train_final.csv header "
                                        f"(no 'status' column)")
    KEY[:] = header[:header.index("status")]  # driver/train_columns.def, as the file says it
    GROUP[:] = [k for k in KEY if k != "seed"]
    return {"dir": folder, "meta": run_folder.read_meta(folder),
            "curve": run_folder.read_rows(folder, "train.csv", _cell), "final": final,
            "attention": run_folder.read_rows(folder, "train_attention.csv", _cell)}


def _varying(rows, columns):
    return [c for c in columns if len({r[c] for r in rows}) > 1]


def _label(row, columns):
    def short(v):
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
    return " ".join(short(row[c]) if c in ("task", "scorer") else f"{c}={short(row[c])}" for c in columns)


def _groups(rows, columns):
    out = defaultdict(list)
    for r in rows:
        out[tuple(r[c] for c in columns)].append(r)
    return out


def _save(fig, out_dir, name, formats):
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for fmt in formats:
        path = os.path.join(out_dir, f"{name}.{fmt}")
        fig.savefig(path, format=fmt, metadata={"svg": {"Date": None}, "png": {"Software": None}}[fmt])
        paths.append(path)
    return paths


def curves_figure(run, out_dir, formats):
    rows = [r for r in run["curve"]]
    if not rows:
        return []
    tasks = sorted({r["task"] for r in rows})
    line_by = [c for c in _varying(rows, GROUP) if c != "task"] or ["scorer"]
    fig = Figure(figsize=(max(8.0, 4.0 * len(tasks)), 6.5))
    axes = fig.subplots(2, len(tasks), squeeze=False)
    for col, task in enumerate(tasks):
        for (key, group) in sorted(_groups([r for r in rows if r["task"] == task], line_by).items(), key=str):
            steps = sorted({r["step"] for r in group})
            for row_i, metric in enumerate(["token_acc", "align_acc"]):
                vals = [[r[metric] for r in group if r["step"] == s] for s in steps]
                mean = [statistics.fmean(v) for v in vals]
                ax = axes[row_i][col]
                line, = ax.plot(steps, mean, label=_label(group[0], line_by))
                ax.fill_between(steps, [min(v) for v in vals], [max(v) for v in vals], alpha=0.2,
                                color=line.get_color())
        axes[0][col].set_title(task)
        axes[0][col].set_ylabel("token_acc (teacher-forced)")
        axes[1][col].set_ylabel("align_acc")
        axes[1][col].set_xlabel("step")
        for r in range(2):
            axes[r][col].set_ylim(-0.02, 1.02)
        axes[0][col].legend(fontsize=7)
    fig.suptitle("learning curves: mean over seeds, band = min..max over seeds")
    return _save(fig, out_dir, "train_curves", formats)


def heatmaps_figure(run, out_dir, formats):
    rows = [r for r in run["attention"] if r["task"] in HEATMAP_TASKS]
    if not rows:
        return []
    panels = []
    for (task, scorer, attn), group in sorted(_groups(rows, ["task", "scorer", "attn_dim"]).items(), key=str):
        seed = min(r["seed"] for r in group)
        panels.append(((task, scorer, attn), [r for r in group if r["seed"] == seed]))
    ncols = min(5, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    fig = Figure(figsize=(max(8.0, 3.2 * ncols), 3.2 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, ((task, scorer, attn), cells) in enumerate(panels):
        ax = axes[i // ncols][i % ncols]
        T = int(max(r["t"] for r in cells)) + 1
        L = int(max(r["j"] for r in cells)) + 1
        w = np.zeros((T, L))
        src, tgt = [""] * L, [""] * T
        for r in cells:
            w[int(r["t"]), int(r["j"])] = r["weight"]
            src[int(r["j"])] = r["source"]
            tgt[int(r["t"])] = r["target"]
        ax.imshow(w, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(L), src, fontsize=6)
        ax.set_yticks(range(T), tgt, fontsize=6)
        ax.set_title(f"{task} {scorer} A={int(attn)}", fontsize=8)
        ax.grid(False)
    for j in range(len(panels), nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    fig.suptitle("trained attention on held-out example 0 (rows: outputs, EOS last; columns: source)")
    return _save(fig, out_dir, "train_heatmaps", formats)


def write_train_figures(run, out_dir, formats=("png", "svg")):
    return curves_figure(run, out_dir, formats) + heatmaps_figure(run, out_dir, formats)


def final_table(run):
    """Rows (configuration label, seeds, status summary, mean of each FINAL_METRICS) over seeds."""
    rows = run["final"]
    shown = _varying(rows, GROUP) or ["task", "scorer"]
    table = []
    for key, group in sorted(_groups(rows, shown).items(), key=str):
        ok = [r for r in group if r["status"] == "ok"]
        means = [statistics.fmean(r[m] for r in ok) if ok else float("nan") for m in FINAL_METRICS]
        spread = [(max(r[m] for r in ok) - min(r[m] for r in ok)) if len(ok) > 1 else 0.0 for m in FINAL_METRICS]
        table.append((_label(group[0], shown), len(group), len(group) - len(ok), means, spread))
    return table


def final_table_text(run):
    head = f"{'configuration':40s} {'seeds':>5s} {'diverged':>8s} " + " ".join(f"{m:>14s}" for m in FINAL_METRICS)
    lines = [head]
    for label, seeds, diverged, means, _ in final_table(run):
        lines.append(f"{label:40s} {seeds:5d} {diverged:8d} " + " ".join(f"{v:14.4g}" for v in means))
    return "\n".join(lines) + "\n"


def _pair_findings(run, a, b, split):
    """One sentence per (task, split value) where both scorers a and b trained."""
    rows = [r for r in run["final"] if r["status"] == "ok"]
    out = []
    for key, group in sorted(_groups(rows, ["task"] + split).items(), key=str):
        ra = [r for r in group if r["scorer"] == a]
        rb = [r for r in group if r["scorer"] == b]
        if not ra or not rb:
            continue
        def m(rs, metric):
            return statistics.fmean(r[metric] for r in rs)
        where = key[0] + "".join(f", {c} {int(v)}" for c, v in zip(split, key[1:]))
        out.append(f"{where}: seq_acc {a} {m(ra, 'seq_acc'):.3f} vs {b} {m(rb, 'seq_acc'):.3f}; "
                   f"align_acc {m(ra, 'align_acc'):.3f} vs {m(rb, 'align_acc'):.3f}; "
                   f"token_acc {m(ra, 'token_acc'):.3f} vs {m(rb, 'token_acc'):.3f}; "
                   f"seq_acc_long {m(ra, 'seq_acc_long'):.3f} vs {m(rb, 'seq_acc_long'):.3f} "
                   f"(means over {len(ra)} and {len(rb)} seeds)")
    return out


def findings_text(run):
    """The section "Does tanh matter? Does scaling matter?" as plain text, numbers from the run."""
    shards = run["meta"].get("merged_from") or []
    commands = [s.get("command", "?") for s in shards] or [run["meta"].get("command", "?")]
    lines = ["Does tanh matter? Does scaling matter?"]
    lines += [f"  measured by: {command}" for command in commands]
    if shards:
        lines.append(f"  merged by: attnbench merge of those {len(shards)} shards")
    lines.append(f"  run folder: {run['dir']}")
    tanh = _pair_findings(run, "additive", "additive_linear", [])
    scale = _pair_findings(run, "dot", "scaled_dot", ["attn_dim"])
    lines.append("  tanh (additive vs additive_linear):" if tanh else "  tanh: this run trains no additive/additive_linear pair")
    lines += ["    " + s for s in tanh]
    lines.append("  scaling (dot vs scaled_dot):" if scale else "  scaling: this run trains no dot/scaled_dot pair")
    lines += ["    " + s for s in scale]
    diverged = [r for r in run["final"] if r["status"] != "ok"]
    for r in diverged:
        lines.append(f"  {r['task']} {r['scorer']} attn_dim {int(r['attn_dim'])} seed {int(r['seed'])}: {r['status']}")
    return "\n".join(lines) + "\n"


def plot_main(run, out_dir, formats):
    """plot.py on a train folder: `run` is load_train_run's."""
    for path in write_train_figures(run, out_dir, formats):
        print(path)
    return 0


def report_main(run):
    """report.py on a train folder: `run` is load_train_run's."""
    folder = run["dir"]
    paths = write_train_figures(run, os.path.join(folder, "figures"), ("png", "svg"))
    text = final_table_text(run) + "\n" + findings_text(run)
    import base64
    import html
    imgs = "".join(
        f'<p><img alt="{html.escape(os.path.basename(p))}" src="data:image/png;base64,'
        f'{base64.b64encode(open(p, "rb").read()).decode()}"></p>' for p in paths if p.endswith(".png"))
    with open(os.path.join(folder, "report.html"), "w", encoding="utf-8") as f:
        f.write("<!doctype html><meta charset='utf-8'><title>attnbench train report</title>"
                f"<h1>attnbench train</h1><h2>Final table</h2><pre>{html.escape(final_table_text(run))}</pre>"
                f"<h2>Does tanh matter? Does scaling matter?</h2><pre>{html.escape(findings_text(run))}</pre>"
                f"<h2>Figures</h2>{imgs}")
    print(text, end="")
    return 0
