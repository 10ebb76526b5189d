#!/usr/bin/python3
"""One self-contained HTML report of an `attnbench run` folder (also `attnbench report RUN`).

Usage: report.py RUN [--attnbench BIN]

Draws the figures with scripts/plot.py (into RUN/figures/) and writes RUN/report.html: the machine
and build, the command, date, status and warnings, the summary tables, every figure (embedded as a
base64 PNG data URI) with its caption, and the Findings, computed from the run's numbers:

    (a) removing tanh: drift, max weight and entropy of additive_linear against additive;
    (b) dot against scaled_dot as attn_dim grows: entropy, softmax Jacobian, score std, and the
        fitted exponent of dot's score std against attn_dim (sqrt: 0.5);
    (c) additive against dot: ratio of their step times across attn_dim and src_len, and its maximum;
    (d) attention's share of one decode step: step ns / decode ns per step, per scorer, at the largest point.

A finding whose dimension the run lacks says "not measured in this run". The file needs nothing
else: no external CSS, scripts, fonts or images. The findings are also printed on stdout as plain
text; the report's path goes to stderr. Exit 0, 1 when a figure failed (the report is still
written), 2 on bad usage or an unreadable run folder.
"""

import argparse
import base64
import html
import math
import os
import statistics
import sys
import textwrap
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (scripts/plot.py, beside this file)
import train_figures  # noqa: E402  (scripts/train_figures.py)

NOT_MEASURED = "not measured in this run"


class Table:
    """A table for the report and the plain-text findings: header and rows of strings."""

    def __init__(self, header, rows, note=""):
        self.header = header
        self.rows = rows
        self.note = note


class Finding:
    """One measured claim: a key like '(a)', a title, sentences stating the numbers, an optional table and
    the names of the figures that show it."""

    def __init__(self, key, title, sentences, table=None, figures=()):
        self.key = key
        self.title = title
        self.sentences = sentences
        self.table = table
        self.figures = figures

    def text(self):
        return " ".join(self.sentences)


# ----------------------------------------------------------------------------- formatting

def num(value, digits=4):
    """A number with `digits` significant digits ('-' for None or nan)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}"


def micro(ns):
    """ns as microseconds with 3 significant digits, e.g. '12.3 µs'."""
    return "-" if ns is None else f"{ns / 1000:.3g} µs"


def percent(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def span(values, fmt=num):
    """'a' or 'a to b' for the smallest and largest of values."""
    lo, hi = fmt(min(values)), fmt(max(values))
    return lo if lo == hi else f"{lo} to {hi}"


def point_label(row, columns):
    """'L=50 A=128' for the given columns of a row; the empty string when there are none."""
    return " ".join(f"{plot.SHORT.get(c, c)}={row[c]}" for c in columns)


def varying(rows, columns):
    return [c for c in columns if len(plot.distinct(rows, c)) > 1]


# ----------------------------------------------------------------------------- findings

def entropy_point(row):
    return tuple(row[c] for c in plot.ENTROPY_POINT)


def finding_tanh(run):
    """(a) additive_linear (no tanh) against additive at every entropy point both have: drift, max weight,
    normalized entropy."""
    title = "Removing tanh (additive_linear against additive)"
    add = {entropy_point(e): e for e in run.entropy if e["scorer"] == "additive"}
    lin = {entropy_point(e): e for e in run.entropy if e["scorer"] == "additive_linear"}
    common = sorted(set(add) & set(lin))
    if not common:
        return Finding("(a)", title, [f"Not measured in this run: it needs both additive and additive_linear "
                                      f"(the run has {', '.join(run.scorers) or 'no scorer'})."])
    rows = [add[p] for p in common]
    cols = varying(rows, plot.ENTROPY_POINT)
    fixed = plot.describe({c: rows[0][c] for c in plot.ENTROPY_POINT if c not in cols})
    drift_lin = [lin[p]["drift_mean"] for p in common]
    drift_add = [add[p]["drift_mean"] for p in common]
    mw_lin = [lin[p]["max_weight_mean"] for p in common]
    mw_add = [add[p]["max_weight_mean"] for p in common]
    h_lin = [lin[p]["entropy_norm_mean"] for p in common]
    h_add = [add[p]["entropy_norm_mean"] for p in common]
    n = len(common)
    where = f"At {n} size{'s' if n > 1 else ''} ({fixed})"
    sentences = []
    if all(d == 0 for d in drift_lin):
        sentences.append(f"{where}, additive_linear's step-to-step drift is exactly 0 at every size "
                         f"(so at every decode step: its alignment is static), while additive's mean drift is "
                         f"{span(drift_add)}.")
    else:
        worst = max(range(n), key=lambda k: drift_lin[k])
        sentences.append(f"{where}, additive_linear's drift is NOT 0: up to {num(drift_lin[worst])} "
                         f"({point_label(lin[common[worst]], cols) or 'the run size'}); additive's is "
                         f"{span(drift_add)}.")
    peakier = sum(1 for a, b in zip(mw_lin, mw_add) if a > b)
    ratios = [a / b for a, b in zip(mw_lin, mw_add) if b]
    sentences.append(f"Mean max weight: additive_linear {span(mw_lin)} against additive {span(mw_add)}; "
                     f"without tanh the weights are peakier at {peakier} of {n} sizes "
                     f"(ratio {span(ratios, lambda x: f'{x:.3g}x')}).")
    lower = sum(1 for a, b in zip(h_lin, h_add) if a < b)
    sentences.append(f"Normalized entropy H/ln L: additive_linear {span(h_lin)} against additive {span(h_add)} "
                     f"(lower without tanh at {lower} of {n} sizes).")
    def pair(p, metric, digits=4):
        return f"{num(add[p][metric], digits)} / {num(lin[p][metric], digits)}"

    table = Table(["size", "drift", "max weight", "H/ln L"],
                  [[point_label(add[p], cols) or "run size", pair(p, "drift_mean"), pair(p, "max_weight_mean"),
                    pair(p, "entropy_norm_mean", 5)] for p in common],
                  "Each cell: additive / additive_linear.")
    return Finding("(a)", title, sentences, table, figures=("drift", "attention_heatmaps"))


def finding_dot_scaling(run):
    """(b) dot and scaled_dot against attn_dim in the entropy slice that has the most attn_dims: entropy,
    Jacobian, score std per attn_dim, and the fitted score-std exponents."""
    title = "Unscaled dot against scaled_dot as attn_dim grows"
    rows = [e for e in run.entropy if e["scorer"] in ("dot", "scaled_dot")]
    if not any(e["scorer"] == "dot" for e in rows):
        return Finding("(b)", title, [f"Not measured in this run: it needs the dot scorer "
                                      f"(the run has {', '.join(run.scorers) or 'no scorer'})."])
    fixed, rows = plot.best_slice(rows, "attn_dim", plot.ENTROPY_POINT)
    dims = plot.distinct(rows, "attn_dim")
    if len(dims) < 2:
        return Finding("(b)", title, [f"Not measured in this run: a single attn_dim ({dims[0]}); the collapse of "
                                      f"dot's entropy needs several."])
    by = {(e["scorer"], e["attn_dim"]): e for e in rows}
    sentences = [f"At {plot.describe(fixed)}, from attn_dim {dims[0]} to {dims[-1]}:"]
    exponents = {}
    for scorer in ("dot", "scaled_dot"):
        mine = [by[(scorer, a)] for a in dims if (scorer, a) in by]
        if len(mine) < 2:
            sentences.append(f"{scorer}: {NOT_MEASURED} at 2 or more attn_dim.")
            continue
        first, last = mine[0], mine[-1]
        exponents[scorer] = plot.power_fit([e["attn_dim"] for e in mine], [e["score_std_mean"] for e in mine])
        sentences.append(f"{scorer}'s normalized entropy goes {num(first['entropy_norm_mean'])} -> "
                         f"{num(last['entropy_norm_mean'])}, its softmax Jacobian norm "
                         f"{num(first['jacobian_fro_mean'])} -> {num(last['jacobian_fro_mean'])}, its score std "
                         f"{num(first['score_std_mean'])} -> {num(last['score_std_mean'])} (fitted exponent "
                         f"{exponents[scorer]:.3f} over {len(mine)} attn_dims"
                         f"{'; sqrt would be 0.5' if scorer == 'dot' else ''}).")
    others = defaultdict(list)  # every other slice with >= 2 attn_dims: dot's exponent there
    for e in run.entropy:
        if e["scorer"] == "dot":
            others[tuple(e[c] for c in plot.ENTROPY_POINT if c != "attn_dim")].append(e)
    fits = [plot.power_fit([e["attn_dim"] for e in g], [e["score_std_mean"] for e in g])
            for g in others.values() if len({e["attn_dim"] for e in g}) >= 2]
    fits = [f for f in fits if not math.isnan(f)]
    if len(fits) > 1:
        sentences.append(f"Over all {len(fits)} slices with several attn_dims, dot's exponent is "
                         f"{span(fits, lambda x: f'{x:.3f}')}.")
    header = ["attn_dim"]
    for metric in ("H/ln L", "Jacobian", "score std"):
        header += [f"{metric} dot", f"{metric} scaled_dot"]
    table_rows = []
    for a in dims:
        row = [str(a)]
        for metric, digits in (("entropy_norm_mean", 5), ("jacobian_fro_mean", 4), ("score_std_mean", 4)):
            for scorer in ("dot", "scaled_dot"):
                e = by.get((scorer, a))
                row.append(num(e[metric], digits) if e else "-")
        table_rows.append(row)
    return Finding("(b)", title, sentences, Table(header, table_rows),
                   figures=("entropy_vs_attn_dim", "score_std_vs_attn_dim"))


def step_pairs(run, a, b):
    """[(row_a, row_b)]: `step` timing rows of scorers a and b at the same point, fewest threads, base impl."""
    step = run.base_timing("step")
    if not step:
        return []
    lo = min(r["threads"] for r in step)
    index = {tuple(r[c] for c in plot.TIMING_POINT): r for r in step if r["scorer"] == b and r["threads"] == lo}
    return [(r, index[tuple(r[c] for c in plot.TIMING_POINT)]) for r in step
            if r["scorer"] == a and r["threads"] == lo and tuple(r[c] for c in plot.TIMING_POINT) in index]


def finding_additive_cost(run):
    """(c) additive's step time over dot's at every point both were measured (fewest threads): range,
    geometric mean, where it is largest, and the analytic flop ratio there."""
    title = "What additive costs against dot"
    pairs = step_pairs(run, "additive", "dot")
    if not pairs:
        return Finding("(c)", title, [f"Not measured in this run: it needs the additive and dot step timings at the "
                                      f"same point (the run has {', '.join(run.scorers) or 'no scorer'})."])
    pairs.sort(key=lambda p: (p[0]["attn_dim"], p[0]["src_len"], tuple(p[0][c] for c in plot.SIZES)))
    ratios = [a["median_ns"] / d["median_ns"] for a, d in pairs]
    cols = varying([a for a, _ in pairs], plot.SIZES)
    for c in ("src_len", "attn_dim"):
        if c not in cols:
            cols.insert(0, c)
    k = max(range(len(pairs)), key=lambda i: ratios[i])
    a_max, d_max = pairs[k]
    threads = pairs[0][0]["threads"]
    plural = "s" if len(pairs) > 1 else ""
    sentences = [f"Over {len(pairs)} point{plural} at {threads} thread{'s' if threads > 1 else ''} "
                 f"(src_len {span(plot.distinct([a for a, _ in pairs], 'src_len'), str)}, attn_dim "
                 f"{span(plot.distinct([a for a, _ in pairs], 'attn_dim'), str)}), additive's attention step "
                 f"(score + softmax + context) takes {span(ratios, lambda x: f'{x:.3g}x')} dot's time "
                 f"(geometric mean {plot.geomean(ratios):.3g}x).",
                 f"The ratio is largest, {ratios[k]:.3g}x ({micro(a_max['median_ns'])} against "
                 f"{micro(d_max['median_ns'])}), at {point_label(a_max, cols)}, where the analytic flop ratio is "
                 f"{a_max['flops'] / d_max['flops']:.3g}x."]
    for dim in ("attn_dim", "src_len"):
        values = plot.distinct([a for a, _ in pairs], dim)
        if len(values) < 2:
            sentences.append(f"Across {dim}: {NOT_MEASURED} (a single {dim}, {values[0]}).")
            continue
        per = []
        for v in values:
            mine = [r for (a, _), r in zip(pairs, ratios) if a[dim] == v]
            per.append(f"{v}: {plot.geomean(mine):.3g}x")
        sentences.append(f"Geometric mean by {dim}: {', '.join(per)}.")
    table = Table(["point", "additive step", "dot step", "ratio", "flop ratio"],
                  [[point_label(a, cols), micro(a["median_ns"]), micro(d["median_ns"]), f"{r:.3g}x",
                    f"{a['flops'] / d['flops']:.3g}x"] for (a, d), r in zip(pairs, ratios)])
    return Finding("(c)", title, sentences, table, figures=("step_vs_src_len", "time_vs_attn_dim"))


def finding_attention_share(run):
    """(d) per scorer, the `step` time over the decode's time per step at the fewest threads, at the largest
    point (by analytic decode cost) that every scorer has, else at each scorer's own largest point."""
    title = "Attention's share of one decode step"
    rows = run.base_timing()
    if not rows:
        return Finding("(d)", title, ["Not measured in this run: no timing rows."])
    lo = min(r["threads"] for r in rows)
    index = {(r["scorer"], r["stage"], tuple(r[c] for c in plot.TIMING_POINT)): r for r in rows if r["threads"] == lo}
    points = {s: {p for (sc, st, p) in index if sc == s and st == "decode" and (s, "step", p) in index}
              for s in run.scorers}
    points = {s: p for s, p in points.items() if p}
    if not points:
        return Finding("(d)", title, ["Not measured in this run: no point has both the step and the decode timing."])

    def cost(scorer, point):
        return (index[(scorer, "decode", point)]["flops"] or 0, point)

    common = set.intersection(*points.values())
    if common:
        best = max(common, key=lambda p: max(cost(s, p) for s in points))
        chosen = {s: best for s in points}
    else:
        chosen = {s: max(p, key=lambda q: cost(s, q)) for s, p in points.items()}
    shares = []
    for s, p in chosen.items():
        step, decode = index[(s, "step", p)], index[(s, "decode", p)]
        shares.append((s, step, decode, step["median_ns"] / decode["ns_per_step"]))
    cols = [c for c in plot.SIZES if len({st[c] for _, st, _, _ in shares}) > 1]
    threads = f"{lo} thread{'s' if lo > 1 else ''}"
    where = (f"At the largest point every scorer has ({plot.describe({c: shares[0][1][c] for c in plot.SIZES})}, "
             f"{threads})" if common else f"At each scorer's largest point ({threads}; no point has every scorer)")
    parts = [f"{s} {percent(x)}" + (f" ({point_label(st, cols)})" if cols else "") for s, st, _, x in shares]
    sentences = [f"{where}, attention (stage step: score + softmax + context) takes this share of one decode step "
                 f"(decode time / tgt_len, which adds the decoder cell, the output layer and the amortized keys): "
                 f"{', '.join(parts)}."]
    if any(x > 1 for *_, x in shares):
        sentences.append("A share above 100% means the separately timed step ran slower than the whole decode per "
                         "step: timing noise; rerun with more --repetitions or --min-time.")
    table = Table(["scorer"] + (["point"] if cols else []) + ["step", "decode / step", "share"],
                  [[s] + ([point_label(st, cols)] if cols else []) + [micro(st["median_ns"]),
                                                                     micro(d["ns_per_step"]), percent(x)]
                   for s, st, d, x in shares])
    return Finding("(d)", title, sentences, table, figures=("step_vs_src_len",))


def findings(run):
    """Every finding, in order (a) to (d)."""
    return [finding_tanh(run), finding_dot_scaling(run), finding_additive_cost(run), finding_attention_share(run)]


# ----------------------------------------------------------------------------- summary tables

def step_table(run):
    """Per scorer x src_len: the median over the run's other sizes of the `step` median at the fewest threads."""
    step = run.base_timing("step")
    if not step:
        return Table(["scorer"], [], f"No step timings: {NOT_MEASURED}.")
    lo = min(r["threads"] for r in step)
    lens = plot.distinct(step, "src_len")
    cells = defaultdict(list)
    for r in step:
        if r["threads"] == lo:
            cells[(r["scorer"], r["src_len"])].append(r["median_ns"])
    rows = [[s] + [micro(statistics.median(cells[(s, L)])) if cells.get((s, L)) else "-" for L in lens]
            for s in run.scorers]
    return Table(["scorer"] + [f"L={L}" for L in lens], rows,
                 f"Attention step (stage step: score + masked softmax + context), median over the repetitions, "
                 f"then over the run's other sizes, at {lo} thread{'s' if lo > 1 else ''}; impl {run.base_impl}.")


def entropy_table(run):
    """Per scorer: means over the run's sizes of the attention-shape metrics (mask leak: the maximum)."""
    metrics = [("entropy_norm_mean", "H/ln L", 5), ("max_weight_mean", "max weight", 4), ("support_mean", "support", 4),
               ("drift_mean", "drift", 4), ("jacobian_fro_mean", "Jacobian", 4), ("score_std_mean", "score std", 4)]
    rows = []
    for s in run.scorers:
        mine = [e for e in run.entropy if e["scorer"] == s]
        if not mine:
            continue
        rows.append([s, str(len(mine))] + [num(statistics.fmean(e[m] for e in mine), d) for m, _, d in metrics]
                    + [num(max(e["mask_leak_max"] for e in mine))])
    return Table(["scorer", "sizes"] + [label for _, label, _ in metrics] + ["mask leak (max)"], rows,
                 "Means over every size of the run of one traced decode's means over steps x examples "
                 "(entropy.csv; results/README.md defines each metric).")


def threads_table(run):
    """Per scorer: speedup and efficiency of stages step and decode, most threads over fewest."""
    try:
        lo, hi, speedups = plot.thread_speedups(run)
    except plot.Skip as skip:
        return Table(["scorer"], [], f"Thread scaling: {NOT_MEASURED} ({skip}).")
    ratio = hi / lo
    rows = []
    for s in run.scorers:
        row = [s]
        for stage in ("step", "decode"):
            values = speedups.get((s, stage))
            g = plot.geomean(values) if values else None
            row += [f"{g:.3g}x" if g else "-", percent(g / ratio) if g else "-"]
        rows.append(row)
    return Table(["scorer", "step speedup", "step efficiency", "decode speedup", "decode efficiency"], rows,
                 f"Median time at {lo} thread{'s' if lo > 1 else ''} over the median at {hi}, geometric mean over the "
                 f"points measured at both; efficiency = speedup / {ratio:g}.")


# ----------------------------------------------------------------------------- HTML

STYLE = """
body { font-family: sans-serif; max-width: 1240px; margin: 1em auto; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #f2f2f2; } td:first-child, th:first-child { text-align: left; }
table.kv td, table.kv th { text-align: left; }
code, pre { background: #f6f6f6; font-size: .9em; } pre { padding: .5em; white-space: pre-wrap; word-break: break-all; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #444; }
.note { color: #555; font-size: .9em; } .warn { color: #a40; }
"""

ONLOAD = """
window.addEventListener('load', function () {
  var images = document.getElementsByTagName('img'), loaded = 0;
  for (var i = 0; i < images.length; i++) if (images[i].complete && images[i].naturalWidth > 0) loaded++;
  document.body.dataset.imagesLoaded = String(loaded);
  document.body.dataset.imagesTotal = String(images.length);
});
"""


def esc(text):
    return html.escape(str(text), quote=True)


def html_table(table, cls=""):
    parts = []
    if table.note:
        parts.append(f'<p class="note">{esc(table.note)}</p>')
    if table.rows:
        attr = f' class="{cls}"' if cls else ""
        parts.append(f"<table{attr}><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.header) + "</tr>")
        for row in table.rows:
            parts.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
        parts.append("</table>")
    return "\n".join(parts)


def data_uri(path):
    with open(path, "rb") as f:
        return "data:image/png;base64," + base64.b64encode(f.read()).decode("ascii")


def machine_section(run):
    meta = run.meta
    build = meta.get("build", {}) or {}
    kv = Table(["field", "value"], [[k, str(v)] for k, v in sorted(build.items())])
    warnings = meta.get("warnings") or []
    status = meta.get("status", "unknown")
    lines = [
        "<h2>Run</h2>",
        '<table class="kv">',
        f"<tr><td>command</td><td><code>{esc(meta.get('command', ''))}</code></td></tr>",
        f"<tr><td>scenario</td><td>{esc(meta.get('scenario', ''))}</td></tr>",
        f"<tr><td>started (UTC)</td><td>{esc(meta.get('start_utc', ''))}</td></tr>",
        f"<tr><td>ended (UTC)</td><td>{esc(meta.get('end_utc', ''))}</td></tr>",
        f"<tr><td>status</td><td>{esc(status)}</td></tr>",
        f"<tr><td>points</td><td>{esc(meta.get('points', len(meta.get('grid', []) or [])))} planned; "
        f"{len(run.timing)} timing rows ok, {run.skipped} skipped</td></tr>",
        f"<tr><td>repetitions x min time</td><td>{esc(meta.get('repetitions', ''))} x "
        f"{esc(meta.get('min_time_s', ''))} s</td></tr>",
        f"<tr><td>warnings</td><td>{'<br>'.join(esc(w) for w in warnings) if warnings else 'none'}</td></tr>",
        "</table>",
        "<h2>Machine and build</h2>",
        html_table(kv, "kv"),
    ]
    if status != "complete":
        lines.insert(1, f'<p class="warn">This run is {esc(status)}: the numbers cover only its finished points.</p>')
    return "\n".join(lines)


def render_html(run, written, notes, errors, found):
    """The whole report as one HTML string; figures embedded from their PNG files."""
    title = f"attnbench report: {run.machine()}, {run.date()}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{esc(title)}</title>",
           f"<style>{STYLE}</style>", f"<script>{ONLOAD}</script>", "</head><body>", f"<h1>{esc(title)}</h1>",
           f'<p class="note">Run folder: <code>{esc(os.path.abspath(run.folder))}</code></p>',
           machine_section(run), "<h2>Summary</h2>", "<h3>Attention step time per scorer and source length</h3>",
           html_table(step_table(run)), "<h3>Attention shape per scorer</h3>", html_table(entropy_table(run)),
           "<h3>Thread scaling</h3>", html_table(threads_table(run)), '<h2 id="findings">Findings</h2>']
    numbers = {w.name: n for n, w in enumerate(written, start=1)}
    for f in found:
        out.append(f"<h3>{esc(f.key)} {esc(f.title)}</h3>")
        out.append("<p>" + esc(f.text()) + "</p>")
        if f.table:
            out.append(html_table(f.table))
        shown = [f'<a href="#{esc(n)}">Figure {numbers[n]}</a>' for n in f.figures if n in numbers]
        if shown:
            out.append(f'<p class="note">See {", ".join(shown)}.</p>')
    out.append("<h2>Figures</h2>")
    for w in written:
        if "png" not in w.paths:
            continue
        n = numbers[w.name]
        width, height = plot.FIGURE_PX
        out.append(f'<figure id="{esc(w.name)}"><img src="{data_uri(w.paths["png"])}" alt="{esc(w.name)}" '
                   f'width="{width}" height="{height}"><figcaption>Figure {n} ({esc(w.name)}). '
                   f"{esc(w.caption)}</figcaption></figure>")
    if notes or errors:
        out.append('<p class="note">Figures not drawn:<br>' + "<br>".join(esc(x) for x in notes + errors) + "</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def text_table(table, indent="    "):
    widths = [max(len(str(r[i])) for r in [table.header] + table.rows) for i in range(len(table.header))]
    lines = []
    for row in [table.header] + table.rows:
        lines.append(indent + "  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                                        for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines)


def findings_text(run, found):
    """The findings as plain text: a heading naming the run, then each finding's paragraph and table."""
    lines = [f"Findings: {run.machine()}, run started {run.date()} ({run.meta.get('status', 'unknown')})", ""]
    for f in found:
        lines.append(textwrap.fill(f"{f.key} {f.title}. {f.text()}", width=100, subsequent_indent="    "))
        if f.table and f.table.rows:
            lines.append(text_table(f.table))
        lines.append("")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(prog="report.py", description="One self-contained HTML report of a run folder.")
    parser.add_argument("run", help="run folder (timing.csv, samples.csv, entropy.csv, meta.json)")
    parser.add_argument("--attnbench", help="the attnbench binary, for the heatmaps' probes (default build/attnbench)")
    args = parser.parse_args(argv[1:])
    train = train_figures.is_train_run(args.run)  # an `attnbench train` folder: table, findings, figures
    try:
        run = train_figures.load_train_run(args.run) if train else plot.load_run(args.run)
    except (OSError, ValueError, KeyError) as error:
        print(f"report.py: {error}" if isinstance(error, plot.run_folder.RunFolderError)
              else f"report.py: cannot read run folder {args.run}: {error}", file=sys.stderr)
        return 2
    if train:
        return train_figures.report_main(run)
    path = os.path.join(args.run, "report.html")
    try:
        written, notes, errors = plot.write_figures(run, os.path.join(args.run, "figures"), plot.FORMATS,
                                                    args.attnbench or plot.default_attnbench())
        for line in notes:
            print(line, file=sys.stderr)
        for line in errors:
            print(f"report.py: {line}", file=sys.stderr)
        found = findings(run)
        with open(path, "w", encoding="utf-8") as f:
            f.write(render_html(run, written, notes, errors, found))
    except OSError as error:
        print(f"report.py: cannot write the report: {error}", file=sys.stderr)
        return 1
    sys.stdout.reconfigure(encoding="utf-8")
    print(findings_text(run, found), end="")
    print(f"report: {path}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, AttributeError) as error:
        # Values that parse but do not fit together (a hand-edited or foreign folder): one line, never a traceback.
        print(f"report.py: {sys.argv[1] if len(sys.argv) > 1 else 'RUN'}: the run's values do not fit together "
              f"({type(error).__name__}: {error})", file=sys.stderr)
        sys.exit(2)
