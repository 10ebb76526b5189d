"""Run tests: `attnbench run`, `merge` and `compare` on real (tiny) sweeps, checked against the
output contract (the columns and stages of `attnbench list --json`, shared/spec/csv-schema.md).

Every run writes into the case's temporary folder, or is a sweep shared by several cases and made
once per build (read-only: copied before it is changed). Runs are tiny (--repetitions 2
--min-time 0.002). Run by CTest one case per process, or:
    /usr/bin/python3 -m pytest tests/run_test.py --attnbench build/attnbench
"""

import csv
import hashlib
import io
import json
import math
import os
import re
import shlex
import signal
import statistics
import time

import pytest

RUN_CSVS = ["timing.csv", "samples.csv", "entropy.csv"]
RUN_FILES = RUN_CSVS + ["meta.json", "journal"]  # journal: the commit record of each point

REPS = 2
FAST = ["--repetitions", str(REPS), "--min-time", "0.002"]  # every run but the interrupted ones
EXIT_INTERRUPTED = 130


class Schema:
    """The columns and stages of the binary's `list --json`."""

    def __init__(self, lists):
        files = lists["files"]
        self.timing_key = files["timing.csv"]["key"]
        self.timing_values = files["timing.csv"]["values"]
        self.entropy_key = files["entropy.csv"]["key"]
        self.entropy_values = files["entropy.csv"]["values"]
        self.stages = [stage["name"] for stage in lists["stages"] if stage["default"]]  # what a run times unasked
        self.sequence_stages = {stage["name"] for stage in lists["stages"] if stage["per"] == "sequence"}
        self.scorers = [scorer["name"] for scorer in lists["scorers"]]
        # The entropy key's cells that a timing key also has, as positions in each (scorer, dtype, batch, ...).
        shared = [c for c in self.entropy_key if c in self.timing_key]
        self.shared_in_timing = [self.timing_key.index(c) for c in shared]
        self.shared_in_entropy = [self.entropy_key.index(c) for c in shared]


@pytest.fixture(scope="session")
def schema(lists):
    return Schema(lists)


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


def fail(command, message):
    pytest.fail(f"`{command}`: {message}" if command else message, pytrace=False)


def read_table(path, command=None):
    """Parses one run CSV (RFC 4180): one header line, every row with the header's width, ends in a newline."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        fail(command, f"cannot read {path}: {error}")
    text = data.decode("utf-8")
    if not text.endswith("\n"):
        fail(command, f"{path}: does not end with a newline (a partial line?): ...{text[-120:]!r}")
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    if not rows:
        fail(command, f"{path}: empty, expected a header line")
    header, body = rows[0], rows[1:]
    for n, row in enumerate(body, start=2):
        if len(row) != len(header):
            fail(command, f"{path}: row {n} has {len(row)} cells, the header {len(header)}: {row[:14]}")
    return Table(path, header, body)


class Run:
    def __init__(self, folder, result, schema):
        self.folder = folder
        self.result = result
        self.schema = schema
        self.command = result.command if result else None
        self.timing = read_table(os.path.join(folder, "timing.csv"), self.command)
        self.samples = read_table(os.path.join(folder, "samples.csv"), self.command)
        self.entropy = read_table(os.path.join(folder, "entropy.csv"), self.command)
        try:
            with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
                self.meta = json.load(f)
        except (OSError, ValueError) as error:
            fail(self.command, f"meta.json: {error}")

    def fail(self, message):
        fail(self.command, message)

    def timing_keys(self):
        return [self.timing.cells(row, self.schema.timing_key) for row in self.timing.rows]

    def sample_keys(self):
        return [self.samples.cells(row, self.schema.timing_key) for row in self.samples.rows]

    def entropy_keys(self):
        return [self.entropy.cells(row, self.schema.entropy_key) for row in self.entropy.rows]


class Runs:
    """Makes and loads the runs of one case: fresh ones in its temporary folder, shared ones once per build."""

    def __init__(self, attnbench, schema, tmp_path, cached_sweep):
        self.attnbench = attnbench
        self.schema = schema
        self.tmp_path = tmp_path
        self.cached_sweep = cached_sweep
        self.serial = 0

    def tmp(self, name=None):
        """A fresh path (not created) in the case's temporary folder; a numbered one when no name is given."""
        if name is None:
            self.serial += 1
            name = f"t{self.serial}"
        path = str(self.tmp_path / name)
        assert not os.path.exists(path), f"test bug: temporary path {path} used twice"
        return path

    def load(self, folder, result=None):
        return Run(folder, result, self.schema)

    def sweep(self, name, *args, quiet=True, env=None):
        """`attnbench run ARGS --out TMP/name` with the fast bench settings; requires exit 0."""
        out = self.tmp(name)
        r = self.attnbench.run_ok("run", *args, *FAST, *(["--quiet"] if quiet else []), "--out", out, env=env)
        return self.load(out, r)

    def shared(self, name, *args):
        """The sweep of ARGS with the fast bench settings and --quiet, made once per build (read-only)."""
        folder, result = self.cached_sweep(f"run_test.{name}", *args, *FAST, "--quiet")
        return self.load(folder, result)

    def base(self):
        """Two points x two scorers."""
        return self.shared("base", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,general")

    def second(self):
        """The same sweep as base(), made again."""
        return self.shared("second", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,general")

    def padded(self):
        """A run with padding (--len-min) and additive_linear, whose drift is 0 by construction."""
        return self.shared("padded", "--batch", 3, "--src-len", 8, "--len-min", 4, "--scorer",
                           "additive_linear,dot,additive")

    def reference(self, grid):
        """An uninterrupted run of `grid` (its keys do not depend on the bench settings)."""
        return self.shared("reference-" + hashlib.sha256(" ".join(grid).encode()).hexdigest()[:12], *grid)


@pytest.fixture
def runs(attnbench, schema, tmp_path, cached_sweep):
    return Runs(attnbench, schema, tmp_path, cached_sweep)


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


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def check_whole(rf):
    """Files of a (possibly interrupted) run hold whole points: every (point, scorer) in timing.csv has every
    stage, samples.csv `repetitions` rows per ok timing row, entropy.csv one row per measured
    (point, scorer); no key twice."""
    schema = rf.schema
    keys = rf.timing_keys()
    dup = duplicates(keys)
    if dup:
        rf.fail(f"timing.csv repeats keys {sorted(dup)[:3]}")
    stages = {}
    for key in keys:
        stages.setdefault(key[:-1], []).append(key[-1])
    for point, got in stages.items():
        if got != schema.stages:
            rf.fail(f"timing.csv: stages of {point} are {got}, expected {schema.stages}")
    per_key = {}
    for key in rf.sample_keys():
        per_key[key] = per_key.get(key, 0) + 1
    ok = {rf.timing.cells(row, schema.timing_key) for row in rf.timing.rows if row[rf.timing.col("status")] == "ok"}
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
    measured = {tuple(k[i] for i in schema.shared_in_timing) for k in ok}
    got = {tuple(k[i] for i in schema.shared_in_entropy) for k in ekeys}
    if got != measured:
        rf.fail(f"entropy.csv (point, scorer) rows {len(got)} differ from the measured ones in timing.csv "
                f"{len(measured)}")


# ---------------------------------------------------------------------------- cases
# 1. Schema --------------------------------------------------------------------------------

def test_run_writes_exactly_the_run_files(runs):
    """schema: run writes timing.csv, samples.csv, entropy.csv, meta.json"""
    rf = runs.base()
    missing = [f for f in RUN_FILES if not os.path.isfile(os.path.join(rf.folder, f))]
    if missing:
        rf.fail(f"missing {missing}")
    extra = sorted(set(os.listdir(rf.folder)) - set(RUN_FILES))
    if extra:
        rf.fail(f"unexpected files left in the run folder: {extra}")


def test_timing_rows_every_stage_in_order_numbers_parse(runs, schema):
    """schema: timing rows ok, every stage per (point, scorer) in order, numbers parse, min <= median <= max"""
    rf = runs.base()
    t = rf.timing
    if len(t.rows) != 2 * 2 * len(schema.stages):
        rf.fail(f"expected {2 * 2 * len(schema.stages)} timing rows (2 points x 2 scorers x {len(schema.stages)} "
                f"stages), got {len(t.rows)}")
    groups = []
    for row in t.rows:
        key = t.cells(row, schema.timing_key[:-1])
        if not groups or groups[-1][0] != key:
            groups.append((key, []))
        groups[-1][1].append(row[t.col("stage")])
    for key, stages in groups:
        if stages != schema.stages:
            rf.fail(f"stages of {key} are {stages}, expected {schema.stages} (consecutive, in that order)")
    if len(groups) != 4:
        rf.fail(f"expected 4 (point, scorer) blocks, got {len(groups)}")
    numeric = [c for c in schema.timing_values if c not in ("roofline_pct", "bound", "status", "repro")]
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


def test_ns_per_step_and_gflops_follow_the_median(runs, schema):
    """schema: ns_per_step = median / tgt_len (keys, encoder, decode) else median; gflops = flops / median"""
    rf = runs.base()
    for d in rf.timing.dicts():
        med = float(d["median_ns"])
        want = med / int(d["tgt_len"]) if d["stage"] in schema.sequence_stages else med
        if not close(float(d["ns_per_step"]), want):
            rf.fail(f"{d['scorer']} {d['stage']}: ns_per_step {d['ns_per_step']}, expected {want!r}")
        gflops = float(d["flops"]) / med
        if not close(float(d["gflops"]), gflops):
            rf.fail(f"{d['scorer']} {d['stage']}: gflops {d['gflops']}, flops / median_ns = {gflops!r}")


def test_samples_median_is_median_ns(runs):
    """schema: samples.csv has `repetitions` rows per timing row; their median is median_ns"""
    rf = runs.base()
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


def test_entropy_one_row_per_point_and_scorer(runs, schema):
    """schema: entropy.csv one row per (point, scorer), mask_leak_max 0, entropy_norm_mean in (0, 1]"""
    rf = runs.base()
    keys = rf.entropy_keys()
    expected = {(s, L) for s in ("dot", "general") for L in ("4", "8")}
    got = [(k[0], k[3]) for k in keys]
    if sorted(got) != sorted(expected):
        rf.fail(f"entropy rows for (scorer, src_len) {got}, expected one each of {sorted(expected)}")
    for d in rf.entropy.dicts():
        bad = [c for c in schema.entropy_values if not is_number(d[c])]
        if bad:
            rf.fail(f"{d['scorer']} L={d['src_len']}: not finite numbers: {bad}")
        if float(d["mask_leak_max"]) != 0:
            rf.fail(f"{d['scorer']} L={d['src_len']}: mask_leak_max {d['mask_leak_max']}, expected 0")
        if not 0 < float(d["entropy_norm_mean"]) <= 1:
            rf.fail(f"{d['scorer']} L={d['src_len']}: entropy_norm_mean {d['entropy_norm_mean']} not in (0, 1]")


def test_padded_additive_linear_has_no_drift_and_no_mask_leak(runs):
    """schema: with --len-min padding, additive_linear has drift_mean exactly 0 and no mask leak"""
    rf = runs.padded()
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


def test_meta_json_build_command_grid_status_times(runs):
    """schema: meta.json has build/git_commit, build/onednn_version, build/cpu_id (as /proc/cpuinfo says), command,
    grid, status complete, start/end"""
    rf = runs.base()
    m = rf.meta
    build = m.get("build")
    if not isinstance(build, dict):
        rf.fail(f"meta.json has no 'build' object: {sorted(m)}")
    for field in ("git_commit", "onednn_version"):
        if not isinstance(build.get(field), str) or not build[field]:
            rf.fail(f"meta.json build.{field} is {build.get(field)!r}, expected a non-empty string")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?.*", build["onednn_version"]):
        rf.fail(f"build.onednn_version {build['onednn_version']!r} is not a version")
    cpuinfo = {}
    with open("/proc/cpuinfo", encoding="utf-8") as f:  # the first processor's fields
        for line in f:
            key, _, value = line.partition(":")
            cpuinfo.setdefault(key.strip(), value.strip())
    want_id = (f"{cpuinfo['vendor_id']} family {cpuinfo['cpu family']} model {cpuinfo['model']}"
               + (f" stepping {cpuinfo['stepping']}" if cpuinfo.get("stepping") else "")
               if all(cpuinfo.get(k) for k in ("vendor_id", "cpu family", "model")) else "unknown")
    if build.get("cpu_id") != want_id:
        rf.fail(f"meta.json build.cpu_id is {build.get('cpu_id')!r}, expected {want_id!r} from /proc/cpuinfo")
    flags = cpuinfo.get("flags", "").split()
    x86_64_v4 = all(flag in flags for flag in ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"))
    x86_64_v3 = all(flag in flags for flag in ("avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm", "xsave"))
    asked = os.environ.get("ATTNBENCH_FUSED_LOOPS", "")
    want_loops = ("portable" if asked == "portable" else "avx512" if x86_64_v4 and asked != "avx2"
                  else "avx2" if x86_64_v3 else "portable")
    if build.get("fused_loops") != want_loops:
        rf.fail(f"meta.json build.fused_loops is {build.get('fused_loops')!r}, expected {want_loops!r} "
                f"(flags of /proc/cpuinfo)")
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


def test_each_repro_measures_its_point_and_scorer_again(runs, attnbench):
    """schema: each repro cell, run with --out, measures exactly that (point, scorer) again"""
    rf = runs.base()
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
        out = runs.tmp(f"repro{n}")
        r = attnbench.run_ok(*argv[1:], "--out", out)
        again = runs.load(out, r)
        got = set(again.timing_keys())
        if got != keys or len(again.timing.rows) != len(keys):
            r.fail(f"timing.csv keys {sorted(got)[:2]}... ({len(again.timing.rows)} rows) differ from the "
                   f"{len(keys)} rows carrying this repro in {rf.folder}")
        statuses = {d["status"] for d in again.timing.dicts()}
        if statuses != {"ok"}:
            r.fail(f"statuses {statuses}, expected ok")


def test_padded_repro_keeps_len_min_seed_init(runs, attnbench):
    """schema: the repro of a padded (--len-min) additive_linear row reproduces its timing and entropy keys"""
    rf = runs.padded()
    rows = [d for d in rf.timing.dicts() if d["scorer"] == "additive_linear"]
    repros = {d["repro"] for d in rows}
    if len(repros) != 1:
        rf.fail(f"additive_linear rows carry {len(repros)} different repro commands, expected 1")
    argv = shlex.split(repros.pop())
    out = runs.tmp("repro_padded")
    r = attnbench.run_ok(*argv[1:], "--out", out)
    again = runs.load(out, r)
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


DRY_RUNS = [(["--src-len", "4,8,12"], 3),
            (["--src-len", "10:30:10"], 3),
            (["--batch", "4:16:*2"], 3),
            (["--src-len", "10:30:10", "--batch", "4:16:*2", "--tgt-len", "2,3"], 18)]


@pytest.mark.parametrize("args, points", DRY_RUNS, ids=[" ".join(args) for args, _ in DRY_RUNS])
def test_dry_run_lists_the_points_and_writes_nothing(runs, attnbench, args, points):
    out = runs.tmp()
    r = attnbench.run_ok("run", *args, "--dry-run", "--out", out)
    lines = dry_points(r)
    if len(lines) != points:
        r.fail(f"{len(lines)} point lines, expected {points}: {r.stdout[:400]!r}")
    if not re.search(rf"^total: {points} points", r.stdout, re.M):
        r.fail(f"no 'total: {points} points' line")
    if os.path.exists(out):
        r.fail(f"--dry-run created {out}")


def test_grid_ranges_run_every_point(runs, schema):
    """grid: a real run of --src-len 10:30:10 --batch 4:16:*2 --tgt-len 2 has the 9 points x every stage as keys"""
    rf = runs.sweep("grid9", "--src-len", "10:30:10", "--batch", "4:16:*2", "--tgt-len", 2, "--scorer", "dot")
    expected = {(b, L, s) for b in ("4", "8", "16") for L in ("10", "20", "30") for s in schema.stages}
    got = [rf.timing.cells(row, ["batch", "src_len", "stage"]) for row in rf.timing.rows]
    if sorted(got) != sorted(expected):
        rf.fail(f"(batch, src_len, stage) of the rows {sorted(set(got))[:4]}... ({len(got)} rows) "
                f"differ from the {len(expected)} expected")
    if {row[rf.timing.col("tgt_len")] for row in rf.timing.rows} != {"2"}:
        rf.fail("tgt_len is not 2 in every row")
    if rf.meta.get("points") not in (None, 9) or len(rf.meta.get("grid", [])) != 9:
        rf.fail(f"meta.json: points {rf.meta.get('points')}, grid of {len(rf.meta.get('grid', []))}; expected 9")


def test_scorer_all_runs_every_scorer(runs, schema, attnbench):
    """grid: --scorer all runs every scorer (dry-run and real run)"""
    r = attnbench.run_ok("run", "--src-len", 4, "--scorer", "all", "--dry-run")
    lines = dry_points(r)
    if len(lines) != 1 or not all(re.search(rf"\b{s}\b", lines[0]) for s in schema.scorers):
        r.fail(f"expected one point naming all of {schema.scorers}: {lines}")
    rf = runs.sweep("all5", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "all")
    got = [row[0] for row in rf.timing.rows[::len(schema.stages)]]
    rows = len(schema.scorers) * len(schema.stages)
    if sorted(got) != sorted(schema.scorers) or len(rf.timing.rows) != rows:
        rf.fail(f"scorers {got} ({len(rf.timing.rows)} rows), expected each of {schema.scorers} once ({rows} rows)")
    if sorted(k[0] for k in rf.entropy_keys()) != sorted(schema.scorers):
        rf.fail(f"entropy scorers {[k[0] for k in rf.entropy_keys()]}, expected {schema.scorers}")


# 3. Scenario files ------------------------------------------------------------------------------

def test_scenario_file_runs_and_is_recorded(runs, attnbench):
    """scenario: comments, ';' lists and ranges run via --scenario PATH; meta.json records path and sha256"""
    path = write(runs.tmp("sweep.csv"), "# a small sweep\n"
                                   "# two blocks\n"
                                   "scorer,src_len,batch,tgt_len\n"
                                   "dot;general,4:8:4,2,2\n"
                                   "additive_linear,6,1;2,3\n")
    out = runs.tmp("scenario_run")
    r = attnbench.run_ok("run", "--scenario", path, *FAST, "--quiet", "--out", out)
    rf = runs.load(out, r)
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


def test_scenario_bad_value_names_file_line_column(runs, attnbench):
    """scenario: bad value on line 4 (after 2 comments) -> exit 2, 'PATH:4: column 'src_len': bad value 'x'"""
    home = runs.tmp("home_bad")
    os.makedirs(home)
    path = write(runs.tmp("bad_value.csv"), "# first comment\n# second comment\nscorer,src_len\ndot,x\n")
    out = runs.tmp("bad_value_run")
    r = attnbench.run("run", "--scenario", path, *FAST, "--out", out, env={"ATTNBENCH_HOME": home})
    r.one_error_line([])
    prefix = f"{path}:4: column 'src_len': bad value 'x'"
    line = r.stderr.strip()
    if not (line.startswith(prefix) or line.startswith("attnbench: error: " + prefix)):
        r.fail(f"stderr {line!r} does not start with {prefix!r} (after an optional 'attnbench: error: ')")
    if os.path.exists(out):
        r.fail(f"created the run folder {out}")
    r = attnbench.run("run", "--scenario", path, *FAST, env={"ATTNBENCH_HOME": home})  # default folder: results/...
    r.one_error_line([re.escape(prefix)])
    if os.listdir(home):
        r.fail(f"wrote {os.listdir(home)} under ATTNBENCH_HOME")


def test_scenario_unknown_column_lists_the_known_ones(runs, attnbench):
    """scenario: unknown column -> exit 2, one line 'PATH:3: unknown column' listing the known ones"""
    path = write(runs.tmp("bad_column.csv"), "# comment\n\nscorer,bogus\ndot,1\n")
    out = runs.tmp("bad_column_run")
    r = attnbench.run("run", "--scenario", path, "--out", out)
    r.one_error_line([re.escape(path) + r":\d+: unknown column 'bogus'", r"\bsrc_len\b", r"\bbatch\b"])
    m = re.search(re.escape(path) + r":(\d+):", r.stderr)
    if m.group(1) != "3":
        r.fail(f"names line {m.group(1)}, the header is on line 3")
    if os.path.exists(out):
        r.fail(f"created the run folder {out}")


def test_scenario_unknown_name_lists_the_available_ones(runs, attnbench):
    """scenario: unknown name -> exit 2 listing the available scenarios"""
    home = runs.tmp("home_names")
    os.makedirs(os.path.join(home, "scenarios"))
    write(os.path.join(home, "scenarios", "alpha.csv"), "scorer\ndot\n")
    write(os.path.join(home, "scenarios", "beta.csv"), "scorer\ndot\n")
    r = attnbench.run("run", "--scenario", "no_such_scenario", env={"ATTNBENCH_HOME": home})
    r.one_error_line([r"no_such_scenario", r"\balpha\b", r"\bbeta\b"])
    if os.path.exists(os.path.join(home, "results")):
        r.fail("created results/ under ATTNBENCH_HOME")
    r = attnbench.run_ok("run", "--scenario", "alpha", *FAST, "--quiet",
               env={"ATTNBENCH_HOME": home})  # a name resolves in $ATTNBENCH_HOME/scenarios
    folders = os.listdir(os.path.join(home, "results", "alpha")) if os.path.isdir(
        os.path.join(home, "results", "alpha")) else []
    if len(folders) != 1:
        r.fail(f"expected one run folder under results/alpha/, got {folders}")


def test_scenario_with_grid_flags_is_refused(runs, attnbench):
    """scenario: grid flags mixed with --scenario -> exit 2 naming the flag"""
    path = write(runs.tmp("mix.csv"), "scorer\ndot\n")
    out = runs.tmp("mix_run")
    r = attnbench.run("run", "--scenario", path, "--src-len", 4, "--out", out)
    r.one_error_line([r"--src-len", r"--scenario"])
    if os.path.exists(out):
        r.fail(f"created the run folder {out}")


# 4. Errors ----------------------------------------------------------------------------------------

def _not_a_dir(runs):
    blocker = runs.tmp("regular_file")
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

@pytest.mark.parametrize("args, patterns", [case[1:] for case in RUN_ERRORS], ids=[case[0] for case in RUN_ERRORS])
def test_bad_run_flag_one_error_line_nothing_written(runs, attnbench, args, patterns):
    """Exit 2, one stderr line naming it, nothing written."""
    home = runs.tmp()
    os.makedirs(home)
    out = runs.tmp()
    valid = ["--batch", "2", "--src-len", "4", "--scorer", "dot", *FAST]
    for flag in args[::2]:  # drop the valid value of the flag under test
        if flag in valid:
            at = valid.index(flag)
            del valid[at:at + 2]
    r = attnbench.run("run", *valid, *args, "--quiet", "--out", out, env={"ATTNBENCH_HOME": home})
    r.one_error_line(patterns)
    if os.path.exists(out):
        r.fail(f"created {out}")
    if os.listdir(home):
        r.fail(f"wrote {os.listdir(home)} under ATTNBENCH_HOME")


def test_out_under_a_regular_file_is_refused(runs, attnbench):
    """error: run --out under a regular file -> exit 2, one line naming the path, nothing written"""
    out = _not_a_dir(runs)
    r = attnbench.run("run", "--batch", 2, "--src-len", 4, "--scorer", "dot", *FAST, "--quiet", "--out", out)
    r.one_error_line([re.escape(out)])
    with open(os.path.dirname(out), encoding="utf-8") as f:
        if f.read() != "not a folder\n":
            r.fail("the regular file was changed")


def test_out_holding_a_run_is_refused_untouched(runs, attnbench):
    """error: run --out a folder holding a run -> exit 2 naming it; the run is untouched"""
    rf = runs.sweep("occupied", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "dot")
    before = {}
    for name in RUN_FILES:
        with open(os.path.join(rf.folder, name), "rb") as f:
            before[name] = f.read()
    res = attnbench.run("run", "--batch", 2, "--src-len", 8, "--scorer", "dot", *FAST, "--quiet", "--out", rf.folder)
    res.one_error_line([re.escape(rf.folder), r"--resume"])
    for name in RUN_FILES:
        with open(os.path.join(rf.folder, name), "rb") as f:
            if f.read() != before[name]:
                res.fail(f"{name} of the existing run was changed")
    if sorted(os.listdir(rf.folder)) != sorted(RUN_FILES):
        res.fail(f"the folder now holds {sorted(os.listdir(rf.folder))}")


def test_resume_without_meta_json_is_refused(runs, attnbench):
    """error: run --resume of a folder without meta.json -> exit 2 naming it, nothing written"""
    folder = runs.tmp("not_a_run")
    os.makedirs(folder)
    r = attnbench.run("run", "--resume", folder)
    r.one_error_line([re.escape(folder), r"meta\.json", r"--resume"])
    if os.listdir(folder):
        r.fail(f"wrote {os.listdir(folder)} into {folder}")
    missing = runs.tmp("no_such_folder")
    r = attnbench.run("run", "--resume", missing)
    r.one_error_line([re.escape(missing), r"--resume"])
    if os.path.exists(missing):
        r.fail(f"created {missing}")


def test_resume_with_grid_flags_is_refused(runs, attnbench):
    """error: run --resume with grid flags -> exit 2 naming --resume"""
    rf = runs.sweep("resume_flags", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "dot")
    r = attnbench.run("run", "--resume", rf.folder, "--src-len", 8)
    r.one_error_line([r"--resume"])


# 5. Memory guard -----------------------------------------------------------------------------------

def test_memory_guard_skips_rows_with_empty_values(runs, schema):
    """memory guard: --max-memory 0.000001 -> skipped rows with empty values, exit 0, no entropy/samples"""
    rf = runs.sweep("skipped", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,general", "--max-memory", "0.000001")
    t = rf.timing
    if len(t.rows) != 2 * 2 * len(schema.stages):
        rf.fail(f"expected {2 * 2 * len(schema.stages)} timing rows (every key, skipped), got {len(t.rows)}")
    empty = [c for c in schema.timing_values if c not in ("status", "repro")]
    for d in t.dicts():
        if not d["status"].startswith("skipped: needs") or "--max-memory" not in d["status"]:
            rf.fail(f"status {d['status']!r}, expected 'skipped: needs ... --max-memory ...'")
        filled = [c for c in empty if d[c] != ""]
        if filled:
            rf.fail(f"{d['scorer']} {d['stage']}: value cells not empty: {[(c, d[c]) for c in filled]}")
        if not d["repro"].startswith("attnbench run "):
            rf.fail(f"repro {d['repro']!r} of a skipped row is not a command")
    stages = [d["stage"] for d in t.dicts()]
    if stages != schema.stages * 4:
        rf.fail("skipped rows do not list every stage per (point, scorer) in order")
    if rf.entropy.rows or rf.samples.rows:
        rf.fail(f"{len(rf.entropy.rows)} entropy rows and {len(rf.samples.rows)} sample rows, expected none")
    if rf.meta.get("status") != "complete":
        rf.fail(f"meta.json status {rf.meta.get('status')!r}, expected complete")


def test_onednn_bf16_points_are_skipped_where_onednn_has_no_bf16_matmul(runs, schema, tmp_path):
    """bf16 where oneDNN has none (ONEDNN_MAX_CPU_ISA=AVX2, as on an AVX2-only CPU): the f32 points
    and the fused bf16 ones run, the oneDNN bf16 ones are skipped rows naming why, exit 0; the
    fused bf16 rows take the f32 roof (a roofline without a bf16 peak, as `roofline` writes there)"""
    here = runs.base().meta["build"]
    machine = tmp_path / "no_bf16.json"
    write(str(machine), json.dumps({"threads": {"1": {"f32_gflops": 100.0, "gbps": 10.0, "read_gbps": 12.0}},
                                   "cpu_model": here["cpu_model"], "cpu_id": here["cpu_id"], "cores": here["cores"]}))
    rf = runs.sweep("no_bf16", "--batch", 2, "--src-len", 4, "--scorer", "dot", "--impl", "onednn,fused",
                    "--dtype", "f32,bf16", "--roofline", str(machine), env={"ONEDNN_MAX_CPU_ISA": "AVX2"})
    status = {}  # (impl, dtype) -> the statuses of its stages
    for d in rf.timing.dicts():
        status.setdefault((d["impl"], d["dtype"]), set()).add(d["status"])
    ok = {key for key, values in status.items() if values == {"ok"}}
    if len(rf.timing.rows) != 4 * len(schema.stages) or ok != {("onednn", "f32"), ("fused", "f32"), ("fused", "bf16")}:
        rf.fail(f"expected every stage ok but oneDNN's bf16 ones, got {rf.timing.rows}")
    why = ", ".join(status.get(("onednn", "bf16"), ()))
    if not re.fullmatch(r"skipped: --dtype bf16 --impl onednn: oneDNN \S+ has no bf16 matmul for ISA avx2", why):
        rf.fail(f"oneDNN bf16 status {why!r}, expected 'skipped: --dtype bf16 --impl onednn: oneDNN ... has no bf16 matmul'")
    fused_bf16 = [d for d in rf.timing.dicts() if (d["impl"], d["dtype"]) == ("fused", "bf16")]
    if not all(is_number(d["roofline_pct"]) and d["bound"] in ("memory", "compute") for d in fused_bf16):
        rf.fail(f"fused bf16 rows without roofline_pct or bound: {fused_bf16}")
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


def start_and_signal(attnbench, out, signals, grid=SLOW_GRID, during_write=False, pause=0.05, timeout=30):
    """Starts a slow run of `grid` into `out`, waits for its first timing row, then sends SIGINT `signals`
    times: `pause` apart, or (during_write) the second one the moment the next point's rows start to reach
    samples.csv. Returns (Result, seconds from the last signal to exit)."""
    args = ["run", *grid, *SLOW, "--out", out]
    samples = os.path.join(out, "samples.csv")
    with attnbench.background(args, timeout) as job:
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


def check_resumed(runs, attnbench, folder, grid=SLOW_GRID):
    r = attnbench.run_ok("run", "--resume", folder, "--quiet")
    rf = runs.load(folder, r)
    check_whole(rf)
    ref = runs.reference(grid)
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


def test_sigint_interrupts_whole_rows_and_resume_completes(runs, attnbench, schema):
    """interrupt: SIGINT -> exit 130, status interrupted, whole rows; --resume completes the same keys"""
    out = runs.tmp("interrupted")
    r, waited = start_and_signal(attnbench, out, 1)
    if r.returncode != EXIT_INTERRUPTED:
        r.fail(f"expected exit {EXIT_INTERRUPTED} after SIGINT; got {r.brief()}")
    rf = runs.load(out, r)
    if rf.meta.get("status") != "interrupted":
        r.fail(f"meta.json status {rf.meta.get('status')!r}, expected 'interrupted'")
    check_whole(rf)
    done = len(rf.timing.rows) // (2 * len(schema.stages))  # two scorers
    if not 1 <= done < 6:
        r.fail(f"{done} of 6 points in timing.csv after the interrupt; expected at least 1 and fewer than 6")
    if "--resume" not in r.stderr:
        r.fail(f"stderr does not say how to continue (--resume): {r.stderr[-300:]!r}")
    resumed = check_resumed(runs, attnbench, out)
    if not resumed.meta.get("resumed_utc"):
        r.fail("meta.json after resume has no resumed_utc")


def test_second_sigint_abandons_the_point(runs, attnbench, schema):
    """interrupt: a second SIGINT abandons the point: exit 130 promptly, files whole, --resume completes"""
    out = runs.tmp("abandoned")
    r, waited = start_and_signal(attnbench, out, 2)
    if r.returncode != EXIT_INTERRUPTED:
        r.fail(f"expected exit {EXIT_INTERRUPTED} after two SIGINTs; got {r.brief()}")
    if waited > 5:
        r.fail(f"took {waited:.1f} s to exit after the second SIGINT")
    rf = runs.load(out, r)
    check_whole(rf)
    if len(rf.timing.rows) >= 6 * 2 * len(schema.stages):
        r.fail("all 6 points finished; the second SIGINT did not stop the run")
    check_resumed(runs, attnbench, out)


# With --threads 2 the OpenMP worker threads exist; a signal must not cut a point's rows in half there either.
THREADED_GRID = ["--batch", "2", "--src-len", "4,8,12", "--tgt-len", "2", "--scorer", "dot", "--threads", "2"]


def test_second_sigint_while_rows_are_written_two_threads(runs, attnbench):
    """interrupt: --threads 2, second SIGINT while a point's rows are written: files whole, resume exact"""
    for attempt in range(3):  # the window is a few fsyncs long: try it more than once
        out = runs.tmp()
        r, waited = start_and_signal(attnbench, out, 2, grid=THREADED_GRID, during_write=True)
        if r.returncode != EXIT_INTERRUPTED:
            r.fail(f"expected exit {EXIT_INTERRUPTED} after two SIGINTs; got {r.brief()}")
        rf = runs.load(out, r)
        try:
            check_whole(rf)
        except pytest.fail.Exception as failure:
            r.fail(f"attempt {attempt + 1}, after the exit: {failure} (a point's samples/entropy rows without its "
                   f"timing rows; --resume measures it again and duplicates them)")
    check_resumed(runs, attnbench, out, THREADED_GRID)


def test_resume_from_another_host_needs_force(runs, attnbench):
    """interrupt: --resume of a run from another host is refused (exit 2, --force), accepted with --force"""
    rf = runs.sweep("other_host", "--batch", 2, "--src-len", "4", "--tgt-len", 2, "--scorer", "dot")
    meta_path = os.path.join(rf.folder, "meta.json")
    meta = dict(rf.meta)
    meta["build"] = dict(meta["build"], host="some-other-host.example")
    write(meta_path, json.dumps(meta, indent=2) + "\n")
    with open(meta_path, "rb") as f:
        before = f.read()
    r = attnbench.run("run", "--resume", rf.folder, "--quiet")
    r.one_error_line([r"--force", r"host"])
    with open(meta_path, "rb") as f:
        if f.read() != before:
            r.fail("the refused --resume changed meta.json")
    r = attnbench.run_ok("run", "--resume", rf.folder, "--force", "--quiet")
    again = runs.load(rf.folder, r)
    check_whole(again)
    if sorted(again.timing_keys()) != sorted(rf.timing_keys()):
        r.fail("resuming a complete run changed its timing keys")
    if again.meta.get("status") != "complete":
        r.fail(f"meta.json status {again.meta.get('status')!r}, expected complete")


# 7. Shards and merge ---------------------------------------------------------------------------------

SHARD_GRID = ["--batch", "2", "--src-len", "4:12:4", "--tgt-len", "2,3", "--scorer", "dot"]


def test_shards_are_disjoint_and_merge_to_the_whole(runs, attnbench):
    """shard: 1/3, 2/3, 3/3 are disjoint; merge gives the unsharded run's keys"""
    whole = runs.sweep("unsharded", *SHARD_GRID)
    shards = [runs.sweep(f"shard{k}", *SHARD_GRID, "--shard", f"{k}/3") for k in (1, 2, 3)]
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
    out = runs.tmp("merged")
    r = attnbench.run_ok("merge", *[s.folder for s in shards], "--out", out)
    merged = runs.load(out, r)
    check_whole(merged)
    if sorted(merged.timing_keys()) != sorted(whole.timing_keys()):
        r.fail(f"merged timing keys ({len(merged.timing.rows)} rows) differ from the unsharded run's "
               f"({len(whole.timing.rows)})")
    if sorted(merged.entropy_keys()) != sorted(whole.entropy_keys()):
        r.fail("merged entropy keys differ from the unsharded run's")
    if merged.meta.get("status") != "complete":
        r.fail(f"merged meta.json status {merged.meta.get('status')!r}, expected complete")


def test_merge_of_different_grids_is_refused(runs, attnbench):
    """shard: merging runs of different grids (--src-len) is refused: exit 2 naming the field"""
    first = runs.sweep("grid_a", "--batch", 2, "--src-len", 4, "--tgt-len", 2, "--scorer", "dot", "--shard", "1/2")
    second = runs.sweep("grid_b", "--batch", 2, "--src-len", 8, "--tgt-len", 2, "--scorer", "dot", "--shard", "2/2")
    out = runs.tmp("merged_bad")
    r = attnbench.run("merge", first.folder, second.folder, "--out", out)
    r.one_error_line([r"\bgrid\b", re.escape(second.folder)])
    if os.path.exists(os.path.join(out, "timing.csv")):
        r.fail(f"wrote {out}/timing.csv")


# 8. Threads -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
def test_threads_flag_sets_onednn_nthr(runs, attnbench, threads):
    """--threads N makes oneDNN run with nthr:N (DNNL_VERBOSE=1)."""
    out = runs.tmp(f"threads{threads}")
    r = attnbench.run_ok("run", "--batch", 2, "--src-len", 4, "--tgt-len", 1, "--scorer", "dot", "--threads", threads,
               *FAST, "--quiet", "--out", out, env={"DNNL_VERBOSE": "1", "ONEDNN_VERBOSE": "1"})
    found = re.findall(r"^(?:dnnl|onednn)_verbose,info,cpu,runtime:[^,\n]*,nthr:(\d+)", r.stdout + r.stderr,
                       re.M)
    if not found:
        r.fail("no oneDNN verbose line '..._verbose,info,cpu,runtime:...,nthr:N' in the output")
    if any(int(n) != threads for n in found):
        r.fail(f"oneDNN reports nthr:{','.join(found)}, expected nthr:{threads}")
    rf = runs.load(out, r)
    if {row[rf.timing.col("threads")] for row in rf.timing.rows} != {str(threads)}:
        r.fail(f"timing.csv threads column is not {threads} in every row")


# 9. Progress ------------------------------------------------------------------------------------------

def test_progress_on_a_pipe_plain_lines_and_summary(runs):
    """progress: on a pipe, one plain line per point (no \\r, no ESC); summary names every scorer"""
    rf = runs.sweep("progress", "--batch", 2, "--src-len", "4,8", "--tgt-len", 2, "--scorer", "dot,general,additive",
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


def test_quiet_prints_no_progress(runs):
    """progress: --quiet prints no progress lines"""
    r = runs.base().result
    if any(re.match(r"^\[\d+/\d+\]", line) or "ETA" in line for line in r.stderr.splitlines()):
        r.fail(f"--quiet printed progress: {r.stderr[:300]!r}")
    for scorer in ("dot", "general"):
        if not re.search(rf"^{scorer}\s", r.stdout, re.M):
            r.fail(f"summary on stdout has no row for {scorer}")


# 10. compare ------------------------------------------------------------------------------------------

def test_compare_two_runs_table_and_geomeans(runs, schema, attnbench):
    """compare RUN1 RUN2: a table row per timing row, geomean per scorer"""
    a, b = runs.base(), runs.second()
    r = attnbench.run_ok("compare", a.folder, b.folder)
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
    per_scorer = 2 * len(schema.stages)  # two points
    for scorer in ("dot", "general"):
        if not re.search(rf"^geomean new/old {scorer}: \d+\.\d+ over {per_scorer} rows", r.stdout, re.M):
            r.fail(f"no 'geomean new/old {scorer}: ... over {per_scorer} rows' line")


def test_compare_two_runs_csv(runs, schema, attnbench):
    """compare RUN1 RUN2 --csv: header and one row per matched timing row"""
    a, b = runs.base(), runs.second()
    r = attnbench.run_ok("compare", a.folder, b.folder, "--csv")
    rows = list(csv.reader(io.StringIO(r.stdout)))
    if not rows or rows[0][:len(schema.timing_key)] != schema.timing_key:
        r.fail(f"header {rows[0] if rows else None} does not start with the timing key columns")
    body = rows[1:]
    if len(body) != len(a.timing.rows):
        r.fail(f"{len(body)} rows, expected {len(a.timing.rows)}")
    if sorted(tuple(row[:len(schema.timing_key)]) for row in body) != sorted(a.timing_keys()):
        r.fail("the rows' keys differ from timing.csv's")
    ratio = rows[0].index("ratio") if "ratio" in rows[0] else None
    if ratio is None or not all(is_number(row[ratio]) and float(row[ratio]) > 0 for row in body):
        r.fail("no positive numeric 'ratio' column")


def test_compare_baseline_scorer(runs, schema, attnbench):
    """compare RUN --baseline dot: rows for the other scorers"""
    a = runs.base()
    per_scorer = 2 * len(schema.stages)  # two points
    r = attnbench.run_ok("compare", a.folder, "--baseline", "dot")
    if not re.search(rf"^geomean new/old general: \d+\.\d+ over {per_scorer} rows", r.stdout, re.M):
        r.fail(f"no 'geomean new/old general: ... over {per_scorer} rows' line: {r.stdout[-300:]!r}")
    r = attnbench.run_ok("compare", a.folder, "--baseline", "dot", "--csv")
    body = list(csv.reader(io.StringIO(r.stdout)))[1:]
    if len(body) != per_scorer or {row[0] for row in body} != {"general"}:
        r.fail(f"{len(body)} rows of scorers {sorted({row[0] for row in body})}, expected {per_scorer} of general")


def test_compare_missing_folder_is_refused(runs, attnbench):
    """compare: a missing run folder -> exit 2 naming it"""
    missing = runs.tmp("missing_run")
    r = attnbench.run("compare", runs.base().folder, missing)
    r.one_error_line([re.escape(missing)])




def test_a_roofline_file_of_another_machine_is_used_and_warned_of(runs, attnbench, tmp_path):
    """--roofline FILE gives roofline_pct and bound; a file measured on another CPU is named in a warning
    (stderr and meta.json), since its roofs are not this machine's."""
    here = runs.base().meta["build"]
    machine = tmp_path / "other.json"
    write(str(machine), json.dumps({"threads": {"1": {"f32_gflops": 100.0, "gbps": 10.0, "read_gbps": 12.0}},
                                   "cpu_model": here["cpu_model"], "cpu_id": "GenuineIntel family 6 model 143 stepping 8",
                                   "cores": here["cores"]}))
    rf = runs.sweep("other_roofline", "--batch", 2, "--src-len", "4", "--tgt-len", 2, "--scorer", "dot",
                    "--stages", "step", "--roofline", str(machine))
    warning = (f"{machine} was measured on {here['cpu_model']}, GenuineIntel family 6 model 143 stepping 8, "
               f"{here['cores']}, this is {here['cpu_model']}, {here['cpu_id']}, {here['cores']}: roofline_pct and "
               f"bound are against another machine's roofs; run `attnbench roofline` here")
    if f"attnbench: warning: {warning}" not in rf.result.stderr.splitlines():
        rf.result.fail(f"no warning naming both machines; stderr: {rf.result.stderr!r}")
    if warning not in rf.meta.get("warnings", []):
        rf.fail(f"meta.json warnings {rf.meta.get('warnings')!r} lack it")
    if rf.meta.get("roofline") != str(machine):
        rf.fail(f"meta.json roofline is {rf.meta.get('roofline')!r}, expected {str(machine)!r}")
    rows = rf.timing.dicts()
    if not rows or not all(is_number(row["roofline_pct"]) and row["bound"] == "memory" for row in rows):
        rf.fail(f"rows without roofline_pct or with another bound: {rows}")


def test_a_damaged_roofline_file_is_one_error_line_before_any_output(runs, attnbench, tmp_path):
    machine = tmp_path / "damaged.json"
    write(str(machine), '{"threads": {"1": {"gbps": 5}}}')
    out = runs.tmp()
    r = attnbench.run("run", "--batch", "2", "--src-len", "4", "--scorer", "dot", *FAST, "--quiet",
                      "--roofline", str(machine), "--out", out)
    r.one_error_line([re.escape(str(machine)), r"not a roofline file"])
    if os.path.exists(out):
        r.fail(f"the refused run made {out}")
    r = attnbench.run("run", "--batch", "2", "--src-len", "4", "--scorer", "dot", *FAST, "--quiet",
                      "--roofline", str(tmp_path / "absent.json"), "--out", out)
    r.one_error_line([r"--roofline", r"absent\.json"])
