#!/usr/bin/python3
"""Run tests: `attnbench run`, `merge` and `compare` on real (tiny) sweeps, checked against the
output contract of shared/spec/csv-schema.md.

Usage: run_test.py /path/to/build/attnbench

Standard library only. Every run writes into a temporary folder (--out); runs are tiny
(--repetitions 2 --min-time 0.002) so the whole file takes well under a minute on two cores.
Each case is a separate check; a failing case prints one line naming the case, the command
and what was wrong. The last line is `N passed, M failed`; the exit code is 1 when any case
failed.
"""

import csv
import hashlib
import io
import itertools
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time

import cli_support as cli
from cli_support import Failure, case, one_error_line, run, run_ok

SCORERS = ["additive", "additive_linear", "dot", "scaled_dot", "general"]
STAGES = ["keys", "score", "attend", "step", "cell", "output", "encoder", "decode"]
SEQUENCE_STAGES = {"keys", "encoder", "decode"}  # ns_per_step = median / tgt_len for these

# The contract: the columns of csv-schema.md, exactly as written there.
TIMING_KEY = ["scorer", "impl", "dtype", "threads", "batch", "src_len", "tgt_len", "emb_dim", "enc_dim", "dec_dim",
              "attn_dim", "vocab", "stage"]
TIMING_VALUES = ["repetitions", "iterations", "median_ns", "mean_ns", "stddev_ns", "cv", "min_ns", "max_ns",
                 "ns_per_step", "flops", "bytes", "gflops", "gbps", "roofline_pct", "bound", "status", "repro"]
SAMPLE_VALUES = ["repetition", "iterations", "ns"]
ENTROPY_KEY = ["scorer", "dtype", "batch", "src_len", "tgt_len", "enc_dim", "dec_dim", "attn_dim", "init", "seed",
               "len_min"]
ENTROPY_VALUES = ["samples", "entropy_mean", "entropy_std", "entropy_min", "entropy_max", "entropy_norm_mean",
                  "max_weight_mean", "support_mean", "drift_mean", "jacobian_fro_mean", "score_std_mean",
                  "mask_leak_max", "entropy_diff_f32"]
HEADERS = {"timing.csv": TIMING_KEY + TIMING_VALUES,
           "samples.csv": TIMING_KEY + SAMPLE_VALUES,
           "entropy.csv": ENTROPY_KEY + ENTROPY_VALUES}
RUN_FILES = ["timing.csv", "samples.csv", "entropy.csv", "meta.json", "journal"]

REPS = 2
FAST = ["--repetitions", str(REPS), "--min-time", "0.002"]  # every run but the interrupted ones
EXIT_INTERRUPTED = 130

TMP = None     # the temporary folder of this test run, set in main()


_SERIAL = itertools.count(1)


def tmp(name=None):
    """A fresh path (not created) in this test run's temporary folder; a numbered one when no name is given."""
    path = os.path.join(TMP, name if name else f"t{next(_SERIAL)}")
    if os.path.exists(path):
        raise Failure(None, f"test bug: temporary path {path} used twice")
    return path


# ---------------------------------------------------------------------------- run folders

class Table:
    """One CSV file of a run: header and rows (lists of strings), checked to be whole."""

    def __init__(self, path, header, rows):
        self.path = path
        self.header = header
        self.rows = rows

    def col(self, name):
        return self.header.index(name)

    def cells(self, row, names):
        return tuple(row[self.col(n)] for n in names)

    def dicts(self):
        return [dict(zip(self.header, row)) for row in self.rows]


def read_table(path, command=None):
    """Parses one run CSV (RFC 4180): one header line, every row with the header's width, ends in a newline."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise Failure(command, f"cannot read {path}: {error}")
    text = data.decode("utf-8")
    if not text.endswith("\n"):
        raise Failure(command, f"{path}: does not end with a newline (a partial line?): ...{text[-120:]!r}")
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    if not rows:
        raise Failure(command, f"{path}: empty, expected a header line")
    header, body = rows[0], rows[1:]
    for n, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise Failure(command, f"{path}: row {n} has {len(row)} cells, the header {len(header)}: {row[:14]}")
    return Table(path, header, body)


class Run:
    def __init__(self, folder, result):
        self.folder = folder
        self.result = result
        self.command = result.command if result else None
        self.timing = read_table(os.path.join(folder, "timing.csv"), self.command)
        self.samples = read_table(os.path.join(folder, "samples.csv"), self.command)
        self.entropy = read_table(os.path.join(folder, "entropy.csv"), self.command)
        try:
            with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
                self.meta = json.load(f)
        except (OSError, ValueError) as error:
            raise Failure(self.command, f"meta.json: {error}")

    def fail(self, message):
        raise Failure(self.command, message)

    def timing_keys(self):
        return [self.timing.cells(row, TIMING_KEY) for row in self.timing.rows]

    def sample_keys(self):
        return [self.samples.cells(row, TIMING_KEY) for row in self.samples.rows]

    def entropy_keys(self):
        return [self.entropy.cells(row, ENTROPY_KEY) for row in self.entropy.rows]


def load(folder, result=None):
    return Run(folder, result)


def sweep(name, *args, quiet=True, env=None):
    """`attnbench run ARGS --out TMP/name` with the fast bench settings; requires exit 0."""
    out = tmp(name)
    r = run_ok("run", *args, *FAST, *(["--quiet"] if quiet else []), "--out", out, env=env)
    return load(out, r)


_CACHE = {}


def cached(name, fn):
    if name not in _CACHE:
        _CACHE[name] = fn()
    return _CACHE[name]


def base_run():
    """The case-1 run: two points x two scorers."""
    return cached("base", lambda: sweep("base", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,general"))


def padded_run():
    """A run with padding (--len-min) and additive_linear, whose drift is 0 by construction."""
    return cached("padded", lambda: sweep("padded", "--batch", 3, "--src-len", 8, "--len-min", 4, "--scorer",
                                          "additive_linear,dot,additive"))


def is_number(text):
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def duplicates(items):
    seen, dups = set(), set()
    for item in items:
        (dups if item in seen else seen).add(item)
    return dups


def check_whole(rf):
    """Files of a (possibly interrupted) run hold whole points: every (point, scorer) in timing.csv has the
    8 stages, samples.csv `repetitions` rows per ok timing row, entropy.csv one row per measured
    (point, scorer); no key twice."""
    keys = rf.timing_keys()
    dup = duplicates(keys)
    if dup:
        rf.fail(f"timing.csv repeats keys {sorted(dup)[:3]}")
    stages = {}
    for key in keys:
        stages.setdefault(key[:-1], []).append(key[-1])
    for point, got in stages.items():
        if got != STAGES:
            rf.fail(f"timing.csv: stages of {point} are {got}, expected {STAGES}")
    per_key = {}
    for key in rf.sample_keys():
        per_key[key] = per_key.get(key, 0) + 1
    ok = {rf.timing.cells(row, TIMING_KEY) for row in rf.timing.rows if row[rf.timing.col("status")] == "ok"}
    if set(per_key) != ok:
        rf.fail(f"samples.csv keys differ from the ok timing keys: {len(set(per_key) - ok)} extra, "
                f"{len(ok - set(per_key))} missing")
    wrong = {k: n for k, n in per_key.items() if n != REPS}
    if wrong:
        rf.fail(f"samples.csv: expected {REPS} rows per key, got {list(wrong.items())[:2]}")
    ekeys = rf.entropy_keys()
    dup = duplicates(ekeys)
    if dup:
        rf.fail(f"entropy.csv repeats keys {sorted(dup)[:3]}")
    measured = {(k[0], k[2], k[4], k[5], k[6], k[8], k[9], k[10]) for k in ok}  # scorer..attn_dim, as in entropy
    got = {(k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]) for k in ekeys}
    if got != measured:
        rf.fail(f"entropy.csv (point, scorer) rows {len(got)} differ from the measured ones in timing.csv "
                f"{len(measured)}")


# ---------------------------------------------------------------------------- cases

# 1. Schema --------------------------------------------------------------------------------

@case("schema: run writes timing.csv, samples.csv, entropy.csv, meta.json")
def _():
    rf = base_run()
    missing = [f for f in RUN_FILES if not os.path.isfile(os.path.join(rf.folder, f))]
    if missing:
        rf.fail(f"missing {missing}")
    extra = sorted(set(os.listdir(rf.folder)) - set(RUN_FILES))
    if extra:
        rf.fail(f"unexpected files left in the run folder: {extra}")


@case("schema: CSV headers match csv-schema.md column for column")
def _():
    rf = base_run()
    for table in (rf.timing, rf.samples, rf.entropy):
        expected = HEADERS[os.path.basename(table.path)]
        if table.header != expected:
            rf.fail(f"{os.path.basename(table.path)} header {table.header} != spec {expected}")


@case("schema: timing rows ok, 8 stages per (point, scorer) in order, numbers parse, min <= median <= max")
def _():
    rf = base_run()
    t = rf.timing
    if len(t.rows) != 2 * 2 * 8:
        rf.fail(f"expected 32 timing rows (2 points x 2 scorers x 8 stages), got {len(t.rows)}")
    groups = []
    for row in t.rows:
        key = t.cells(row, TIMING_KEY[:-1])
        if not groups or groups[-1][0] != key:
            groups.append((key, []))
        groups[-1][1].append(row[t.col("stage")])
    for key, stages in groups:
        if stages != STAGES:
            rf.fail(f"stages of {key} are {stages}, expected {STAGES} (consecutive, in that order)")
    if len(groups) != 4:
        rf.fail(f"expected 4 (point, scorer) blocks, got {len(groups)}")
    numeric = [c for c in TIMING_VALUES if c not in ("roofline_pct", "bound", "status", "repro")]
    for d in t.dicts():
        if d["status"] != "ok":
            rf.fail(f"status {d['status']!r} for {d['scorer']} {d['stage']}, expected ok")
        bad = [c for c in numeric if not is_number(d[c])]
        if d["roofline_pct"] and not is_number(d["roofline_pct"]):
            bad.append("roofline_pct")
        if bad:
            rf.fail(f"{d['scorer']} {d['stage']}: not finite numbers: {[(c, d[c]) for c in bad]}")
        for c in ("repetitions", "iterations", "flops", "bytes"):
            if not re.fullmatch(r"\d+", d[c]) and not float(d[c]).is_integer():
                rf.fail(f"{d['scorer']} {d['stage']}: {c} {d[c]!r} is not a whole number")
        if int(d["repetitions"]) != REPS:
            rf.fail(f"{d['scorer']} {d['stage']}: repetitions {d['repetitions']}, expected {REPS}")
        lo, med, hi = float(d["min_ns"]), float(d["median_ns"]), float(d["max_ns"])
        if not 0 < lo <= med <= hi:
            rf.fail(f"{d['scorer']} {d['stage']}: not 0 < min {lo} <= median {med} <= max {hi}")


@case("schema: ns_per_step = median / tgt_len (keys, encoder, decode) else median; gflops = flops / median")
def _():
    rf = base_run()
    for d in rf.timing.dicts():
        med = float(d["median_ns"])
        want = med / int(d["tgt_len"]) if d["stage"] in SEQUENCE_STAGES else med
        if not close(float(d["ns_per_step"]), want):
            rf.fail(f"{d['scorer']} {d['stage']}: ns_per_step {d['ns_per_step']}, expected {want!r}")
        gflops = float(d["flops"]) / med
        if not close(float(d["gflops"]), gflops):
            rf.fail(f"{d['scorer']} {d['stage']}: gflops {d['gflops']}, flops / median_ns = {gflops!r}")


@case("schema: samples.csv has `repetitions` rows per timing row; their median is median_ns")
def _():
    rf = base_run()
    ns = {}
    for key, row in zip(rf.sample_keys(), rf.samples.rows):
        ns.setdefault(key, []).append(row)
    for key, d in zip(rf.timing_keys(), rf.timing.dicts()):
        rows = ns.pop(key, [])
        if len(rows) != int(d["repetitions"]):
            rf.fail(f"{key[0]} {key[-1]}: {len(rows)} sample rows, repetitions is {d['repetitions']}")
        reps = sorted(int(r[rf.samples.col("repetition")]) for r in rows)
        if reps != list(range(len(rows))):
            rf.fail(f"{key[0]} {key[-1]}: repetition numbers {reps}, expected 0..{len(rows) - 1}")
        values = [float(r[rf.samples.col("ns")]) for r in rows]
        if not close(statistics.median(values), float(d["median_ns"])):
            rf.fail(f"{key[0]} {key[-1]}: median of samples {statistics.median(values)!r} != median_ns "
                    f"{d['median_ns']}")
    if ns:
        rf.fail(f"samples.csv has keys not in timing.csv: {list(ns)[:2]}")


@case("schema: entropy.csv one row per (point, scorer), mask_leak_max 0, entropy_norm_mean in (0, 1]")
def _():
    rf = base_run()
    keys = rf.entropy_keys()
    expected = {(s, L) for s in ("dot", "general") for L in ("4", "8")}
    got = [(k[0], k[3]) for k in keys]
    if sorted(got) != sorted(expected):
        rf.fail(f"entropy rows for (scorer, src_len) {got}, expected one each of {sorted(expected)}")
    for d in rf.entropy.dicts():
        bad = [c for c in ENTROPY_VALUES if not is_number(d[c])]
        if bad:
            rf.fail(f"{d['scorer']} L={d['src_len']}: not finite numbers: {bad}")
        if float(d["mask_leak_max"]) != 0:
            rf.fail(f"{d['scorer']} L={d['src_len']}: mask_leak_max {d['mask_leak_max']}, expected 0")
        if not 0 < float(d["entropy_norm_mean"]) <= 1:
            rf.fail(f"{d['scorer']} L={d['src_len']}: entropy_norm_mean {d['entropy_norm_mean']} not in (0, 1]")


@case("schema: with --len-min padding, additive_linear has drift_mean exactly 0 and no mask leak")
def _():
    rf = padded_run()
    rows = {d["scorer"]: d for d in rf.entropy.dicts()}
    if sorted(rows) != sorted(["additive_linear", "dot", "additive"]) or len(rf.entropy.rows) != 3:
        rf.fail(f"expected one entropy row each for additive_linear, dot, additive; got {list(rows)}")
    for d in rows.values():
        if d["len_min"] != "4":
            rf.fail(f"{d['scorer']}: len_min cell {d['len_min']!r}, expected 4")
        if float(d["mask_leak_max"]) != 0:
            rf.fail(f"{d['scorer']}: mask_leak_max {d['mask_leak_max']} with padding, expected 0")
        if not 0 < float(d["entropy_norm_mean"]) <= 1:
            rf.fail(f"{d['scorer']}: entropy_norm_mean {d['entropy_norm_mean']} not in (0, 1]")
    if float(rows["additive_linear"]["drift_mean"]) != 0.0:
        rf.fail(f"additive_linear drift_mean {rows['additive_linear']['drift_mean']!r}, expected exactly 0")
    if float(rows["dot"]["drift_mean"]) == 0:
        rf.fail("dot drift_mean is 0; drift is not being measured")


@case("schema: meta.json has build/git_commit, build/onednn_version, command, grid, status complete, start/end")
def _():
    rf = base_run()
    m = rf.meta
    build = m.get("build")
    if not isinstance(build, dict):
        rf.fail(f"meta.json has no 'build' object: {sorted(m)}")
    for field in ("git_commit", "onednn_version"):
        if not isinstance(build.get(field), str) or not build[field]:
            rf.fail(f"meta.json build.{field} is {build.get(field)!r}, expected a non-empty string")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?.*", build["onednn_version"]):
        rf.fail(f"build.onednn_version {build['onednn_version']!r} is not a version")
    if not isinstance(m.get("command"), str) or not m["command"].startswith("attnbench run") \
            or "--src-len 4,8" not in m["command"]:
        rf.fail(f"meta.json command {m.get('command')!r}, expected the command line of the run")
    if not isinstance(m.get("grid"), list) or len(m["grid"]) != 2:
        rf.fail(f"meta.json grid {m.get('grid')!r}, expected the two points")
    if m.get("status") != "complete":
        rf.fail(f"meta.json status {m.get('status')!r}, expected 'complete'")
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"
    for field in ("start_utc", "end_utc"):
        if not isinstance(m.get(field), str) or not re.fullmatch(stamp, m[field]):
            rf.fail(f"meta.json {field} is {m.get(field)!r}, expected a UTC timestamp like 2025-01-31T12:00:00Z")
    if m["end_utc"] < m["start_utc"]:
        rf.fail(f"end_utc {m['end_utc']} before start_utc {m['start_utc']}")


@case("schema: each repro cell, run with --out, measures exactly that (point, scorer) again")
def _():
    rf = base_run()
    by_repro = {}
    for key, d in zip(rf.timing_keys(), rf.timing.dicts()):
        by_repro.setdefault(d["repro"], set()).add(key)
    if len(by_repro) != 4:
        rf.fail(f"expected 4 distinct repro commands (one per point x scorer), got {len(by_repro)}")
    for n, (repro, keys) in enumerate(sorted(by_repro.items())):
        argv = shlex.split(repro)
        if argv[:2] != ["attnbench", "run"]:
            rf.fail(f"repro {repro!r} does not start with 'attnbench run'")
        if len({k[:-1] for k in keys}) != 1:
            rf.fail(f"repro {repro!r} is shared by different (point, scorer) rows")
        out = tmp(f"repro{n}")
        r = run_ok(*argv[1:], "--out", out)
        again = load(out, r)
        got = set(again.timing_keys())
        if got != keys or len(again.timing.rows) != len(keys):
            r.fail(f"timing.csv keys {sorted(got)[:2]}... ({len(again.timing.rows)} rows) differ from the "
                   f"{len(keys)} rows carrying this repro in {rf.folder}")
        statuses = {d["status"] for d in again.timing.dicts()}
        if statuses != {"ok"}:
            r.fail(f"statuses {statuses}, expected ok")


@case("schema: the repro of a padded (--len-min) additive_linear row reproduces its timing and entropy keys")
def _():
    rf = padded_run()
    rows = [d for d in rf.timing.dicts() if d["scorer"] == "additive_linear"]
    repros = {d["repro"] for d in rows}
    if len(repros) != 1:
        rf.fail(f"additive_linear rows carry {len(repros)} different repro commands, expected 1")
    argv = shlex.split(repros.pop())
    out = tmp("repro_padded")
    r = run_ok(*argv[1:], "--out", out)
    again = load(out, r)
    keys = {k for k in rf.timing_keys() if k[0] == "additive_linear"}
    if set(again.timing_keys()) != keys or len(again.timing.rows) != len(keys):
        r.fail(f"timing keys differ from the additive_linear rows of {rf.folder}")
    ekeys = [k for k in rf.entropy_keys() if k[0] == "additive_linear"]
    if again.entropy_keys() != ekeys:
        r.fail(f"entropy keys {again.entropy_keys()} differ from {ekeys} (len_min, seed, init must be kept)")


# 2. Grid flags ---------------------------------------------------------------------------------

def dry_points(r):
    """The numbered point lines of --dry-run output."""
    return [line for line in r.stdout.splitlines() if re.match(r"^\s*\d+\s", line)]


for _args, _points in ((["--src-len", "4,8,12"], 3),
                       (["--src-len", "10:30:10"], 3),
                       (["--batch", "4:16:*2"], 3),
                       (["--src-len", "10:30:10", "--batch", "4:16:*2", "--tgt-len", "2,3"], 18)):
    @case(f"grid: --dry-run {' '.join(_args)} lists {_points} points and writes nothing")
    def _(args=_args, points=_points):
        out = tmp()
        r = run_ok("run", *args, "--dry-run", "--out", out)
        lines = dry_points(r)
        if len(lines) != points:
            r.fail(f"{len(lines)} point lines, expected {points}: {r.stdout[:400]!r}")
        if not re.search(rf"^total: {points} points", r.stdout, re.M):
            r.fail(f"no 'total: {points} points' line")
        if os.path.exists(out):
            r.fail(f"--dry-run created {out}")


@case("grid: a real run of --src-len 10:30:10 --batch 4:16:*2 --tgt-len 2 has the 9 x 8 expected keys")
def _():
    rf = sweep("grid9", "--src-len", "10:30:10", "--batch", "4:16:*2", "--tgt-len", 2, "--scorer", "dot")
    expected = {(b, L, s) for b in ("4", "8", "16") for L in ("10", "20", "30") for s in STAGES}
    got = [rf.timing.cells(row, ["batch", "src_len", "stage"]) for row in rf.timing.rows]
    if sorted(got) != sorted(expected):
        rf.fail(f"(batch, src_len, stage) of the rows {sorted(set(got))[:4]}... ({len(got)} rows) "
                f"differ from the 72 expected")
    if {row[rf.timing.col("tgt_len")] for row in rf.timing.rows} != {"2"}:
        rf.fail("tgt_len is not 2 in every row")
    if rf.meta.get("points") not in (None, 9) or len(rf.meta.get("grid", [])) != 9:
        rf.fail(f"meta.json: points {rf.meta.get('points')}, grid of {len(rf.meta.get('grid', []))}; expected 9")


@case("grid: --scorer all runs the 5 scorers (dry-run and real run)")
def _():
    r = run_ok("run", "--src-len", 4, "--scorer", "all", "--dry-run")
    lines = dry_points(r)
    if len(lines) != 1 or not all(re.search(rf"\b{s}\b", lines[0]) for s in SCORERS):
        r.fail(f"expected one point naming all of {SCORERS}: {lines}")
    rf = sweep("all5", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "all")
    got = [row[0] for row in rf.timing.rows[::8]]
    if sorted(got) != sorted(SCORERS) or len(rf.timing.rows) != 40:
        rf.fail(f"scorers {got} ({len(rf.timing.rows)} rows), expected each of {SCORERS} once (40 rows)")
    if sorted(k[0] for k in rf.entropy_keys()) != sorted(SCORERS):
        rf.fail(f"entropy scorers {[k[0] for k in rf.entropy_keys()]}, expected {SCORERS}")


# 3. Scenario files ------------------------------------------------------------------------------

def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


@case("scenario: comments, ';' lists and ranges run via --scenario PATH; meta.json records path and sha256")
def _():
    path = write(tmp("sweep.csv"), "# a small sweep\n"
                                   "# two blocks\n"
                                   "scorer,src_len,batch,tgt_len\n"
                                   "dot;general,4:8:4,2,2\n"
                                   "additive_linear,6,1;2,3\n")
    out = tmp("scenario_run")
    r = run_ok("run", "--scenario", path, *FAST, "--quiet", "--out", out)
    rf = load(out, r)
    cells = sorted({rf.timing.cells(row, ["scorer", "src_len", "batch", "tgt_len"]) for row in rf.timing.rows})
    expected = sorted([(s, L, "2", "2") for s in ("dot", "general") for L in ("4", "8")] +
                      [("additive_linear", "6", b, "3") for b in ("1", "2")])
    if cells != expected:
        r.fail(f"(scorer, src_len, batch, tgt_len) {cells}, expected {expected}")
    check_whole(rf)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    files = rf.meta.get("scenario_files")
    if not isinstance(files, list) or len(files) != 1:
        r.fail(f"meta.json scenario_files {files!r}, expected one entry")
    entry = files[0]
    if not isinstance(entry, dict) or os.path.realpath(entry.get("path", "")) != os.path.realpath(path):
        r.fail(f"meta.json scenario_files[0] {entry!r} does not record path {path}")
    if entry.get("sha256") != digest:
        r.fail(f"meta.json sha256 {entry.get('sha256')!r}, hashlib says {digest}")
    if rf.meta.get("scenario") != "sweep":
        r.fail(f"meta.json scenario {rf.meta.get('scenario')!r}, expected the file's stem 'sweep'")


@case("scenario: bad value on line 4 (after 2 comments) -> exit 2, 'PATH:4: column 'src_len': bad value 'x'")
def _():
    home = tmp("home_bad")
    os.makedirs(home)
    path = write(tmp("bad_value.csv"), "# first comment\n# second comment\nscorer,src_len\ndot,x\n")
    out = tmp("bad_value_run")
    r = run("run", "--scenario", path, *FAST, "--out", out, env={"ATTNBENCH_HOME": home})
    one_error_line(r, [])
    prefix = f"{path}:4: column 'src_len': bad value 'x'"
    line = r.stderr.strip()
    if not (line.startswith(prefix) or line.startswith("attnbench: error: " + prefix)):
        r.fail(f"stderr {line!r} does not start with {prefix!r} (after an optional 'attnbench: error: ')")
    if os.path.exists(out):
        r.fail(f"created the run folder {out}")
    r = run("run", "--scenario", path, *FAST, env={"ATTNBENCH_HOME": home})  # default folder: results/...
    one_error_line(r, [re.escape(prefix)])
    if os.listdir(home):
        r.fail(f"wrote {os.listdir(home)} under ATTNBENCH_HOME")


@case("scenario: unknown column -> exit 2, one line 'PATH:3: unknown column' listing the known ones")
def _():
    path = write(tmp("bad_column.csv"), "# comment\n\nscorer,bogus\ndot,1\n")
    out = tmp("bad_column_run")
    r = run("run", "--scenario", path, "--out", out)
    one_error_line(r, [re.escape(path) + r":\d+: unknown column 'bogus'", r"\bsrc_len\b", r"\bbatch\b"])
    m = re.search(re.escape(path) + r":(\d+):", r.stderr)
    if m.group(1) != "3":
        r.fail(f"names line {m.group(1)}, the header is on line 3")
    if os.path.exists(out):
        r.fail(f"created the run folder {out}")


@case("scenario: unknown name -> exit 2 listing the available scenarios")
def _():
    home = tmp("home_names")
    os.makedirs(os.path.join(home, "scenarios"))
    write(os.path.join(home, "scenarios", "alpha.csv"), "scorer\ndot\n")
    write(os.path.join(home, "scenarios", "beta.csv"), "scorer\ndot\n")
    r = run("run", "--scenario", "no_such_scenario", env={"ATTNBENCH_HOME": home})
    one_error_line(r, [r"no_such_scenario", r"\balpha\b", r"\bbeta\b"])
    if os.path.exists(os.path.join(home, "results")):
        r.fail("created results/ under ATTNBENCH_HOME")
    r = run_ok("run", "--scenario", "alpha", *FAST, "--quiet",
               env={"ATTNBENCH_HOME": home})  # a name resolves in $ATTNBENCH_HOME/scenarios
    folders = os.listdir(os.path.join(home, "results", "alpha")) if os.path.isdir(
        os.path.join(home, "results", "alpha")) else []
    if len(folders) != 1:
        r.fail(f"expected one run folder under results/alpha/, got {folders}")


@case("scenario: grid flags mixed with --scenario -> exit 2 naming the flag")
def _():
    path = write(tmp("mix.csv"), "scorer\ndot\n")
    out = tmp("mix_run")
    r = run("run", "--scenario", path, "--src-len", 4, "--out", out)
    one_error_line(r, [r"--src-len", r"--scenario"])
    if os.path.exists(out):
        r.fail(f"created the run folder {out}")


# 4. Errors ----------------------------------------------------------------------------------------

def _not_a_dir():
    blocker = tmp("regular_file")
    write(blocker, "not a folder\n")
    return os.path.join(blocker, "run")


# (case name, the bad flag and value, regexes stderr must match); the other flags are valid
RUN_ERRORS = [
    ("--shard 3/2", ["--shard", "3/2"], [r"--shard", r"3/2"]),
    ("--shard x", ["--shard", "x"], [r"--shard", r"'x'|\bx\b"]),
    ("--shard 0/2", ["--shard", "0/2"], [r"--shard", r"0/2"]),
    ("--repetitions 0", ["--repetitions", "0"], [r"--repetitions", r"\b0\b"]),
    ("--min-time 0", ["--min-time", "0"], [r"--min-time", r"\b0"]),
    ("--min-time -1", ["--min-time", "-1"], [r"--min-time", r"-1"]),
    ("--src-len 0", ["--src-len", "0"], [r"--src-len", r"\b0\b"]),
    ("--src-len 8:4", ["--src-len", "8:4"], [r"--src-len", r"8:4"]),
    ("--scorer nope", ["--scorer", "nope"], [r"--scorer", r"\bnope\b", r"\bdot\b"]),
    ("--enc-dim 15", ["--enc-dim", "15"], [r"--enc-dim", r"\b15\b"]),
    ("--max-memory -1", ["--max-memory", "-1"], [r"--max-memory", r"-1"]),
]

for _name, _args, _patterns in RUN_ERRORS:
    @case(f"error: run {_name} -> exit 2, one stderr line naming it, nothing written")
    def _(args=_args, patterns=_patterns):
        home = tmp()
        os.makedirs(home)
        out = tmp()
        valid = ["--batch", "2", "--src-len", "4", "--scorer", "dot", *FAST]
        for flag in args[::2]:  # drop the valid value of the flag under test
            if flag in valid:
                at = valid.index(flag)
                del valid[at:at + 2]
        r = run("run", *valid, *args, "--quiet", "--out", out, env={"ATTNBENCH_HOME": home})
        one_error_line(r, patterns)
        if os.path.exists(out):
            r.fail(f"created {out}")
        if os.listdir(home):
            r.fail(f"wrote {os.listdir(home)} under ATTNBENCH_HOME")


@case("error: run --out under a regular file -> exit 2, one line naming the path, nothing written")
def _():
    out = _not_a_dir()
    r = run("run", "--batch", 2, "--src-len", 4, "--scorer", "dot", *FAST, "--quiet", "--out", out)
    one_error_line(r, [re.escape(out)])
    with open(os.path.dirname(out), encoding="utf-8") as f:
        if f.read() != "not a folder\n":
            r.fail("the regular file was changed")


@case("error: run --out a folder holding a run -> exit 2 naming it; the run is untouched")
def _():
    rf = sweep("occupied", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "dot")
    before = {}
    for name in RUN_FILES:
        with open(os.path.join(rf.folder, name), "rb") as f:
            before[name] = f.read()
    res = run("run", "--batch", 2, "--src-len", 8, "--scorer", "dot", *FAST, "--quiet", "--out", rf.folder)
    one_error_line(res, [re.escape(rf.folder), r"--resume"])
    for name in RUN_FILES:
        with open(os.path.join(rf.folder, name), "rb") as f:
            if f.read() != before[name]:
                res.fail(f"{name} of the existing run was changed")
    if sorted(os.listdir(rf.folder)) != sorted(RUN_FILES):
        res.fail(f"the folder now holds {sorted(os.listdir(rf.folder))}")


@case("error: run --resume of a folder without meta.json -> exit 2 naming it, nothing written")
def _():
    folder = tmp("not_a_run")
    os.makedirs(folder)
    r = run("run", "--resume", folder)
    one_error_line(r, [re.escape(folder), r"meta\.json", r"--resume"])
    if os.listdir(folder):
        r.fail(f"wrote {os.listdir(folder)} into {folder}")
    missing = tmp("no_such_folder")
    r = run("run", "--resume", missing)
    one_error_line(r, [re.escape(missing), r"--resume"])
    if os.path.exists(missing):
        r.fail(f"created {missing}")


@case("error: run --resume with grid flags -> exit 2 naming --resume")
def _():
    rf = sweep("resume_flags", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "dot")
    r = run("run", "--resume", rf.folder, "--src-len", 8)
    one_error_line(r, [r"--resume"])


# 5. Memory guard -----------------------------------------------------------------------------------

@case("memory guard: --max-memory 0.000001 -> skipped rows with empty values, exit 0, no entropy/samples")
def _():
    rf = sweep("skipped", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,general", "--max-memory", "0.000001")
    t = rf.timing
    if len(t.rows) != 32:
        rf.fail(f"expected 32 timing rows (every key, skipped), got {len(t.rows)}")
    empty = [c for c in TIMING_VALUES if c not in ("status", "repro")]
    for d in t.dicts():
        if not d["status"].startswith("skipped: needs") or "--max-memory" not in d["status"]:
            rf.fail(f"status {d['status']!r}, expected 'skipped: needs ... --max-memory ...'")
        filled = [c for c in empty if d[c] != ""]
        if filled:
            rf.fail(f"{d['scorer']} {d['stage']}: value cells not empty: {[(c, d[c]) for c in filled]}")
        if not d["repro"].startswith("attnbench run "):
            rf.fail(f"repro {d['repro']!r} of a skipped row is not a command")
    stages = [d["stage"] for d in t.dicts()]
    if stages != STAGES * 4:
        rf.fail("skipped rows do not list the 8 stages per (point, scorer) in order")
    if rf.entropy.rows or rf.samples.rows:
        rf.fail(f"{len(rf.entropy.rows)} entropy rows and {len(rf.samples.rows)} sample rows, expected none")
    if rf.meta.get("status") != "complete":
        rf.fail(f"meta.json status {rf.meta.get('status')!r}, expected complete")


# 6. Interrupt and resume -----------------------------------------------------------------------------

# Six points of two scorers; --min-time 0.01 makes a point take ~0.3 s so a signal lands mid-run.
SLOW_GRID = ["--batch", "2", "--src-len", "4:24:4", "--tgt-len", "2", "--scorer", "dot,general"]
SLOW = ["--repetitions", str(REPS), "--min-time", "0.01"]


def data_rows(path):
    try:
        with open(path, encoding="utf-8") as f:
            return max(0, len(f.read().splitlines()) - 1)
    except OSError:
        return 0


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def start_and_signal(out, signals, grid=SLOW_GRID, during_write=False, pause=0.05, timeout=30):
    """Starts a slow run of `grid` into `out`, waits for its first timing row, then sends SIGINT `signals`
    times: `pause` apart, or (during_write) the second one the moment the next point's rows start to reach
    samples.csv. Returns (Result, seconds from the last signal to exit)."""
    args = ["run", *grid, *SLOW, "--out", out]
    samples = os.path.join(out, "samples.csv")
    with cli.Background(args, timeout) as job:
        job.wait_until(lambda: data_rows(os.path.join(out, "timing.csv")) >= 1, "timing row", poll=0.01)
        size = file_size(samples)
        for n in range(signals):
            if n and during_write:
                while file_size(samples) == size and job.proc.poll() is None and time.monotonic() < job.deadline:
                    pass  # busy: the window between the appends to samples.csv and timing.csv is short
            elif n:
                time.sleep(pause)
            size = file_size(samples)
            job.proc.send_signal(signal.SIGINT)
        return job.finish()


def reference_run(grid=SLOW_GRID):
    """An uninterrupted run of `grid` (its keys do not depend on the bench settings)."""
    return cached(("reference",) + tuple(grid), lambda: sweep(None, *grid))


def check_resumed(folder, grid=SLOW_GRID):
    r = run_ok("run", "--resume", folder, "--quiet")
    rf = load(folder, r)
    check_whole(rf)
    ref = reference_run(grid)
    if set(rf.timing_keys()) != set(ref.timing_keys()) or len(rf.timing.rows) != len(ref.timing.rows):
        r.fail(f"after resume: {len(rf.timing.rows)} timing rows, {len(set(rf.timing_keys()))} keys; the "
               f"uninterrupted run has {len(ref.timing.rows)} - key sets differ")
    if sorted(rf.entropy_keys()) != sorted(ref.entropy_keys()):
        r.fail("after resume: entropy keys differ from the uninterrupted run's")
    if rf.meta.get("status") != "complete":
        r.fail(f"meta.json status {rf.meta.get('status')!r} after resume, expected complete")
    statuses = {d["status"] for d in rf.timing.dicts()}
    if statuses != {"ok"}:
        r.fail(f"statuses after resume {statuses}")
    return rf


@case("interrupt: SIGINT -> exit 130, status interrupted, whole rows; --resume completes the same keys")
def _():
    out = tmp("interrupted")
    r, waited = start_and_signal(out, 1)
    if r.returncode != EXIT_INTERRUPTED:
        r.fail(f"expected exit {EXIT_INTERRUPTED} after SIGINT; got {r.brief()}")
    rf = load(out, r)
    if rf.meta.get("status") != "interrupted":
        r.fail(f"meta.json status {rf.meta.get('status')!r}, expected 'interrupted'")
    check_whole(rf)
    done = len(rf.timing.rows) // 16
    if not 1 <= done < 6:
        r.fail(f"{done} of 6 points in timing.csv after the interrupt; expected at least 1 and fewer than 6")
    if "--resume" not in r.stderr:
        r.fail(f"stderr does not say how to continue (--resume): {r.stderr[-300:]!r}")
    resumed = check_resumed(out)
    if not resumed.meta.get("resumed_utc"):
        r.fail("meta.json after resume has no resumed_utc")


@case("interrupt: a second SIGINT abandons the point: exit 130 promptly, files whole, --resume completes")
def _():
    out = tmp("abandoned")
    r, waited = start_and_signal(out, 2)
    if r.returncode != EXIT_INTERRUPTED:
        r.fail(f"expected exit {EXIT_INTERRUPTED} after two SIGINTs; got {r.brief()}")
    if waited > 5:
        r.fail(f"took {waited:.1f} s to exit after the second SIGINT")
    rf = load(out, r)
    check_whole(rf)
    if len(rf.timing.rows) >= 6 * 16:
        r.fail("all 6 points finished; the second SIGINT did not stop the run")
    check_resumed(out)


# With --threads 2 the OpenMP worker threads exist; a signal must not cut a point's rows in half there either.
THREADED_GRID = ["--batch", "2", "--src-len", "4,8,12", "--tgt-len", "2", "--scorer", "dot", "--threads", "2"]


@case("interrupt: --threads 2, second SIGINT while a point's rows are written: files whole, resume exact")
def _():
    for attempt in range(3):  # the window is a few fsyncs long: try it more than once
        out = tmp()
        r, waited = start_and_signal(out, 2, grid=THREADED_GRID, during_write=True)
        if r.returncode != EXIT_INTERRUPTED:
            r.fail(f"expected exit {EXIT_INTERRUPTED} after two SIGINTs; got {r.brief()}")
        rf = load(out, r)
        try:
            check_whole(rf)
        except Failure as failure:
            raise Failure(r.command, f"attempt {attempt + 1}, after the exit: {failure.message} "
                                     f"(a point's samples/entropy rows without its timing rows; --resume measures "
                                     f"it again and duplicates them)")
    check_resumed(out, THREADED_GRID)


@case("interrupt: --resume of a run from another host is refused (exit 2, --force), accepted with --force")
def _():
    rf = sweep("other_host", "--batch", 2, "--src-len", "4", "--tgt-len", 2, "--scorer", "dot")
    meta_path = os.path.join(rf.folder, "meta.json")
    meta = dict(rf.meta)
    meta["build"] = dict(meta["build"], host="some-other-host.example")
    write(meta_path, json.dumps(meta, indent=2) + "\n")
    with open(meta_path, "rb") as f:
        before = f.read()
    r = run("run", "--resume", rf.folder, "--quiet")
    one_error_line(r, [r"--force", r"host"])
    with open(meta_path, "rb") as f:
        if f.read() != before:
            r.fail("the refused --resume changed meta.json")
    r = run_ok("run", "--resume", rf.folder, "--force", "--quiet")
    again = load(rf.folder, r)
    check_whole(again)
    if sorted(again.timing_keys()) != sorted(rf.timing_keys()):
        r.fail("resuming a complete run changed its timing keys")
    if again.meta.get("status") != "complete":
        r.fail(f"meta.json status {again.meta.get('status')!r}, expected complete")


# 7. Shards and merge ---------------------------------------------------------------------------------

SHARD_GRID = ["--batch", "2", "--src-len", "4:12:4", "--tgt-len", "2,3", "--scorer", "dot"]


@case("shard: 1/3, 2/3, 3/3 are disjoint; merge gives the unsharded run's keys")
def _():
    whole = sweep("unsharded", *SHARD_GRID)
    shards = [sweep(f"shard{k}", *SHARD_GRID, "--shard", f"{k}/3") for k in (1, 2, 3)]
    sets = [set(s.timing_keys()) for s in shards]
    for k, s in enumerate(sets, start=1):
        if not s:
            shards[k - 1].fail("shard has no timing rows")
    for a in range(3):
        for b in range(a + 1, 3):
            if sets[a] & sets[b]:
                shards[b].fail(f"shards {a + 1}/3 and {b + 1}/3 share keys {sorted(sets[a] & sets[b])[:2]}")
    if set().union(*sets) != set(whole.timing_keys()):
        shards[2].fail("the shards together do not cover the unsharded run's keys")
    out = tmp("merged")
    r = run_ok("merge", *[s.folder for s in shards], "--out", out)
    merged = load(out, r)
    check_whole(merged)
    if sorted(merged.timing_keys()) != sorted(whole.timing_keys()):
        r.fail(f"merged timing keys ({len(merged.timing.rows)} rows) differ from the unsharded run's "
               f"({len(whole.timing.rows)})")
    if sorted(merged.entropy_keys()) != sorted(whole.entropy_keys()):
        r.fail("merged entropy keys differ from the unsharded run's")
    if merged.meta.get("status") != "complete":
        r.fail(f"merged meta.json status {merged.meta.get('status')!r}, expected complete")


@case("shard: merging runs of different grids (--src-len) is refused: exit 2 naming the field")
def _():
    first = sweep("grid_a", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "dot", "--shard", "1/2")
    second = sweep("grid_b", "--batch", 2, "--src-len", 8, "--tgt-len", 2, "--scorer", "dot", "--shard", "2/2")
    out = tmp("merged_bad")
    r = run("merge", first.folder, second.folder, "--out", out)
    one_error_line(r, [r"\bgrid\b", re.escape(second.folder)])
    if os.path.exists(os.path.join(out, "timing.csv")):
        r.fail(f"wrote {out}/timing.csv")


# 8. Threads -----------------------------------------------------------------------------------------

for _threads in (1, 2):
    @case(f"threads: --threads {_threads} makes oneDNN run with nthr:{_threads} (DNNL_VERBOSE=1)")
    def _(threads=_threads):
        out = tmp(f"threads{threads}")
        r = run_ok("run", "--batch", 2, "--src-len", 4, "--tgt-len", 1, "--scorer", "dot", "--threads", threads,
                   *FAST, "--quiet", "--out", out, env={"DNNL_VERBOSE": "1", "ONEDNN_VERBOSE": "1"})
        found = re.findall(r"^(?:dnnl|onednn)_verbose,info,cpu,runtime:[^,\n]*,nthr:(\d+)", r.stdout + r.stderr,
                           re.M)
        if not found:
            r.fail("no oneDNN verbose line '..._verbose,info,cpu,runtime:...,nthr:N' in the output")
        if any(int(n) != threads for n in found):
            r.fail(f"oneDNN reports nthr:{','.join(found)}, expected nthr:{threads}")
        rf = load(out, r)
        if {row[rf.timing.col("threads")] for row in rf.timing.rows} != {str(threads)}:
            r.fail(f"timing.csv threads column is not {threads} in every row")


# 9. Progress ------------------------------------------------------------------------------------------

@case("progress: on a pipe, one plain line per point (no \\r, no ESC); summary names every scorer")
def _():
    rf = sweep("progress", "--batch", 2, "--src-len", "4,8", "--tgt-len", 2, "--scorer", "dot,general,additive",
                quiet=False)
    r = rf.result
    for bad, name in (("\r", "\\r"), ("\x1b", "ESC")):
        if bad in r.stderr or bad in r.stdout:
            r.fail(f"output contains {name} although stderr is a pipe: {r.stderr[:200]!r}")
    progress = [line for line in r.stderr.splitlines() if re.match(r"^\[\d+/\d+\]", line)]
    if [line.split()[0] for line in progress] != ["[1/2]", "[2/2]"]:
        r.fail(f"expected progress lines [1/2] and [2/2], got {progress}")
    for scorer in ("dot", "general", "additive"):
        if not re.search(rf"^{scorer}\s", r.stdout, re.M):
            r.fail(f"summary on stdout has no row for {scorer}: {r.stdout[:400]!r}")
    if not re.search(r"^results: " + re.escape(rf.folder), r.stdout, re.M):
        r.fail("stdout does not name the results folder")


@case("progress: --quiet prints no progress lines")
def _():
    r = base_run().result
    if any(re.match(r"^\[\d+/\d+\]", line) or "ETA" in line for line in r.stderr.splitlines()):
        r.fail(f"--quiet printed progress: {r.stderr[:300]!r}")
    for scorer in ("dot", "general"):
        if not re.search(rf"^{scorer}\s", r.stdout, re.M):
            r.fail(f"summary on stdout has no row for {scorer}")


# 10. compare ------------------------------------------------------------------------------------------

def second_run():
    return cached("second", lambda: sweep("second", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,general"))


@case("compare RUN1 RUN2: a table row per timing row, geomean per scorer")
def _():
    a, b = base_run(), second_run()
    r = run_ok("compare", a.folder, b.folder)
    lines = r.stdout.splitlines()
    header = next((n for n, line in enumerate(lines) if line.split()[:1] == ["scorer"]), None)
    if header is None or "new/old" not in lines[header]:
        r.fail(f"no table header starting with 'scorer' and naming new/old: {r.stdout[:300]!r}")
    rows = []
    for line in lines[header + 1:]:
        if not line.split() or line.split()[0] not in ("dot", "general"):
            break
        rows.append(line)
    if len(rows) != len(a.timing.rows):
        r.fail(f"{len(rows)} table rows, expected {len(a.timing.rows)} (one per timing row)")
    for scorer in ("dot", "general"):
        if not re.search(rf"^geomean new/old {scorer}: \d+\.\d+ over 16 rows", r.stdout, re.M):
            r.fail(f"no 'geomean new/old {scorer}: ... over 16 rows' line")


@case("compare RUN1 RUN2 --csv: header and one row per matched timing row")
def _():
    a, b = base_run(), second_run()
    r = run_ok("compare", a.folder, b.folder, "--csv")
    rows = list(csv.reader(io.StringIO(r.stdout)))
    if not rows or rows[0][:len(TIMING_KEY)] != TIMING_KEY:
        r.fail(f"header {rows[0] if rows else None} does not start with the timing key columns")
    body = rows[1:]
    if len(body) != len(a.timing.rows):
        r.fail(f"{len(body)} rows, expected {len(a.timing.rows)}")
    if sorted(tuple(row[:len(TIMING_KEY)]) for row in body) != sorted(a.timing_keys()):
        r.fail("the rows' keys differ from timing.csv's")
    ratio = rows[0].index("ratio") if "ratio" in rows[0] else None
    if ratio is None or not all(is_number(row[ratio]) and float(row[ratio]) > 0 for row in body):
        r.fail("no positive numeric 'ratio' column")


@case("compare RUN --baseline dot: rows for the other scorers")
def _():
    a = base_run()
    r = run_ok("compare", a.folder, "--baseline", "dot")
    if not re.search(r"^geomean new/old general: \d+\.\d+ over 16 rows", r.stdout, re.M):
        r.fail(f"no 'geomean new/old general: ... over 16 rows' line: {r.stdout[-300:]!r}")
    r = run_ok("compare", a.folder, "--baseline", "dot", "--csv")
    body = list(csv.reader(io.StringIO(r.stdout)))[1:]
    if len(body) != 16 or {row[0] for row in body} != {"general"}:
        r.fail(f"{len(body)} rows of scorers {sorted({row[0] for row in body})}, expected 16 of general")


@case("compare: a missing run folder -> exit 2 naming it")
def _():
    missing = tmp("missing_run")
    r = run("compare", base_run().folder, missing)
    one_error_line(r, [re.escape(missing)])


# ---------------------------------------------------------------------------- main

def make_tmp():
    global TMP
    TMP = tempfile.mkdtemp(prefix="attnbench_run_test_")


if __name__ == "__main__":
    sys.exit(cli.main(sys.argv, setup=make_tmp, teardown=lambda: shutil.rmtree(TMP, ignore_errors=True)))
