#!/usr/bin/python3
"""The README's performance table from a run folder: ours (impl onednn, fused) against PyTorch.

    scripts/perf_table.py results/perf/RUN                        # print the Markdown
    scripts/perf_table.py results/perf/RUN --readme README.md     # and put it into README.md
    scripts/perf_table.py RUN1 RUN2 RUN3                          # each figure from its median run

RUN is a folder of `attnbench run --peer torch` (scripts/perf-table makes them from
scenarios/perf.csv). From RUN/timing.csv's ok rows of one stage (--stage, default step) and
dtype (--dtype, default f32) it prints a Markdown table with one row per scorer x size x
threads: the median of ours with oneDNN primitives, ours fused and PyTorch eager in
microseconds, PyTorch over the faster of ours, the fused row's % of the roofline and which
roof bounds the stage; then, per scorer x size, what the most threads in the run buy over
1 thread for the impl of ours that is fastest there. Rows of ours in another dtype (the
fused step with bf16 storage: scenarios/perf.csv measures it, PyTorch runs in f32) add a
column each ("fused bf16 µs") and "PyTorch / best ours, bf16 allowed": PyTorch over the
fastest of ours in any dtype; the speedups stay those of --dtype. A size is named by the `name` of the
scenario row that planned it (RUN/meta.json's grid; scenarios/perf.csv names lesson, mid and
paper), else by its (batch, src_len, enc_dim, dec_dim, attn_dim); named sizes come first, in
the grid's order. A caption names the run, the machine, the commit and the date from
RUN/meta.json.
Given several runs of the same points on the same machine, each figure of ours and of
PyTorch is the row of the run with the median of that figure's medians (the lower of the two
middle ones for an even count), so one slow run moves no figure; the caption names every run.
Runs of different machines (meta.json's build cpu_model, cpu_id and cores) are put side by
side: a caption per machine, and per machine its own columns, each headed by the machine's
name ("AMD EPYC family 25 model 17": cpu_model and cpu_id's family and model), then each
machine's speedup of its most threads over 1. `--label RUN=NAME` names RUN's machine, and
puts RUN with the other runs of that name: for runs recorded before meta.json had cpu_id,
whose machines differ in nothing else recorded.

    scripts/perf_table.py Z4_RUN1 Z4_RUN2 Z4_RUN3 Z5_RUN1 Z5_RUN2 Z5_RUN3 \\
        --label Z5_RUN1="Zen 5" --label Z5_RUN2="Zen 5" --label Z5_RUN3="Zen 5"

With --readme FILE the text between the lines `<!-- perf-table:begin -->` and
`<!-- perf-table:end -->` of FILE is replaced (the file is rewritten atomically). Standard
library only. Bad input: one line on stderr, exit 2.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

BEGIN, END = "<!-- perf-table:begin -->", "<!-- perf-table:end -->"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnbench_lists  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import run_folder  # noqa: E402  (scripts/lib/run_folder.py: committed rows, damage as file:line)

OURS = tuple(attnbench_lists.lists()["impls"])  # every impl of the binary
PEER = "torch"
# What names an unnamed size, in this order: "B2 L10 E16 D20 A32".
SIZE_LABEL = (("B", "batch"), ("L", "src_len"), ("E", "enc_dim"), ("D", "dec_dim"), ("A", "attn_dim"))


class InputError(ValueError):
    """Bad input: one line on stderr, exit 2."""


class Sizes:
    """The names of the run's sizes: each named point of RUN/meta.json's grid (its Problem fields
    as text and the `name` of the scenario row that planned it), in grid order."""

    def __init__(self, meta: dict):
        self.named: List[Tuple[Dict[str, str], str]] = []
        for point in meta.get("grid") or []:
            if isinstance(point, dict) and point.get("name"):
                fields = {k: v for k, v in point.items() if isinstance(v, str) and k != "impl"}
                self.named.append((fields, point["name"]))
        self.order = list(dict.fromkeys(name for _, name in self.named))

    def name(self, row: Dict[str, str]) -> str:
        """The name of the point `row` measured (any impl: the peer's rows say torch), else its sizes."""
        for fields, name in self.named:
            if all(row[k] == v for k, v in fields.items() if k in row):
                return name
        return " ".join(f"{letter}{row[column]}" for letter, column in SIZE_LABEL)

    def rank(self, name: str) -> int:
        return self.order.index(name) if name in self.order else len(self.order)


def microseconds(ns: float) -> str:
    """A median in us: 2 decimals below 10 us, 1 below 1000 us, none above."""
    us = ns / 1000.0
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


Cell = Tuple[str, str, int]  # (scorer, size, threads)


def read_meta(run: str) -> dict:
    """RUN/meta.json, or {} when it is missing or does not parse."""
    try:
        with open(os.path.join(run, "meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def column_key(row: Dict[str, str], dtype: str) -> str:
    """The row's column: its impl in `dtype` (and the peer's, which runs in f32), "impl dtype" in another dtype."""
    return row["impl"] if row["dtype"] == dtype or row["impl"] == PEER else f"{row['impl']} {row['dtype']}"


def read_rows(run: str, stage: str, dtype: str, sizes: Sizes) -> Dict[Cell, Dict[str, Dict[str, str]]]:
    """{(scorer, size, threads): {column_key: timing row}} of the ok rows of `stage` (the peer's in
    `dtype` only), in file order; the run must have rows of ours or the peer's in `dtype`."""
    path = os.path.join(run, "timing.csv")
    if not os.path.isfile(path):
        raise InputError(f"RUN: cannot read {path}: No such file or directory")
    try:
        rows = run_folder.read_rows(run, "timing.csv")  # the rows its journal commits
    except (OSError, run_folder.RunFolderError) as error:
        raise InputError(f"RUN: {error}") from None
    cells: Dict[Cell, Dict[str, Dict[str, str]]] = {}
    for row in rows:
        if row.get("stage") != stage or row.get("status") != "ok" or (row["impl"] == PEER and row["dtype"] != dtype):
            continue
        cell = (row["scorer"], sizes.name(row), int(row["threads"]))
        by_impl = cells.setdefault(cell, {})
        column = column_key(row, dtype)
        if column in by_impl:
            raise InputError(f"RUN: {path} has two {column} rows for {cell} (other tgt_len, emb_dim or vocab); "
                             f"the table takes one run per size")
        by_impl[column] = row
    if not any(" " not in column for by_impl in cells.values() for column in by_impl):
        raise InputError(f"RUN: {path} has no ok rows of stage '{stage}' and dtype '{dtype}'")
    return cells


def median_runs(runs: List[Dict[Cell, Dict[str, Dict[str, str]]]]) -> Dict[Cell, Dict[str, Dict[str, str]]]:
    """Per cell and impl, the row of the run whose median_ns is the median over the runs that have
    one (the lower middle one for an even count); with one run, that run's rows."""
    rows: Dict[Cell, Dict[str, List[Dict[str, str]]]] = {}
    for run in runs:
        for cell, by_impl in run.items():
            for impl, row in by_impl.items():
                rows.setdefault(cell, {}).setdefault(impl, []).append(row)
    cells: Dict[Cell, Dict[str, Dict[str, str]]] = {}
    for cell, by_impl in rows.items():
        for impl, of_runs in by_impl.items():
            ranked = sorted(of_runs, key=lambda row: float(row["median_ns"]))
            cells.setdefault(cell, {})[impl] = ranked[(len(ranked) - 1) // 2]
    return cells


def best_ours(by_impl: Dict[str, Dict[str, str]], any_dtype: bool = False) -> Optional[Tuple[str, float]]:
    """(column, median ns) of the fastest of ours in the table's dtype (with any_dtype, in any dtype);
    None without such rows."""
    timed = [(column, float(row["median_ns"])) for column, row in by_impl.items()
             if column != PEER and (any_dtype or column in OURS)]
    return min(timed, key=lambda t: t[1]) if timed else None


def other_dtype_columns(cells: Dict[Cell, Dict[str, Dict[str, str]]]) -> List[str]:
    """The columns of ours in another dtype than the table's ("fused bf16"), sorted."""
    return sorted({column for by_impl in cells.values() for column in by_impl if " " in column})


def ratio(torch: Optional[Dict[str, str]], best: Optional[Tuple[str, float]]) -> str:
    return f"{float(torch['median_ns']) / best[1]:.2f}" if torch and best else "-"


def median_us(row: Optional[Dict[str, str]]) -> str:
    return microseconds(float(row["median_ns"])) if row else "-"


def figures(by_impl: Dict[str, Dict[str, str]], others: List[str]) -> List[str]:
    """The cells of one machine's columns (figure_names): its medians, ratios and % roofline."""
    onednn, fused, torch = (by_impl.get(impl) for impl in ("onednn", "fused", PEER))
    values = [median_us(row) for row in (onednn, fused, *(by_impl.get(c) for c in others), torch)]
    values.append(ratio(torch, best_ours(by_impl)))
    if others:
        values.append(ratio(torch, best_ours(by_impl, any_dtype=True)))
    values.append(f"{float(fused['roofline_pct']):.1f}" if fused and fused.get("roofline_pct") else "-")
    return values


def figure_names(others: List[str]) -> List[str]:
    """The names of figures()' cells."""
    names = ["onednn µs", "fused µs", *(f"{column} µs" for column in others), "PyTorch µs", "PyTorch / best ours"]
    if others:
        names.append("PyTorch / best ours, " + " or ".join(sorted({c.split()[1] for c in others})) + " allowed")
    return names + ["% roofline (fused)"]


def ordered(cells, sizes: Sizes) -> List[Cell]:
    scorers: List[str] = []
    for scorer, _, _ in cells:
        if scorer not in scorers:
            scorers.append(scorer)
    return sorted(cells, key=lambda c: (scorers.index(c[0]), sizes.rank(c[1]), c[1], c[2]))


def main_table(cells: Dict[Cell, Dict[str, Dict[str, str]]], sizes: Sizes) -> List[str]:
    others = other_dtype_columns(cells)
    names = [("ours " + name if name.split()[0] in OURS else name) for name in figure_names(others)]
    lines = ["| scorer | size | threads | " + " | ".join(names) + " | bound |",
             "| --- | --- | ---: |" + " ---: |" * len(names) + " --- |"]
    for cell in ordered(cells, sizes):
        by_impl = cells[cell]
        bound = next((row.get("bound") for row in (by_impl.get("fused"), by_impl.get("onednn"))
                      if row and row.get("bound")), "") or "-"
        lines.append("| " + " | ".join([cell[0], cell[1], str(cell[2]), *figures(by_impl, others), bound]) + " |")
    return lines


def speedup_table(cells: Dict[Cell, Dict[str, Dict[str, str]]], sizes: Sizes) -> List[str]:
    """Most threads / 1 thread per scorer x size, for the impl of ours fastest at the most threads."""
    most = max(threads for _, _, threads in cells)
    if most == 1:
        return []
    lines = [f"Speedup of {most} threads over 1, for the impl of ours that is faster on {most} threads:", "",
             f"| scorer | size | impl | 1 thread µs | {most} threads µs | speedup |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    for scorer, size, threads in ordered(cells, sizes):
        if threads != most or (scorer, size, 1) not in cells:
            continue
        best = best_ours(cells[(scorer, size, most)])
        one = cells[(scorer, size, 1)].get(best[0]) if best else None
        if not best or not one:
            continue
        single = float(one["median_ns"])
        lines.append(f"| {scorer} | {size} | {best[0]} | {microseconds(single)} | {microseconds(best[1])} "
                     f"| {single / best[1]:.2f} |")
    return lines if len(lines) > 4 else []


def blas(libraries) -> str:
    """" (BLAS openblas-openmp/libblas.so.3)" for the libraries the peer's matmuls ran on; "" when unknown."""
    if not libraries:
        return ""
    return " (BLAS " + ", ".join("/".join(path.split("/")[-2:]) for path in libraries) + ")"


def caption(runs: List[str], stage: str, dtype: str, cells, meta: dict) -> str:
    """Where the numbers come from: the runs, and the machine, versions, commit and date from the first
    RUN/meta.json."""
    build = meta.get("build") or {}
    peer = meta.get("peer") or {}
    repetitions = {row["repetitions"] for by_impl in cells.values() for row in by_impl.values()}
    cpu = build.get("cpu_model")
    if cpu and build.get("cpu_id") and build["cpu_id"] != "unknown":
        cpu += f" ({build['cpu_id']})"
    machine = [cpu, f"{build['cores']} cores" if build.get("cores") else None,
               build.get("onednn_isa"), build.get("onednn_version") and f"oneDNN {build['onednn_version']}",
               build.get("fused_bf16_query") and f"the fused bf16 step's query in {build['fused_bf16_query']}",
               peer.get("torch_version") and f"torch {peer['torch_version']}" + blas(peer.get("blas")),
               build.get("git_commit") and "commit " + str(build["git_commit"])[:7]
               + ("+dirty" if str(build["git_commit"]).endswith("+dirty") else ""),
               meta.get("start_utc") and str(meta["start_utc"])[:10]]
    text = ("Run " if len(runs) == 1 else f"{len(runs)} runs, ") + ", ".join(f"`{os.path.normpath(run)}`"
                                                                          for run in runs)
    if meta.get("command"):
        command = str(meta["command"])
        if len(runs) > 1:  # each run has its own --out folder: named RUN
            command = command.replace(runs[0], "RUN").replace(os.path.normpath(runs[0]), "RUN")
        text += f" (`{command}`" + (" each)" if len(runs) > 1 else ")")
    if any(machine):
        text += " on " + ", ".join(part for part in machine if part)
    what = {"step": " (score + masked softmax + context)",
            "train_step": " (forward over T, loss, backward, clip, Adam)"}.get(stage, "")
    mode = "with autograd" if stage == "train_step" else "under `torch.no_grad()`"
    of_runs = f", the run with the median of the {len(runs)} runs' medians for each figure" if len(runs) > 1 else ""
    others = other_dtype_columns(cells)
    dtypes = dtype + "".join(f" (`{column}`: the {column.split()[0]} impl with {column.split()[1]} storage)"
                             for column in others)
    return (text + f". Stage `{stage}`{what}, {dtypes}, median of "
            f"{'/'.join(sorted(repetitions))} repetitions in µs{of_runs}; PyTorch is eager {mode}; "
            f"a `-` was not measured.")


def machine_key(meta: dict) -> Tuple[object, object, object]:
    """What tells machines apart: meta.json's build cpu_model, cpu_id (None in runs older than it) and cores."""
    build = meta.get("build") or {}
    return build.get("cpu_model"), build.get("cpu_id"), build.get("cores")


def machine_label(key: Tuple[object, object, object]) -> str:
    """"AMD EPYC family 25 model 17" from cpu_model and cpu_id; the cpu_model alone without a cpu_id."""
    model, cpu_id, _ = key
    words = str(cpu_id or "").split()
    family = " ".join(words[words.index("family"):words.index("family") + 4]) if "family" in words else ""
    return " ".join(part for part in (str(model or "unknown CPU"), family) if part)


class Machine:
    """The runs of one machine: their cells (each figure from its median run), sizes and label."""

    def __init__(self, runs: List[str], metas: List[dict], stage: str, dtype: str, label: str):
        self.runs, self.meta, self.label = runs, metas[0], label
        self.sizes = Sizes(metas[0])
        self.cells = median_runs([read_rows(run, stage, dtype, self.sizes) for run in runs])


def machines_of(runs: List[str], stage: str, dtype: str, labels: Dict[str, str]) -> List[Machine]:
    """The runs grouped by machine, in the order of each machine's first run: a run named in `labels`
    (run folder -> name) belongs to the machine of that name, any other to the machine of its
    machine_key, named by machine_label. Machines must be named apart."""
    labels = {os.path.normpath(run): name for run, name in labels.items()}
    unknown = [run for run in labels if run not in {os.path.normpath(r) for r in runs}]
    if unknown:
        raise InputError(f"--label: {unknown[0]} is not one of the RUNs")
    groups: Dict[object, List[Tuple[str, dict]]] = {}
    names: Dict[object, str] = {}
    for run in runs:
        meta = read_meta(run)
        name = labels.get(os.path.normpath(run))
        key = ("label", name) if name else machine_key(meta)
        names[key] = name or machine_label(machine_key(meta))
        groups.setdefault(key, []).append((run, meta))
    named = list(names.values())
    twice = next((name for name in named if named.count(name) > 1), None)
    if twice:
        raise InputError(f"RUN: runs of {named.count(twice)} machines are all named '{twice}' (their cpu_id or "
                         f"cores differ); name them apart with --label RUN=NAME")
    return [Machine([run for run, _ in members], [meta for _, meta in members], stage, dtype, names[key])
            for key, members in groups.items()]


def side_by_side(machines: List[Machine]) -> List[str]:
    """One row per scorer x size x threads, each machine's onednn, fused and PyTorch medians, ratio and
    % roofline in columns of its own, then each machine's speedup of its most threads over 1."""
    cells = list(dict.fromkeys(cell for machine in machines for cell in machine.cells))  # in first-seen order
    sizes = machines[0].sizes
    others = [other_dtype_columns(machine.cells) for machine in machines]  # each machine's own
    header = ["scorer", "size", "threads"]
    for machine, its_others in zip(machines, others):
        header += [f"{machine.label}: {what}" for what in figure_names(its_others)]
    lines = ["| " + " | ".join(header) + " |", "| --- | --- | ---: |" + " ---: |" * (len(header) - 3)]
    for cell in ordered(cells, sizes):
        values = [cell[0], cell[1], str(cell[2])]
        for machine, its_others in zip(machines, others):
            values += figures(machine.cells.get(cell, {}), its_others)
        lines.append("| " + " | ".join(values) + " |")
    most = [max(threads for _, _, threads in machine.cells) for machine in machines]
    speedups = ["| scorer | size | " + " | ".join(f"{m.label}: impl | {m.label}: {n} threads / 1"
                                                for m, n in zip(machines, most)) + " |",
                "| --- | --- |" + " --- | ---: |" * len(machines)]
    for scorer, size, threads in ordered(cells, sizes):
        if threads != 1:
            continue
        values = [scorer, size]
        for machine, n in zip(machines, most):
            best = best_ours(machine.cells.get((scorer, size, n), {})) if n > 1 else None
            one = machine.cells.get((scorer, size, 1), {}).get(best[0]) if best else None
            values += [best[0], f"{float(one['median_ns']) / best[1]:.2f}"] if best and one else ["-", "-"]
        if any(value != "-" for value in values[2:]):
            speedups.append("| " + " | ".join(values) + " |")
    if len(speedups) > 2:
        lines += ["", "Speedup of each machine's most threads over 1, for its impl of ours that is faster there:", "",
                  *speedups]
    return lines


def table(runs: List[str], stage: str = "step", dtype: str = "f32", labels: Optional[Dict[str, str]] = None) -> str:
    """The Markdown text: caption, main table, speedup table; with runs of several machines, one
    caption per machine and the machines side by side."""
    machines = machines_of(runs, stage, dtype, labels or {})
    if len(machines) == 1:
        machine = machines[0]
        parts = [caption(machine.runs, stage, dtype, machine.cells, machine.meta), "",
                 *main_table(machine.cells, machine.sizes)]
        speedups = speedup_table(machine.cells, machine.sizes)
        if speedups:
            parts += ["", *speedups]
        return "\n".join(parts) + "\n"
    parts = [f"{len(machines)} machines side by side, each column named by its machine."]
    for machine in machines:
        parts += ["", f"{machine.label}: " + caption(machine.runs, stage, dtype, machine.cells, machine.meta)]
    parts += ["", *side_by_side(machines)]
    return "\n".join(parts) + "\n"


def replace_between_markers(text: str, body: str, where: str) -> str:
    """`text` with the lines between BEGIN and END replaced by `body`."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise InputError(f"--readme: {where} has no '{BEGIN}' line followed by an '{END}' line")
    head = text[:start + len(BEGIN)]
    return head + "\n" + body + text[end:]


def write_readme(path: str, body: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as error:
        raise InputError(f"--readme: cannot read {path}: {error.strerror}") from None
    updated = replace_between_markers(text, body, path)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(updated)
    os.replace(temporary, path)


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="perf_table.py", description=__doc__.splitlines()[0])
    parser.add_argument("runs", metavar="RUN", nargs="+",
                        help="run folder of `attnbench run --peer torch`; several: each figure from its median run")
    parser.add_argument("--readme", metavar="FILE", help="replace the table between the perf-table markers of FILE")
    parser.add_argument("--stage", default="step", help="stage of the rows (default step)")
    parser.add_argument("--dtype", default="f32", help="dtype of the rows (default f32)")
    parser.add_argument("--label", metavar="RUN=NAME", action="append", default=[],
                        help="name RUN's machine NAME in the table (e.g. runs recorded before meta.json had cpu_id)")
    args = parser.parse_args(argv)
    try:
        labels = {}
        for item in args.label:
            run, equals, name = item.partition("=")
            if not equals or not run or not name.strip():
                raise InputError(f"--label: '{item}' is not RUN=NAME")
            labels[run] = name.strip()
        text = table(args.runs, args.stage, args.dtype, labels)
        if args.readme:
            write_readme(args.readme, text)
    except InputError as error:
        print(f"perf_table: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
