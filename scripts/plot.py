#!/usr/bin/python3
"""Figures from an `attnbench run` folder (also `attnbench plot RUN`).

Usage: plot.py RUN [--out DIR] [--attnbench BIN] [--format png,svg]

Reads RUN/timing.csv, samples.csv, entropy.csv and meta.json (results/README.md) and writes
one PNG and one SVG per figure into RUN/figures/ (or --out):

    step_vs_src_len        stage `step` and whole decode per step against source length, log-log
    time_vs_attn_dim       the same against attention size
    thread_scaling         speedup and efficiency of the most threads over the fewest, per stage
    entropy_vs_attn_dim    normalized entropy and softmax Jacobian norm against attention size
    drift                  step-to-step drift of the weights, per scorer and size
    score_std_vs_attn_dim  score standard deviation against attention size, with a sqrt reference
    cost_vs_entropy        ns per attention step against normalized entropy, one point per scorer x size
    impl_comparison        time of each other `impl` over the baseline one (runs with several impls)
    attention_heatmaps     T x L weights of one decode per scorer (`attnbench probe --steps T`)

A figure the run cannot support (a single src_len, a single thread count, ...) is skipped with
one line on stderr; the written files are printed on stdout, one a line. Exit 0, or 1 when a
figure failed (e.g. the probe), 2 on bad usage or an unreadable run folder.

Every PNG is FIGURE_PX pixels (FIGURE_SIZE_IN at DPI, no tight bounding box); output is
deterministic (Agg, a fixed svg.hashsalt, no dates in the files). Import it to reuse the
loader and the figure functions (scripts/report.py does): `load_run`, `write_figures`.
"""

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402  (after choosing the backend)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import run_folder  # noqa: E402  (scripts/lib/run_folder.py: committed rows, damage as file:line)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnbench_lists  # noqa: E402  (the binary's lists of scorers, stages and columns)
import train_figures  # noqa: E402  (scripts/, beside this file)

DPI = 100
FIGURE_SIZE_IN = (12.0, 6.0)
FIGURE_PX = (1200, 600)  # width, height in pixels of every PNG: FIGURE_SIZE_IN x DPI
FORMATS = ("png", "svg")

matplotlib.rcParams.update({
    "svg.hashsalt": "attnbench",   # fixed ids in SVGs: the same data gives the same bytes
    "svg.fonttype": "path",        # glyphs as paths: the SVG needs no font
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
})
SAVE_METADATA = {"svg": {"Date": None}, "png": {"Software": None}}

# The binary's lists (`attnbench list --json`, $ATTNBENCH_BINARY or build/attnbench).
KNOWN_SCORERS = attnbench_lists.scorer_names()
STAGES = attnbench_lists.stage_names()
SEQUENCE_STAGES = set(attnbench_lists.sequence_stages())  # timed once per sequence; ns_per_step = median / tgt_len
TIMING_KEY = attnbench_lists.key_columns(None, "timing.csv")
TIMING_POINT = [c for c in TIMING_KEY if c not in ("scorer", "stage")]   # a grid point, without scorer and stage
SIZES = [c for c in TIMING_POINT if c not in ("impl", "dtype", "threads")]
ENTROPY_POINT = [c for c in attnbench_lists.key_columns(None, "entropy.csv") if c != "scorer"]
# Columns whose every cell is a number: the Problem fields of kind int and the value columns
# with a unit. A damaged cell there is an error, never read as text.
NUMBER_COLUMNS = ({f["name"] for f in attnbench_lists.lists()["fields"] if f["type"] == "int"}
                  | {c for c, unit in attnbench_lists.lists()["units"].items() if unit})
SHORT = {"batch": "B", "src_len": "L", "tgt_len": "T", "emb_dim": "emb", "enc_dim": "E", "dec_dim": "D",
         "attn_dim": "A", "vocab": "V", "threads": "threads", "impl": "impl", "dtype": "dtype", "init": "init",
         "seed": "seed", "len_min": "len_min"}
MAX_DRIFT_SIZES = 12     # more sizes than this: the drift figure shows the src_len slice with the most values
MAX_POINT_LABELS = 40    # more points than this: the cost-entropy scatter has no size labels
HEATMAP_MAX_STEPS = 30
HEATMAP_MAX_SRC_LEN = 60


class Skip(Exception):
    """The run lacks what a figure needs; the message is the one-line reason."""


class FigureError(Exception):
    """A figure could not be made from a run that supports it (e.g. the probe failed)."""


# ----------------------------------------------------------------------------- loading

class Run:
    """One run folder, parsed.

    timing: the `ok` rows of timing.csv as dicts (sizes and counts int, times float, blank None);
    skipped: how many timing rows are not `ok`; samples: timing key tuple -> list of ns;
    entropy: the rows of entropy.csv; meta: meta.json; scorers: in the tool's order.
    """

    def __init__(self, folder, meta, timing_rows, sample_rows, entropy_rows):
        self.folder = folder
        self.meta = meta
        self.timing = [r for r in timing_rows if r.get("status") == "ok"]
        self.skipped = len(timing_rows) - len(self.timing)
        self.samples = defaultdict(list)
        for r in sample_rows:
            self.samples[tuple(r[c] for c in TIMING_KEY)].append(r["ns"])
        self.entropy = entropy_rows
        seen = [r["scorer"] for r in self.timing + self.entropy]
        known = [s for s in KNOWN_SCORERS if s in seen]
        self.scorers = known + sorted(set(seen) - set(known))
        impls = sorted({r["impl"] for r in self.timing})
        self.base_impl = "onednn" if "onednn" in impls else (impls[0] if impls else None)
        self.impls = impls

    def machine(self):
        """'CPU model (host)' from meta.json's build."""
        build = self.meta.get("build", {}) if isinstance(self.meta, dict) else {}
        return f"{build.get('cpu_model', 'unknown CPU')} ({build.get('host', 'unknown host')})"

    def date(self):
        """The run's start time, meta.json `start_utc`."""
        return str(self.meta.get("start_utc", "unknown date"))

    def base_timing(self, stage=None):
        """The `ok` timing rows of the baseline impl, optionally of one stage."""
        return [r for r in self.timing if r["impl"] == self.base_impl and (stage is None or r["stage"] == stage)]

    def sample_ns(self, row):
        """Raw repetition times of a timing row per decode step (sequence stages divided by tgt_len);
        the row's median when samples.csv lacks it."""
        values = self.samples.get(tuple(row[c] for c in TIMING_KEY)) or [row["median_ns"]]
        if row["stage"] in SEQUENCE_STAGES:
            return [v / row["tgt_len"] for v in values]
        return list(values)

    def first_point(self):
        """The first planned grid point (meta.json `grid`) as a dict of ints/strings, else the first timing row."""
        grid = self.meta.get("grid") if isinstance(self.meta, dict) else None
        if grid:
            return {k: parse_cell(k, v) for k, v in grid[0].items() if not isinstance(v, list)}  # not scorers, stages
        if self.timing:
            return dict(self.timing[0])
        if self.entropy:
            return dict(self.entropy[0])
        return None


WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def parse_cell(column, text):
    """One CSV cell by what it holds: a whole number written without a point or exponent -> int
    (sizes, counts), another number -> float, anything else -> str; '' -> None. A cell of a
    NUMBER_COLUMNS column that is not a number raises ValueError naming the bad text, so that a
    damaged number is never read as text."""
    if isinstance(text, (int, float)):
        return text
    if text == "":
        return None
    if WHOLE_NUMBER.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        if column in NUMBER_COLUMNS:
            raise ValueError(f"not a number '{text[:40]}'") from None
        return text


def read_csv(folder, name):
    """The committed rows of RUN/NAME as dicts of parsed cells; [] when the file is missing.
    Raises run_folder.RunFolderError ("file:line: reason") for a damaged file."""
    return run_folder.read_rows(folder, name, parse_cell)


def load_run(folder):
    """Parses a run folder; raises run_folder.RunFolderError ("file:line: reason", a ValueError)
    or OSError when meta.json or timing.csv is unreadable or damaged."""
    meta = run_folder.read_meta(folder)
    if not os.path.exists(os.path.join(folder, "timing.csv")):
        raise OSError(f"{folder}: no timing.csv")
    return Run(folder, meta, read_csv(folder, "timing.csv"), read_csv(folder, "samples.csv"),
               read_csv(folder, "entropy.csv"))


# ----------------------------------------------------------------------------- helpers

def best_slice(rows, vary, point_columns):
    """Rows that differ only in `vary` (and scorer/stage): groups rows by the other point columns and
    returns (fixed, rows) for the group with the most distinct `vary` values; ties go to the fewest
    threads, then the largest sizes. `fixed` maps the other columns to their values. ({}, []) if no rows."""
    others = [c for c in point_columns if c != vary]
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r.get(c) for c in others)].append(r)
    if not groups:
        return {}, []

    def rank(item):
        key, members = item
        fixed = dict(zip(others, key))
        sizes = tuple(fixed[c] for c in others if isinstance(fixed[c], int) and c != "threads")
        return (len({m[vary] for m in members}), -(fixed.get("threads") or 0), sizes)

    key, members = max(groups.items(), key=rank)
    return dict(zip(others, key)), members


def describe(fixed, skip=()):
    """'B 32, T 10, ..., 1 thread' for the fixed columns of a slice."""
    parts = []
    for column, value in fixed.items():
        if column in skip or value is None:
            continue
        if column == "threads":
            parts.append(f"{value} thread" + ("s" if value != 1 else ""))
        else:
            parts.append(f"{SHORT.get(column, column)} {value}")
    return ", ".join(parts)


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def scorer_color(run, scorer):
    """A fixed colour per scorer: its place in the tool's order picks a tab10 colour."""
    order = KNOWN_SCORERS + [s for s in run.scorers if s not in KNOWN_SCORERS]
    return matplotlib.colormaps["tab10"](order.index(scorer) % 10)


def new_figure(run, title, ncols=1, nrows=1, fixed=None):
    """A FIGURE_SIZE_IN figure with a grid of axes and a title naming the machine and the run date
    (and, given `fixed`, the sizes the figure holds fixed)."""
    fig = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    lines = [title, f"{run.machine()}, run started {run.date()}"]
    if fixed:
        lines.append(f"at {fixed}")
    fig.suptitle("\n".join(lines), fontsize=11)
    return fig, [ax for row in axes for ax in row]


def log_ticks(ax, axis="y"):
    """Labels a log axis with plain numbers at 1-2-5 steps (1..9 when that gives fewer than 3 ticks)
    inside its current limits, so that an axis spanning less than a decade still has labels."""
    get_lim, set_ticks, set_lim = ((ax.get_ylim, ax.set_yticks, ax.set_ylim) if axis == "y"
                                   else (ax.get_xlim, ax.set_xticks, ax.set_xlim))
    lo, hi = get_lim()
    if not (lo > 0 and hi > lo):
        return
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    for mantissas in ((1, 2, 5), range(1, 10)):
        ticks = [m * 10.0 ** d for d in decades for m in mantissas if lo <= m * 10.0 ** d <= hi]
        if len(ticks) >= 3:
            break
    set_ticks(ticks, [f"{t:g}" for t in ticks])
    (ax.yaxis if axis == "y" else ax.xaxis).set_minor_formatter(matplotlib.ticker.NullFormatter())
    set_lim(lo, hi)


def distinct(rows, column):
    return sorted({r[column] for r in rows if r.get(column) is not None})


def skip_unless_several(rows, column):
    """The sorted distinct values of `column`; raises Skip when there are fewer than two."""
    values = distinct(rows, column)
    if not values:
        raise Skip("the run has no measured rows")
    if len(values) < 2:
        raise Skip(f"the run has a single {column} ({values[0]})")
    return values


def band_axes(ax, run, rows, vary, stage, ylabel):
    """Draws, per scorer, the median of the repetitions of `stage` against `vary` with a min-max band."""
    for scorer in run.scorers:
        mine = sorted((r for r in rows if r["scorer"] == scorer and r["stage"] == stage), key=lambda r: r[vary])
        if not mine:
            continue
        xs = [r[vary] for r in mine]
        ns = [run.sample_ns(r) for r in mine]
        color = scorer_color(run, scorer)
        ax.fill_between(xs, [min(v) for v in ns], [max(v) for v in ns], color=color, alpha=0.2, linewidth=0)
        ax.plot(xs, [statistics.median(v) for v in ns], marker="o", markersize=4, color=color, label=scorer)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    log_ticks(ax, "y")


def time_against(run, vary, xlabel, title):
    """Two panels against `vary`: stage `step` per call and the whole decode per step, with the spread."""
    fixed, rows = best_slice(run.base_timing(), vary, TIMING_POINT)
    values = skip_unless_several(rows, vary)
    fig, (left, right) = new_figure(run, title, ncols=2, fixed=describe(fixed))
    band_axes(left, run, rows, vary, "step", "time per call (ns)")
    left.set_title("stage step: score + masked softmax + context")
    band_axes(right, run, rows, vary, "decode", "time per decode step (ns)")
    right.set_title("stage decode: keys + every step (score, attend, cell, output) / tgt_len")
    for ax in (left, right):
        ax.set_xlabel(xlabel)
        ax.set_xticks(values, [str(v) for v in values])
        ax.minorticks_off()
    caption = (f"Median of {run.meta.get('repetitions', '?')} repetitions (line) and their min-max range "
               f"(band) at {describe(fixed)}; impl {run.base_impl}.")
    return fig, caption


# ----------------------------------------------------------------------------- figures

def fig_step_vs_src_len(run):
    """Step and decode-per-step time against source length, per scorer, log-log, with the repetitions'
    min-max band. Skip when the run has a single src_len."""
    return time_against(run, "src_len", "source length L (positions)", "Time per decode step against source length")


def fig_time_vs_attn_dim(run):
    """Step and decode-per-step time against attention size, per scorer, log-log, with the repetitions'
    min-max band. Skip when the run has a single attn_dim."""
    return time_against(run, "attn_dim", "attention size A (units)", "Time per decode step against attention size")


def thread_speedups(run):
    """(t_lo, t_hi, {(scorer, stage): [speedup per point]}): median time at the fewest threads over the
    median at the most, for every point measured at both. Raises Skip with a single thread count."""
    rows = run.base_timing()
    threads = skip_unless_several(rows, "threads")
    lo, hi = threads[0], threads[-1]
    by_key = {tuple(r[c] for c in TIMING_KEY if c != "threads"): r for r in rows if r["threads"] == hi}
    speedups = defaultdict(list)
    for r in rows:
        if r["threads"] != lo:
            continue
        other = by_key.get(tuple(r[c] for c in TIMING_KEY if c != "threads"))
        if other and other["median_ns"]:
            speedups[(r["scorer"], r["stage"])].append(r["median_ns"] / other["median_ns"])
    if not speedups:
        raise Skip(f"no point was measured at both {lo} and {hi} threads")
    return lo, hi, speedups


def grouped_bars(ax, run, groups, value_of):
    """One group of bars per entry of `groups`, one bar per scorer; value_of(scorer, group) or None."""
    scorers = run.scorers
    width = 0.8 / max(len(scorers), 1)
    for k, scorer in enumerate(scorers):
        xs, ys = [], []
        for g, group in enumerate(groups):
            value = value_of(scorer, group)
            if value is not None and not math.isnan(value):
                xs.append(g - 0.4 + width * (k + 0.5))
                ys.append(value)
        ax.bar(xs, ys, width=width, color=scorer_color(run, scorer), label=scorer)
    ax.set_xticks(range(len(groups)), groups)
    ax.legend(fontsize=8)


def fig_thread_scaling(run):
    """Speedup t(fewest threads) / t(most threads) per scorer and stage (geometric mean over the points
    measured at both) and efficiency = speedup / thread ratio. Skip with a single thread count."""
    lo, hi, speedups = thread_speedups(run)
    stages = [s for s in STAGES if any(st == s for (_, st) in speedups)]
    ratio = hi / lo
    fig, (left, right) = new_figure(run, f"Thread scaling: {hi} threads against {lo}", ncols=2)

    def speedup(scorer, stage):
        return geomean(speedups[(scorer, stage)]) if speedups.get((scorer, stage)) else None

    grouped_bars(left, run, stages, speedup)
    left.axhline(ratio, color="black", linestyle="--", linewidth=1)
    left.axhline(1.0, color="grey", linewidth=0.8)
    values = [v for v in (speedup(sc, st) for sc in run.scorers for st in stages) if v] + [1.0, ratio]
    if max(values) / min(values) > 10:
        left.set_yscale("log")  # a spread over decades: bars on a linear axis would hide the small ones
        left.set_ylim(min(values) / 1.5, max(values) * 1.5)
        log_ticks(left, "y")
    left.set_ylabel(f"speedup t({lo}) / t({hi}) (x)")
    left.set_title(f"speedup (dashed: ideal {ratio:g}x)")
    grouped_bars(right, run, stages, lambda sc, st: None if speedup(sc, st) is None else speedup(sc, st) / ratio)
    right.axhline(1.0, color="black", linestyle="--", linewidth=1)
    right.set_ylabel(f"efficiency = speedup / {ratio:g} (fraction)")
    right.set_title("parallel efficiency (dashed: ideal)")
    for ax in (left, right):
        ax.set_xlabel("stage")
    n = max(len(v) for v in speedups.values())
    caption = (f"Ratio of median times at {lo} and {hi} threads per scorer and stage, geometric mean over "
               f"the (up to {n}) points measured at both; impl {run.base_impl}.")
    return fig, caption


def entropy_slice(run):
    """(fixed, rows, attn_dims) of the entropy rows that vary only in attn_dim; Skip with a single attn_dim."""
    fixed, rows = best_slice(run.entropy, "attn_dim", ENTROPY_POINT)
    values = skip_unless_several(rows, "attn_dim")
    return fixed, rows, values


def metric_lines(ax, run, rows, metric, ylabel):
    """One line per scorer: `metric` of the entropy rows against attn_dim."""
    for scorer in run.scorers:
        mine = sorted((r for r in rows if r["scorer"] == scorer), key=lambda r: r["attn_dim"])
        if mine:
            ax.plot([r["attn_dim"] for r in mine], [r[metric] for r in mine], marker="o", markersize=4,
                    color=scorer_color(run, scorer), label=scorer)
    ax.set_xscale("log")
    ax.set_xlabel("attention size A (units)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def fig_entropy_vs_attn_dim(run):
    """Normalized entropy H / ln L and the softmax Jacobian's Frobenius norm against attention size, per
    scorer (means over the traced decode). Skip with a single attn_dim."""
    fixed, rows, values = entropy_slice(run)
    fig, (left, right) = new_figure(run, "Attention shape against attention size", ncols=2, fixed=describe(fixed))
    metric_lines(left, run, rows, "entropy_norm_mean", "normalized entropy H / ln L (1 = uniform)")
    left.set_title("normalized entropy of the weights")
    metric_lines(right, run, rows, "jacobian_fro_mean", "||diag(a) - a a^T||_F (dimensionless)")
    right.set_title("softmax Jacobian Frobenius norm")
    for ax in (left, right):
        ax.set_xticks(values, [str(v) for v in values])
        ax.minorticks_off()
    caption = f"Means over every decode step and example of one traced decode at {describe(fixed)}."
    return fig, caption


def size_label(row, varying):
    return " ".join(f"{SHORT.get(c, c)}={row[c]}" for c in varying) or "the run's size"


def fig_drift(run):
    """Mean step-to-step drift 0.5 sum |a_t - a_{t-1}| per scorer, one bar per size of the run (beyond
    MAX_DRIFT_SIZES sizes: those of the src_len slice with the most values); scorers whose drift is
    exactly 0 at every size are marked. Skip when entropy.csv is empty."""
    if not run.entropy:
        raise Skip("the run has no entropy rows")
    rows = run.entropy
    points = sorted({tuple(r[c] for c in ENTROPY_POINT) for r in rows})
    if len(points) > MAX_DRIFT_SIZES:
        _, rows = best_slice(rows, "src_len", ENTROPY_POINT)
        points = sorted({tuple(r[c] for c in ENTROPY_POINT) for r in rows})[:MAX_DRIFT_SIZES]
    varying = [c for c in ENTROPY_POINT if len(distinct(rows, c)) > 1]
    cmap = matplotlib.colormaps["viridis"]
    fig, (ax,) = new_figure(run, "Step-to-step drift of the attention weights")
    width = 0.8 / len(points)
    values = {(r["scorer"], tuple(r[c] for c in ENTROPY_POINT)): r["drift_mean"] for r in rows}
    for k, point in enumerate(points):
        xs, ys = [], []
        for g, scorer in enumerate(run.scorers):
            if (scorer, point) in values:
                xs.append(g - 0.4 + width * (k + 0.5))
                ys.append(values[(scorer, point)])
        label = size_label(dict(zip(ENTROPY_POINT, point)), varying)
        ax.bar(xs, ys, width=width, color=cmap(k / max(len(points) - 1, 1) * 0.9), label=label)
    for g, scorer in enumerate(run.scorers):
        mine = [v for (s, _), v in values.items() if s == scorer]
        if mine and all(v == 0 for v in mine):
            ax.annotate("exactly 0 (static)", (g, 0), xytext=(0, 6), textcoords="offset points", ha="center",
                        fontsize=8)
    ax.set_xticks(range(len(run.scorers)), run.scorers)
    ax.set_xlabel("scorer")
    ax.set_ylabel("mean drift 0.5 sum_j |a_tj - a_(t-1)j| (fraction of mass)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, ncol=max(1, math.ceil(len(points) / 8)), title="size")
    fixed = {c: rows[0][c] for c in ENTROPY_POINT if c not in varying}
    caption = (f"Total variation between consecutive weight vectors of one example, averaged over the decode; "
               f"{describe(fixed)}.")
    return fig, caption


def power_fit(xs, ys):
    """Exponent k of ys ~ c xs^k by least squares in log-log; nan with fewer than 2 positive points."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x and y and x > 0 and y > 0]
    if len(pts) < 2 or len({p[0] for p in pts}) < 2:
        return float("nan")
    return float(np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1)[0])


def fig_score_std_vs_attn_dim(run):
    """Score standard deviation against attention size, log-log, per scorer (legend: fitted exponent),
    with a c sqrt(A) reference through dot's points (or the first scorer's). Skip with a single attn_dim."""
    fixed, rows, values = entropy_slice(run)
    fig, (ax,) = new_figure(run, "Score standard deviation against attention size", fixed=describe(fixed))
    anchor = None
    for scorer in run.scorers:
        mine = sorted((r for r in rows if r["scorer"] == scorer), key=lambda r: r["attn_dim"])
        if not mine:
            continue
        xs, ys = [r["attn_dim"] for r in mine], [r["score_std_mean"] for r in mine]
        k = power_fit(xs, ys)
        label = f"{scorer} (slope {k:.2f})" if not math.isnan(k) else scorer
        ax.plot(xs, ys, marker="o", markersize=4, color=scorer_color(run, scorer), label=label)
        if anchor is None or (scorer == "dot" and len(xs) >= 2):
            anchor = (xs, ys)
    if anchor:
        pts = [(x, y) for x, y in zip(*anchor) if y > 0]
        if pts:
            c = geomean([y / math.sqrt(x) for x, y in pts])
            ref = np.geomspace(values[0], values[-1], 50)
            ax.plot(ref, c * np.sqrt(ref), color="black", linestyle="--", linewidth=1, label="c sqrt(A) reference")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(values, [str(v) for v in values])
    ax.minorticks_off()
    ax.set_xlabel("attention size A (units)")
    ax.set_ylabel("std of a row's valid scores (score units)")
    ax.legend(fontsize=8)
    log_ticks(ax, "y")
    caption = (f"Population standard deviation of the scores of a row, averaged over one traced decode at "
               f"{describe(fixed)}; slope = least-squares exponent in log-log (sqrt: 0.5).")
    return fig, caption


def cost_entropy_points(run):
    """[(scorer, entropy row, step ns)]: each entropy row with the median `step` time of its point at the
    fewest threads (median over timing rows that match it, e.g. several vocab sizes)."""
    step = run.base_timing("step")
    if not step:
        return []
    lo = min(r["threads"] for r in step)
    common = [c for c in attnbench_lists.key_columns(None, "entropy.csv") if c in TIMING_KEY]
    times = defaultdict(list)
    for r in step:
        if r["threads"] == lo:
            times[tuple(r[c] for c in common)].append(r["median_ns"])
    out = []
    for e in run.entropy:
        ns = times.get(tuple(e[c] for c in common))
        if ns:
            out.append((e["scorer"], e, statistics.median(ns)))
    return out


def fig_cost_vs_entropy(run):
    """Cost against sharpness: x = ns per attention step (stage `step`, fewest threads), y = normalized
    entropy, one point per scorer and size. Skip when no entropy row has a timing."""
    points = cost_entropy_points(run)
    if not points:
        raise Skip("no entropy row has a matching `step` timing")
    varying = [c for c in ENTROPY_POINT if len(distinct(run.entropy, c)) > 1]
    fig, (ax,) = new_figure(run, "Cost against entropy: what each scorer pays for how sharp its attention is")
    for scorer in run.scorers:
        mine = [(e, ns) for s, e, ns in points if s == scorer]
        if not mine:
            continue
        ax.scatter([ns for _, ns in mine], [e["entropy_norm_mean"] for e, _ in mine], color=scorer_color(run, scorer),
                   label=scorer, s=30, zorder=3)
        if varying and len(points) <= MAX_POINT_LABELS:
            for e, ns in mine:
                ax.annotate(size_label(e, varying), (ns, e["entropy_norm_mean"]), xytext=(4, 3),
                            textcoords="offset points", fontsize=6, color="dimgray")
    ax.set_xscale("log")
    log_ticks(ax, "x")
    ax.set_xlabel("time of one attention step, stage step (ns, log)")
    ax.set_ylabel("normalized entropy H / ln L (1 = uniform)")
    ax.legend(fontsize=8)
    lo = min(r["threads"] for r in run.base_timing("step"))
    caption = (f"One point per scorer and size (labels: the sizes that vary); time at {lo} thread(s), median of "
               f"the repetitions; entropy from one traced decode.")
    return fig, caption


def fig_impl_comparison(run):
    """Median time of each other `impl` over the baseline impl, per scorer and stage (geometric mean over
    the points both measured). Skip when the run has a single impl."""
    if len(run.impls) < 2:
        raise Skip(f"the run has a single impl ({', '.join(run.impls) or 'none'})")
    others = [i for i in run.impls if i != run.base_impl]
    base = {tuple(r[c] for c in TIMING_KEY if c != "impl"): r for r in run.base_timing()}
    fig, axes = new_figure(run, f"Implementations against {run.base_impl}", ncols=len(others))
    for ax, impl in zip(axes, others):
        ratios = defaultdict(list)
        for r in run.timing:
            b = base.get(tuple(r[c] for c in TIMING_KEY if c != "impl"))
            if r["impl"] == impl and b and b["median_ns"]:
                ratios[(r["scorer"], r["stage"])].append(r["median_ns"] / b["median_ns"])
        stages = [s for s in STAGES if any(st == s for (_, st) in ratios)]
        grouped_bars(ax, run, stages, lambda sc, st: geomean(ratios[(sc, st)]) if ratios.get((sc, st)) else None)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_xlabel("stage")
        ax.set_ylabel(f"time {impl} / time {run.base_impl} (x)")
        ax.set_title(f"{impl} (above 1: slower than {run.base_impl})")
    caption = "Ratio of median times per scorer and stage, geometric mean over the points measured by both impls."
    return fig, caption


def heatmap_problem(run):
    """The probe sizes for the heatmaps: the run's first point, batch 1, T <= HEATMAP_MAX_STEPS decode
    steps and L <= HEATMAP_MAX_SRC_LEN source positions."""
    point = run.first_point()
    if not point:
        raise Skip("the run has no point")
    sizes = {"batch": 1, "src_len": min(int(point.get("src_len") or 10), HEATMAP_MAX_SRC_LEN)}
    sizes.update({c: point[c] for c in ["emb_dim", "enc_dim", "dec_dim", "attn_dim", "vocab"] if point.get(c)})
    sizes["seed"] = int(point.get("seed") or 0)
    steps = min(int(point.get("tgt_len") or 5), HEATMAP_MAX_STEPS)
    return sizes, steps


def probe_weights(attnbench, scorer, sizes, steps):
    """Runs `attnbench probe --steps T --init torch` and returns example 0's T x L weights (numpy).
    Raises FigureError when the probe fails or prints no weights."""
    command = [attnbench, "probe", "--steps", str(steps), "--scorer", scorer, "--init", "torch"]
    for column, value in sizes.items():
        command += ["--" + column.replace("_", "-"), str(value)]
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise FigureError(f"{' '.join(command)}: {error}")
    if done.returncode != 0:
        raise FigureError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    weights = np.zeros((steps, sizes["src_len"]))
    found = False
    for line in done.stdout.splitlines():
        if line.startswith("weights,"):
            _, t, b, i, value = line.split(",")
            if b == "0":
                weights[int(t) - 1, int(i)] = float(value)
                found = True
    if not found:
        raise FigureError(f"{' '.join(command)}: printed no weights rows")
    return weights


def fig_attention_heatmaps(run, attnbench):
    """One panel per scorer: the T x L attention weights of example 0 (decode step on y, source position
    on x) from `attnbench probe --steps T --init torch` at the run's first point, one shared colour scale.
    Skip when no binary is given; FigureError when a probe fails."""
    if not attnbench or not os.access(attnbench, os.X_OK):
        raise Skip(f"no attnbench binary (--attnbench {attnbench or 'not given'})")
    if not run.scorers:
        raise Skip("the run has no scorer")
    sizes, steps = heatmap_problem(run)
    workers = max(1, min(len(run.scorers), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        matrices = list(pool.map(lambda s: probe_weights(attnbench, s, sizes, steps), run.scorers))
    vmax = max(float(m.max()) for m in matrices) or 1.0
    shown = describe({k: v for k, v in sizes.items() if k != "batch"})
    fig, axes = new_figure(run, "Attention weights of one decode (untrained parameters, PyTorch init)",
                           ncols=len(run.scorers), fixed=f"example 0, {steps} decode steps, {shown}")
    image = None
    for ax, scorer, weights in zip(axes, run.scorers, matrices):
        image = ax.imshow(weights, aspect="auto", cmap="gray", vmin=0.0, vmax=vmax, interpolation="nearest",
                          extent=(-0.5, weights.shape[1] - 0.5, weights.shape[0] + 0.5, 0.5))  # steps from 1
        ax.set_title(scorer)
        ax.set_xlabel("source position j")
        ax.grid(False)
    axes[0].set_ylabel("decode step t")
    fig.colorbar(image, ax=axes, label="attention weight a_tj (white = largest)", shrink=0.9)
    caption = (f"Example 0 of `attnbench probe --steps {steps} --init torch` (batch 1, "
               f"{describe({k: v for k, v in sizes.items() if k != 'batch'})}), like Figure 3 of Bahdanau et al. "
               f"2014; one colour scale for all panels, 0 to {vmax:.3g}.")
    return fig, caption


FIGURES = [
    ("step_vs_src_len", fig_step_vs_src_len),
    ("time_vs_attn_dim", fig_time_vs_attn_dim),
    ("thread_scaling", fig_thread_scaling),
    ("entropy_vs_attn_dim", fig_entropy_vs_attn_dim),
    ("drift", fig_drift),
    ("score_std_vs_attn_dim", fig_score_std_vs_attn_dim),
    ("cost_vs_entropy", fig_cost_vs_entropy),
    ("impl_comparison", fig_impl_comparison),
    ("attention_heatmaps", None),  # needs the binary: fig_attention_heatmaps(run, attnbench)
]


# ----------------------------------------------------------------------------- writing

class Written:
    """A figure on disk: name, caption and paths by format ('png' -> '.../name.png')."""

    def __init__(self, name, caption, paths):
        self.name = name
        self.caption = caption
        self.paths = paths


def save(fig, out_dir, name, formats):
    """Saves `fig` as out_dir/name.<format> for each format, deterministically; returns {format: path}."""
    paths = {}
    for fmt in formats:
        path = os.path.join(out_dir, f"{name}.{fmt}")
        fig.savefig(path, format=fmt, dpi=DPI, metadata=SAVE_METADATA.get(fmt))
        paths[fmt] = path
    return paths


def write_figures(run, out_dir, formats=FORMATS, attnbench=None):
    """Makes every figure the run supports into out_dir (created). Returns (written, notes, errors):
    a list of Written, one-line reasons for skipped figures, one-line messages for failed ones."""
    os.makedirs(out_dir, exist_ok=True)
    written, notes, errors = [], [], []
    for name, fn in FIGURES:
        try:
            fig, caption = fig_attention_heatmaps(run, attnbench) if fn is None else fn(run)
        except Skip as skip:
            notes.append(f"skipped {name}: {skip}")
            continue
        except FigureError as error:
            errors.append(f"{name} failed: {error}")
            continue
        written.append(Written(name, caption, save(fig, out_dir, name, formats)))
    return written, notes, errors


def default_attnbench():
    """build/attnbench beside this script's repository, if it exists."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "attnbench")
    return os.path.normpath(path) if os.access(path, os.X_OK) else None


def main(argv):
    parser = argparse.ArgumentParser(prog="plot.py", description="Figures (PNG, SVG) from an attnbench run folder.")
    parser.add_argument("run", help="run folder (timing.csv, samples.csv, entropy.csv, meta.json)")
    parser.add_argument("--out", help="folder for the figures (default RUN/figures)")
    parser.add_argument("--attnbench", help="the attnbench binary, for the heatmaps' probes (default build/attnbench)")
    parser.add_argument("--format", default=",".join(FORMATS), help="comma list of png, svg (default png,svg)")
    args = parser.parse_args(argv[1:])
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        print(f"plot.py: --format: bad value '{args.format}': expected a comma list of png, svg", file=sys.stderr)
        return 2
    train = train_figures.is_train_run(args.run)  # an `attnbench train` folder: its own figures
    try:
        run = train_figures.load_train_run(args.run) if train else load_run(args.run)
    except (OSError, ValueError, KeyError) as error:
        print(f"plot.py: {error}" if isinstance(error, run_folder.RunFolderError)
              else f"plot.py: cannot read run folder {args.run}: {error}", file=sys.stderr)
        return 2
    if train:
        return train_figures.plot_main(run, args.out or os.path.join(args.run, "figures"), formats)
    try:
        written, notes, errors = write_figures(run, args.out or os.path.join(args.run, "figures"), formats,
                                               args.attnbench or default_attnbench())
    except OSError as error:
        print(f"plot.py: cannot write the figures: {error}", file=sys.stderr)
        return 1
    for note in notes:
        print(note, file=sys.stderr)
    for error in errors:
        print(f"plot.py: {error}", file=sys.stderr)
    for w in written:
        for path in w.paths.values():
            print(path)
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, AttributeError) as error:
        # Values that parse but do not fit together (a hand-edited or foreign folder): one line, never a traceback.
        print(f"plot.py: {sys.argv[1] if len(sys.argv) > 1 else 'RUN'}: the run's values do not fit together "
              f"({type(error).__name__}: {error})", file=sys.stderr)
        sys.exit(2)
