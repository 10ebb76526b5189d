#!/usr/bin/python3
"""Tests of scripts/peer_torch.py, the PyTorch eager peer, against the attnbench binary.

Usage: peer_torch_test.py /path/to/build/attnbench

A tiny `attnbench run` (A) and the peer on its grid (B) share one temporary folder; the
cases check that B keeps A's schema, keys (with impl=torch) and cost model, that its
samples agree with its statistics, and what `attnbench compare` does with the two. No case
asserts a speed. Needs Debian's /usr/bin/python3 with python3-torch. The last line is
`N passed, M failed`; the exit code is 1 when any case failed.
"""

import csv
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

import cli_support as cli
from cli_support import Failure, case

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, "scripts", "peer_torch.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

REPETITIONS = 2
KEY = ["scorer", "impl", "dtype", "threads", "batch", "src_len", "tgt_len", "emb_dim", "enc_dim", "dec_dim",
       "attn_dim", "vocab", "stage"]
POSITIVE = ["median_ns", "mean_ns", "min_ns", "max_ns", "ns_per_step", "flops", "bytes", "gflops", "gbps"]
STATE = {}  # "tmp", and the folders made so far


class PeerResult(cli.Result):
    """A run of the peer script, reported as the command a user types."""

    @property
    def command(self):
        return shlex.join(["scripts/peer_torch.py"] + self.args)


def peer(*args, cwd=None):
    """Runs the peer with `args` under this Python (Debian's, with torch)."""
    args = [str(a) for a in args]
    try:
        done = subprocess.run([sys.executable, PEER] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=cli.TIMEOUT_S, check=False, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failure(shlex.join(["scripts/peer_torch.py"] + args), f"did not finish within {cli.TIMEOUT_S} s")
    return PeerResult(args, done.returncode, done.stdout.decode("utf-8", "replace"),
                      done.stderr.decode("utf-8", "replace"))


def peer_ok(*args, cwd=None):
    r = peer(*args, cwd=cwd)
    if r.returncode != 0:
        r.fail(f"expected exit 0; got {r.brief()}")
    return r


def tmp(name):
    """A path in the cases' temporary folder (removed at the end)."""
    if "tmp" not in STATE:
        STATE["tmp"] = tempfile.mkdtemp(prefix="peer_torch_test.")
    return os.path.join(STATE["tmp"], name)


def folder(name):
    """The run folders of the cases, made once: A (attnbench), B (the peer on A's grid)."""
    if name in STATE:
        return STATE[name]
    path = tmp(name)
    if name == "A":
        cli.run_ok("run", "--batch", 2, "--src-len", "4,8", "--scorer", "dot,additive", "--repetitions",
                   REPETITIONS, "--min-time", 0.002, "--quiet", "--out", path)
    elif name == "B":
        peer_ok("--grid-from", folder("A"), "--out", path, "--repetitions", REPETITIONS, "--min-time", 0.002,
                "--quiet")
    STATE[name] = path
    return path


def read(path):
    """(header, rows as dicts) of a CSV file."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], row)) for row in rows[1:]]


def key(row, impl=None):
    return tuple(impl if (c == "impl" and impl) else row[c] for c in KEY)


def close(cell, value):
    """A %.9g cell against a value computed from other %.9g cells (two roundings of 5e-9 each)."""
    return abs(float(cell) - value) <= 1e-8 * abs(value)


def check(condition, message):
    if not condition:
        raise Failure(None, message)


# ------------------------------------------------------------------------------------ cases

@case("the peer writes timing.csv and samples.csv with attnbench's headers")
def _():
    a, b = folder("A"), folder("B")
    for name in ("timing.csv", "samples.csv"):
        header_a, _ = read(os.path.join(a, name))
        header_b, _ = read(os.path.join(b, name))
        check(header_a == header_b, f"{name}: header {header_b} differs from attnbench's {header_a}")


@case("the peer's timing keys are attnbench's with impl=torch, in the same order")
def _():
    _, rows_a = read(os.path.join(folder("A"), "timing.csv"))
    _, rows_b = read(os.path.join(folder("B"), "timing.csv"))
    check(len(rows_a) == 32, f"attnbench wrote {len(rows_a)} timing rows, expected 2 points x 2 scorers x 8")
    got, want = [key(r) for r in rows_b], [key(r, impl="torch") for r in rows_a]
    check(got == want, f"keys differ: first B-only {sorted(set(got) - set(want))[:2]}, "
                       f"first A-only {sorted(set(want) - set(got))[:2]}")


@case("every value parses, is positive where it must be, and min <= median <= max")
def _():
    _, rows = read(os.path.join(folder("B"), "timing.csv"))
    for row in rows:
        where = f"row {key(row)}"
        check(row["status"] == "ok" and row["roofline_pct"] == "", f"{where}: status/roofline_pct {row['status']!r}")
        check(row["repetitions"] == str(REPETITIONS), f"{where}: repetitions {row['repetitions']}")
        check(int(row["iterations"]) >= REPETITIONS, f"{where}: iterations {row['iterations']}")
        for column in POSITIVE:
            check(float(row[column]) > 0, f"{where}: {column} = {row[column]!r}, expected > 0")
        for column in ("stddev_ns", "cv"):
            check(float(row[column]) >= 0, f"{where}: {column} = {row[column]!r}, expected >= 0")
        median = float(row["median_ns"])
        check(float(row["min_ns"]) <= median <= float(row["max_ns"]), f"{where}: median outside [min, max]")
        per_step = median / int(row["tgt_len"]) if row["stage"] in ("keys", "encoder", "decode") else median
        check(close(row["ns_per_step"], per_step), f"{where}: ns_per_step {row['ns_per_step']}, "
                                                   f"expected {per_step:.9g}")
        for rate, work in (("gflops", "flops"), ("gbps", "bytes")):
            want = float(row[work]) / median
            check(close(row[rate], want), f"{where}: {rate} {row[rate]}, expected {work} / median_ns = {want:.9g}")


@case("samples: one per repetition and key, their median is median_ns, their iterations add up")
def _():
    _, timing = read(os.path.join(folder("B"), "timing.csv"))
    _, samples = read(os.path.join(folder("B"), "samples.csv"))
    by_key = {}
    for s in samples:
        by_key.setdefault(key(s), []).append(s)
    check(set(by_key) == {key(r) for r in timing}, "samples.csv keys differ from timing.csv's")
    for row in timing:
        rows = by_key[key(row)]
        where = f"key {key(row)}"
        check(sorted(int(s["repetition"]) for s in rows) == list(range(REPETITIONS)), f"{where}: repetitions")
        median = statistics.median(float(s["ns"]) for s in rows)
        check(close(row["median_ns"], median), f"{where}: median of samples {median:.9g} != {row['median_ns']}")
        total = sum(int(s["iterations"]) for s in rows)
        check(total == int(row["iterations"]), f"{where}: sample iterations add to {total}, not {row['iterations']}")


@case("flops and bytes equal attnbench's for the same key (the same cost model)")
def _():
    _, rows_a = read(os.path.join(folder("A"), "timing.csv"))
    _, rows_b = read(os.path.join(folder("B"), "timing.csv"))
    ours = {key(r, impl="torch"): r for r in rows_a}
    for row in rows_b:
        a = ours[key(row)]
        for column in ("flops", "bytes"):
            check(row[column] == a[column], f"{key(row)}: {column} {row[column]}, attnbench {a[column]}")


@case("the ported cost model equals attnbench's for every scorer and stage at odd sizes")
def _():
    import peer_torch  # noqa: E402  (imports torch: only here)
    path = tmp("costs")
    cli.run_ok("run", "--scorer", "additive_linear,scaled_dot,general,additive,dot", "--batch", 3, "--src-len", 5,
               "--tgt-len", 3, "--emb-dim", 7, "--enc-dim", 6, "--dec-dim", 9, "--attn-dim", 11, "--vocab", 13,
               "--len-min", 2, "--repetitions", 1, "--min-time", 0.0001, "--quiet", "--out", path)
    _, rows = read(os.path.join(path, "timing.csv"))
    check(len(rows) == 40, f"expected 5 scorers x 8 stages, got {len(rows)} rows")
    point = peer_torch.Point(scorers=[], batch=3, src_len=5, tgt_len=3, emb_dim=7, enc_dim=6, dec_dim=9, attn_dim=11,
                             vocab=13, len_min=2)
    for row in rows:
        cost = peer_torch.stage_cost(point, row["scorer"], row["stage"])
        got = ("%.9g" % cost.flops, "%.9g" % cost.bytes)
        check(got == (row["flops"], row["bytes"]), f"{row['scorer']} {row['stage']}: peer {got}, "
                                                    f"attnbench {(row['flops'], row['bytes'])}")


@case("cached-key scores equal the twin scorer's forward(s, H), for every scorer")
def _():
    import torch
    import peer_torch
    import torch_twin
    for scorer in torch_twin.SCORERS:
        point = peer_torch.Point(scorers=[scorer], batch=3, src_len=6, len_min=2, seed=5)
        with torch.no_grad():
            r = peer_torch.make_rig(point, scorer)
            cached = peer_torch.score(r.model.scorer, r.s, r.K)
            direct = r.model.scorer(r.s, r.H)
            check(torch.allclose(cached, direct, rtol=1e-6, atol=1e-6), f"{scorer}: cached {cached} != {direct}")
            masked = torch.isinf(r.e)
            want = torch.arange(6)[None, :] >= torch.tensor([6, 4, 2])[:, None]
            check(torch.equal(masked, want), f"{scorer}: masked positions {masked.tolist()}")


@case("compare B B matches all 32 rows with ratio 1.000")
def _():
    r = cli.run_ok("compare", folder("B"), folder("B"), "--csv")
    lines = r.stdout.strip().splitlines()
    header = lines[0].split(",")
    body = lines[1:]
    check(header[:len(KEY)] == KEY, f"compare --csv header {header}")
    rows = [dict(zip(header, line.split(","))) for line in body]
    check(len(rows) == 32, f"expected 32 matched rows, got {len(rows)}:\n{r.stdout[:500]}")
    check(all(row["impl"] == "torch" and float(row["ratio"]) == 1.0 for row in rows), "a ratio is not 1 or impl wrong")


@case("appending to attnbench's own run folder keeps one header and both impls; a rerun adds nothing")
def _():
    combined = tmp("combined")
    shutil.copytree(folder("A"), combined)
    args = ["--grid-from", combined, "--out", combined, "--repetitions", 1, "--min-time", 0.0005, "--quiet"]
    peer_ok(*args)
    header, rows = read(os.path.join(combined, "timing.csv"))
    check(header == read(os.path.join(folder("A"), "timing.csv"))[0], "the header changed")
    impls = sorted({r["impl"] for r in rows})
    check(len(rows) == 64 and impls == ["onednn", "torch"], f"{len(rows)} rows, impls {impls}")
    _, samples = read(os.path.join(combined, "samples.csv"))
    check(len(samples) == 32 * REPETITIONS + 32, f"samples.csv has {len(samples)} rows, expected 96")
    peer_ok(*args)
    check(len(read(os.path.join(combined, "timing.csv"))[1]) == 64, "a second run appended rows again")
    r = cli.run_ok("compare", combined, combined)
    check("over 32 rows" in r.stdout, f"compare of the combined folder with itself:\n{r.stdout[-400:]}")
    STATE["combined"] = combined


@case("compare RUN --baseline impl=torch puts every onednn row against its torch row")
def _():
    r = cli.run_ok("compare", STATE["combined"], "--baseline", "impl=torch", "--csv")
    lines = r.stdout.strip().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line.count(",") >= len(KEY)]
    check(len(rows) == 32, f"expected 32 matched rows, got {len(rows)}:\n{r.stdout[:500]}")
    check(all(row["impl"] == "onednn" and float(row["ratio"]) > 0 for row in rows), "a row is not onednn/torch")


@case("a row's repro command re-runs exactly its point")
def _():
    _, rows = read(os.path.join(folder("B"), "timing.csv"))
    row = next(r for r in rows if r["scorer"] == "additive" and r["src_len"] == "8")
    argv = shlex.split(row["repro"])
    check(argv[0] == "scripts/peer_torch.py", f"repro {row['repro']!r} does not start with scripts/peer_torch.py")
    out = tmp("repro")
    peer_ok(*argv[1:], "--out", out, "--quiet", cwd=ROOT)
    _, again = read(os.path.join(out, "timing.csv"))
    want = [key(r) for r in rows if r["repro"] == row["repro"]]
    check([key(r) for r in again] == want and len(want) == 8, f"repro wrote keys {[key(r) for r in again]}")
    check(all(r["repro"] == row["repro"] for r in again), "the re-run's repro differs")


@case("bad input: one line on stderr naming the flag, exit 2, no output folder")
def _():
    out = tmp("never")
    for args, pattern in ((["--scorer", "nope"], "--scorer"), (["--enc-dim", "7"], "--enc-dim"),
                          (["--batch", "x"], "--batch"), (["--grid-from", out + "/missing"], "--grid-from"),
                          (["--grid-from", out, "--batch", "3"], "--grid-from"), (["--repetitions", "0"], "--repetitions"),
                          (["--stages", "step,nope"], "--stages")):
        r = peer(*args, "--out", out)
        cli.one_error_line(r, [pattern])
        check(not os.path.exists(out), f"{r.command} created {out}")


@case("--serve: hello line, rows of a request as cells (f32 measured, bf16 skipped), errors answered, EOF ends it")
def _():
    import json
    requests = [
        {"point": {"batch": "2", "src_len": "4", "tgt_len": "2", "impl": "fused"}, "scorers": ["dot", "general"],
         "stages": ["step", "keys"], "repetitions": REPETITIONS, "min_time": 0.001},
        {"point": {"batch": "2", "src_len": "4", "dtype": "bf16"}, "scorers": ["dot"], "stages": ["step"],
         "repetitions": REPETITIONS, "min_time": 0.001},
        {"point": {"batch": "2", "src_len": "4"}, "scorers": ["dot"], "stages": ["step"], "repetitions": 1,
         "min_time": 0.001, "skip": "skipped: needs 2 GiB > --max-memory 1 GiB"},
        {"point": {"enc_dim": "7"}, "scorers": ["dot"], "stages": ["step"], "repetitions": 1, "min_time": 0.001},
        {"point": {}, "scorers": ["dot"], "stages": ["bogus"], "repetitions": 1, "min_time": 0.001},
    ]
    text = "".join(json.dumps(r) + "\n" for r in requests) + "not json\n"
    done = subprocess.run([sys.executable, PEER, "--serve"], input=text.encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=cli.TIMEOUT_S, check=False)
    where = "scripts/peer_torch.py --serve"
    check(done.returncode == 0, f"{where}: exit {done.returncode}, stderr {done.stderr[-300:]!r}")
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    check(len(lines) == 1 + len(requests) + 1, f"{where}: {len(lines)} lines, expected hello + 6 answers")
    import torch
    check(lines[0].get("peer") == "torch" and lines[0].get("torch_version") == torch.__version__,
          f"hello {lines[0]}")
    timing, samples = lines[1]["timing"], lines[1]["samples"]
    check([(r[0], r[1], r[5], r[12]) for r in timing] == [(s, "torch", "4", st) for s in ("dot", "general")
                                                          for st in ("keys", "step")], f"timing keys {timing}")
    check(all(len(r) == 30 and r[28] == "ok" and " --stages keys,step " in r[29] for r in timing),
          f"timing cells {timing[0]}")
    check(len(samples) == 4 * REPETITIONS and all(len(r) == 16 for r in samples), f"{len(samples)} samples rows")
    skipped = lines[2]["timing"]
    check(len(skipped) == 1 and skipped[0][2] == "bf16" and skipped[0][28].startswith("skipped: the torch peer")
          and skipped[0][15] == "" and lines[2]["samples"] == [], f"bf16 answer {lines[2]}")
    check([r[28] for r in lines[3]["timing"]] == ["skipped: needs 2 GiB > --max-memory 1 GiB"]
          and lines[3]["samples"] == [], f"skip answer {lines[3]}")
    check("--enc-dim" in lines[4].get("error", ""), f"bad point answer {lines[4]}")
    check("--stages: unknown stage 'bogus'" in lines[5].get("error", ""), f"bad stage answer {lines[5]}")
    check("not JSON" in lines[6].get("error", ""), f"non-JSON answer {lines[6]}")


def cleanup():
    if "tmp" in STATE:
        shutil.rmtree(STATE["tmp"], ignore_errors=True)


if __name__ == "__main__":
    sys.exit(cli.main(sys.argv, teardown=cleanup))
