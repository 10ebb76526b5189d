"""Tests of `attnbench run --peer torch` (the PyTorch eager peer in the same sweep) and
`attnbench run --stages LIST`, on tiny sweeps.

Needs Debian's /usr/bin/python3 with python3-torch (the peer runs on it). Every run writes into the
case's temporary folder, or is the --peer sweep shared by several cases, made once per build
(read-only: copied before it is changed). Runs are tiny (--repetitions 2 --min-time 0.01). No case
asserts a speed.
"""

import csv
import io
import json
import os
import re
import signal
import statistics
import time

import pytest

REPS = 2
FAST = ["--repetitions", str(REPS), "--min-time", "0.01"]
TINY = ["--batch", "2", "--tgt-len", "2"]
# Two sizes x two impls of two scorers: the peer must run once per size, after the onednn point.
PEER_GRID = [*TINY, "--src-len", "4,8", "--scorer", "dot,general", "--impl", "onednn,fused"]
PEER_SCORERS = 2  # in PEER_GRID


def check(condition, message, command=None):
    if not condition:
        pytest.fail(f"`{command}`: {message}" if command else message, pytrace=False)


def read(path):
    """(header, rows as dicts) of a CSV file that must end with a newline."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    check(text.endswith("\n"), f"{path} does not end with a newline")
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], [dict(zip(rows[0], row)) for row in rows[1:]]


class Keys:
    """The timing key of a row, by the binary's key columns."""

    def __init__(self, names):
        self.names = names

    def __call__(self, row, impl=None):
        return tuple(impl if (c == "impl" and impl) else row[c] for c in self.names)


@pytest.fixture(scope="module")
def key(key_names):
    return Keys(key_names)


def meta_of(folder):
    with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture
def sweep(attnbench, tmp_path):
    """sweep(name, *args) -> (folder, Result): `attnbench run ARGS` with the fast settings in the case's folder."""
    def make(name, *args, env=None):
        out = str(tmp_path / name)
        r = attnbench.run_ok("run", *args, *FAST, "--quiet", "--out", out, env=env)
        return out, r
    return make


@pytest.fixture
def peer_run(cached_sweep):
    """(folder, Result): the run of PEER_GRID with --peer torch, made once per build (read-only)."""
    return cached_sweep("peer_run_test.peer", *PEER_GRID, "--peer", "torch", *FAST, "--quiet")


def blocks(rows):
    """(impl, src_len) of each run of consecutive timing rows sharing them."""
    out = []
    for row in rows:
        here = (row["impl"], row["src_len"])
        if not out or out[-1] != here:
            out.append(here)
    return out


def check_whole(key, folder, stages, command=None):
    """Every (point, scorer, impl) in timing.csv has each of `stages` once, in order; samples.csv has REPS rows
    per ok timing row and nothing else."""
    _, timing = read(os.path.join(folder, "timing.csv"))
    _, samples = read(os.path.join(folder, "samples.csv"))
    per_measurement = {}
    for row in timing:
        per_measurement.setdefault(key(row)[:-1], []).append(row["stage"])
    for measurement, got in per_measurement.items():
        check(got == stages, f"timing.csv: stages of {measurement} are {got}, expected {stages}", command)
    counts = {}
    for s in samples:
        counts[key(s)] = counts.get(key(s), 0) + 1
    ok = {key(r) for r in timing if r["status"] == "ok"}
    check(set(counts) == ok, f"samples.csv keys differ from the ok timing keys ({len(counts)} against {len(ok)})",
          command)
    wrong = {k: n for k, n in counts.items() if n != REPS}
    check(not wrong, f"samples.csv: expected {REPS} rows per key, got {list(wrong.items())[:2]}", command)
    return timing, samples


# ------------------------------------------------------------------------------------ --peer torch

def test_peer_rows_follow_each_sizes_onednn_point(peer_run, key, stages):
    """peer: torch rows follow each size's onednn point, once per size (not per impl), same keys as ours"""
    out, r = peer_run
    timing, _ = check_whole(key, out, stages, command=r.command)
    got = blocks(timing)
    want = [("onednn", "4"), ("torch", "4"), ("onednn", "8"), ("torch", "8"), ("fused", "4"), ("fused", "8")]
    check(got == want, f"row blocks (impl, src_len) {got}, expected {want}", r.command)
    per_impl = 2 * PEER_SCORERS * len(stages)  # two sizes
    by_impl = {}
    for row in timing:
        by_impl.setdefault(row["impl"], []).append(row)
    check(sorted(by_impl) == ["fused", "onednn", "torch"] and all(len(v) == per_impl for v in by_impl.values()),
          f"rows per impl { {k: len(v) for k, v in by_impl.items()} }, expected {per_impl} each", r.command)
    ours = {key(row, impl="torch"): row for row in by_impl["onednn"]}
    check(set(ours) == {key(row) for row in by_impl["torch"]}, "torch keys differ from onednn's", r.command)
    for row in by_impl["torch"]:
        where = f"torch row {key(row)}"
        check(row["status"] == "ok" and row["repetitions"] == str(REPS), f"{where}: status {row['status']!r}, "
                                                                          f"repetitions {row['repetitions']}")
        lo, med, hi = float(row["min_ns"]), float(row["median_ns"]), float(row["max_ns"])
        check(0 < lo <= med <= hi, f"{where}: not 0 < min {lo} <= median {med} <= max {hi}")
        mine = ours[key(row)]
        check((row["flops"], row["bytes"]) == (mine["flops"], mine["bytes"]),
              f"{where}: flops/bytes {row['flops']}/{row['bytes']}, attnbench's {mine['flops']}/{mine['bytes']}")
        check(row["roofline_pct"] == "" and row["repro"].startswith("scripts/peer_torch.py --scorer "),
              f"{where}: roofline_pct {row['roofline_pct']!r}, repro {row['repro'][:60]!r}")


def test_peer_samples_kept_no_peer_entropy_rows(peer_run, key, stages):
    """peer: samples.csv holds the torch samples (median = median_ns); entropy.csv has no peer rows"""
    out, r = peer_run
    _, timing = read(os.path.join(out, "timing.csv"))
    _, samples = read(os.path.join(out, "samples.csv"))
    ns = {}
    for s in samples:
        if s["impl"] == "torch":
            ns.setdefault(key(s), []).append(float(s["ns"]))
    torch_rows = [row for row in timing if row["impl"] == "torch"]
    check(len(ns) == len(torch_rows) == 2 * PEER_SCORERS * len(stages), f"{len(ns)} torch sample keys for {len(torch_rows)} torch rows")
    for row in torch_rows:
        m = statistics.median(ns[key(row)])
        check(abs(m - float(row["median_ns"])) <= 1e-6 * m, f"{key(row)}: median of samples {m} != {row['median_ns']}")
    _, entropy = read(os.path.join(out, "entropy.csv"))
    got = sorted((e["scorer"], e["src_len"]) for e in entropy)
    check(got == sorted((s, L) for s in ("dot", "general") for L in ("4", "8")),
          f"entropy rows (scorer, src_len) {got}, expected one per scorer x size", r.command)


def test_peer_recorded_in_meta_json(peer_run, stages):
    """peer: meta.json records the peer (torch version, command) and the stages"""
    import torch  # noqa: E402  (the interpreter of this test is the peer's)
    out, r = peer_run
    meta = meta_of(out)
    peer = meta.get("peer")
    check(isinstance(peer, dict) and peer.get("name") == "torch", f"meta.json peer {peer!r}", r.command)
    check(peer.get("torch_version") == torch.__version__, f"peer torch_version {peer.get('torch_version')!r}, "
                                                          f"this torch is {torch.__version__}", r.command)
    check(peer.get("command", "").endswith("scripts/peer_torch.py --serve"), f"peer command {peer.get('command')!r}")
    check(isinstance(peer.get("blas"), list) and all(isinstance(p, str) for p in peer["blas"]),
          f"peer blas {peer.get('blas')!r}, expected a list of library paths")
    check(meta.get("stages") == stages and meta.get("status") == "complete",
          f"meta.json stages {meta.get('stages')}, status {meta.get('status')!r}", r.command)


def test_resume_reruns_only_the_missing_peer_rows(peer_run, attnbench, tmp_path, copy_folder, key, stages):
    """peer: --resume re-runs the peer only where torch rows are missing; ours and the rest stay byte for byte"""
    source, _ = peer_run
    folder = copy_folder(source, str(tmp_path / "resumed"))
    kept = {}
    for name in ("timing.csv", "samples.csv"):  # as if interrupted after ours at src_len 8, before the peer
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            lines = f.readlines()
        kept[name] = [line for line in lines if ",torch," not in line or ",2,8,2," not in line]
        check(len(kept[name]) < len(lines), f"test bug: no torch rows of src_len 8 in {name}")
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.writelines(kept[name])
    # Rows cut from the middle are damage to the journal (results/README.md, "Crash safety"); without
    # one (as an older attnbench left a folder) --resume adopts the rows that are there, all of them.
    os.remove(os.path.join(folder, "journal"))
    r = attnbench.run_ok("run", "--resume", folder, "--quiet")
    timing, _ = check_whole(key, folder, stages, command=r.command)
    _, original = read(os.path.join(source, "timing.csv"))
    check(sorted(key(row) for row in timing) == sorted(key(row) for row in original),
          "after --resume the timing keys differ from the uninterrupted run's", r.command)
    for name in ("timing.csv", "samples.csv"):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            lines = f.readlines()
        check(lines[:len(kept[name])] == kept[name], f"{name}: the rows that were there changed", r.command)
        check(all(",torch," in line and ",2,8,2," in line for line in lines[len(kept[name]):]),
              f"{name}: --resume appended rows other than the missing torch ones", r.command)
    with open(os.path.join(folder, "timing.csv"), encoding="utf-8") as f:
        before = f.read()
    r = attnbench.run_ok("run", "--resume", folder, "--quiet")
    with open(os.path.join(folder, "timing.csv"), encoding="utf-8") as f:
        check(f.read() == before, "resuming a complete run appended rows", r.command)


# Six points of one scorer; each point and its peer take ~0.2 s, so signals land mid-run.
SLOW_GRID = [*TINY, "--src-len", "4:24:4", "--scorer", "dot"]


def points_of(path, impl):
    """How many points (src_len values) timing.csv at `path` has rows of `impl` for (0 while it is missing)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return len({row["src_len"] for row in csv.DictReader(f) if row["impl"] == impl})
    except (OSError, KeyError):
        return 0


def state(pid):
    """The state letter of process `pid` (R running, S sleeping, Z zombie), or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def interrupt(attnbench, out, signals, timeout=60):
    """Starts `run --peer torch` of SLOW_GRID, waits for the first torch rows, then for the peer child to be
    busy measuring the next point (running, not waiting on its stdin), sends SIGINT `signals` times (0.05 s
    apart). Returns (Result, the peer child's pid, seconds from the last signal to exit)."""
    args = ["run", *SLOW_GRID, "--peer", "torch", *FAST, "--quiet", "--out", out]
    with attnbench.background(args, timeout) as job:
        timing = os.path.join(out, "timing.csv")
        job.wait_until(lambda: points_of(timing, "torch") >= 1, "torch row")
        # Ours' rows of the second point come after the peer ended the first (and went back to waiting on
        # its stdin); from then on the child runs only to measure the second point.
        job.wait_until(lambda: points_of(timing, "onednn") >= 2, "ours' second point")
        pid = job.proc.pid
        with open(f"/proc/{pid}/task/{pid}/children", encoding="utf-8") as f:
            children = [int(child) for child in f.read().split()]
        check(len(children) == 1, f"expected one peer child process, found {children}", job.command)
        job.wait_until(lambda: state(children[0]) == "R", f"second point measured by the peer child {children[0]}",
                       poll=0.001)
        for n in range(signals):
            if n:
                time.sleep(0.05)
            job.proc.send_signal(signal.SIGINT)
        result, waited = job.finish()
    return result, children[0], waited


def gone_or_zombie(pid, within=5.0):
    """True when process `pid` ends (or is a zombie waiting for init) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if state(pid) in (None, "Z"):
            return True
        time.sleep(0.02)
    return False


def check_interrupted_then_resume(attnbench, key, stages, out, r, peer_missing):
    """After the interrupt: whole rows, fewer than 6 points, torch rows for all points of ours but
    `peer_missing` (the range it may be in); then --resume completes both."""
    timing, _ = check_whole(key, out, stages, command=r.command)
    ours = {row["src_len"] for row in timing if row["impl"] == "onednn"}
    theirs = {row["src_len"] for row in timing if row["impl"] == "torch"}
    check(theirs <= ours and len(ours - theirs) in peer_missing and len(ours) < 6,
          f"after the interrupt: ours at src_len {sorted(ours)}, torch at {sorted(theirs)}; expected torch rows "
          f"for all points of ours but {list(peer_missing)}, and fewer than 6 points", r.command)
    resumed = attnbench.run_ok("run", "--resume", out, "--quiet")
    timing, _ = check_whole(key, out, stages, command=resumed.command)
    want = {(impl, str(L)) for impl in ("onednn", "torch") for L in range(4, 25, 4)}
    got = [(row["impl"], row["src_len"]) for row in timing if row["stage"] == stages[0]]
    check(sorted(got) == sorted(want), f"after --resume (impl, src_len) {sorted(got)}, expected each of "
                                       f"{sorted(want)} once", resumed.command)
    check(meta_of(out).get("status") == "complete", "meta.json status after --resume is not complete")


def test_one_sigint_while_the_peer_measures(attnbench, tmp_path, key, stages):
    """peer: one SIGINT while the peer measures -> it finishes the point, exit 130; --resume completes"""
    out = str(tmp_path / "sigint1")
    r, child, _ = interrupt(attnbench, out, 1)
    check(r.returncode == 130, f"expected exit 130; got {r.brief()}", r.command)
    check(meta_of(out).get("status") == "interrupted", "meta.json status is not interrupted", r.command)
    check(gone_or_zombie(child), f"the peer child {child} is still running after the run ended", r.command)
    # the peer finished the point it was measuring
    check_interrupted_then_resume(attnbench, key, stages, out, r, peer_missing=(0,))


def test_two_sigints_while_the_peer_measures(attnbench, tmp_path, key, stages):
    """peer: two SIGINTs while the peer measures -> exit 130 at once, the child ends, no partial rows; resume"""
    out = str(tmp_path / "sigint2")
    r, child, waited = interrupt(attnbench, out, 2)
    check(r.returncode == 130, f"expected exit 130; got {r.brief()}", r.command)
    check(waited < 5, f"took {waited:.1f} s to exit after the second SIGINT", r.command)
    check(gone_or_zombie(child), f"the peer child {child} is still running after the run was abandoned", r.command)
    # 1 unless the peer was done within 0.05 s
    check_interrupted_then_resume(attnbench, key, stages, out, r, peer_missing=(0, 1))


def test_memory_guard_skips_ours_and_the_peers_alike(sweep):
    """peer: over --max-memory, ours and the peer's rows are skipped alike"""
    out, r = sweep("skipped", *TINY, "--src-len", 4, "--scorer", "dot", "--stages", "step", "--peer", "torch",
                   "--max-memory", "0.0000001")
    _, timing = read(os.path.join(out, "timing.csv"))
    got = [(row["impl"], row["stage"], row["status"].split(" > ")[0]) for row in timing]
    need = timing[0]["status"].split(" > ")[0]
    check(need.startswith("skipped: needs") and got == [("onednn", "step", need), ("torch", "step", need)],
          f"rows (impl, stage, status) {got}", r.command)
    check(all(row["median_ns"] == "" for row in timing), "skipped rows have values", r.command)


def test_dry_run_marks_the_peer(attnbench):
    """peer: --dry-run marks '+ torch' on the first impl of each size and counts its time"""
    with_peer = attnbench.run_ok("run", *PEER_GRID, "--peer", "torch", "--dry-run")
    lines = [line for line in with_peer.stdout.splitlines() if re.match(r"^\s*\d+\s", line)]
    marked = [("+ torch" in line, "onednn" in line, re.search(r"src_len (\d+)", line).group(1)) for line in lines]
    check(marked == [(True, True, "4"), (True, True, "8"), (False, False, "4"), (False, False, "8")],
          f"(+ torch, onednn, src_len) per point line {marked}", with_peer.command)
    check(re.search(r"^total: 4 points, about .* \(with the torch peer\)$", with_peer.stdout, re.M),
          f"no total line naming the peer: {with_peer.stdout[-200:]!r}", with_peer.command)


def test_unknown_peer_is_refused(attnbench, tmp_path):
    """peer: --peer other than torch -> exit 2 naming --peer and the value, nothing written"""
    out = str(tmp_path / "bad_peer")
    r = attnbench.run("run", *TINY, "--src-len", 4, "--scorer", "dot", "--peer", "jax", "--out", out)
    r.one_error_line([r"--peer", r"'jax'", r"\btorch\b"])
    check(not os.path.exists(out), f"created {out}", r.command)


def test_peer_whose_torch_does_not_import_is_refused(attnbench, tmp_path):
    """peer: torch that does not import -> exit 2, one line naming --peer torch and the error, nothing written"""
    fake = str(tmp_path / "fake_torch")
    os.makedirs(fake)
    with open(os.path.join(fake, "torch.py"), "w", encoding="utf-8") as f:
        f.write('raise ModuleNotFoundError("No module named \'torch\' (peer_run_test)")\n')
    out = str(tmp_path / "no_torch")
    r = attnbench.run("run", *TINY, "--src-len", 4, "--scorer", "dot", "--peer", "torch", *FAST, "--out", out,
            env={"PYTHONPATH": fake})
    r.one_error_line([r"--peer torch", r"No module named 'torch' \(peer_run_test\)"])
    check(not os.path.exists(out), f"created {out}", r.command)


@pytest.mark.parametrize("extra", [["--peer", "torch"], ["--stages", "step"]], ids=["peer", "stages"])
def test_resume_with_peer_or_stages_is_refused(peer_run, attnbench, extra):
    """peer: --resume with --peer or --stages -> exit 2 naming --resume"""
    out, _ = peer_run
    attnbench.run("run", "--resume", out, *extra).one_error_line([r"--resume", re.escape(extra[0])])


# ------------------------------------------------------------------------------------ --stages

def test_stages_subset_for_ours_and_the_peer(sweep, attnbench, key):
    """stages: --stages step,keys writes keys and step only (schema order), for ours and the peer"""
    out, r = sweep("stages", *TINY, "--src-len", 4, "--scorer", "dot,general", "--stages", "step,keys", "--peer",
                   "torch")
    timing, samples = check_whole(key, out, ["keys", "step"], command=r.command)
    got = [(row["scorer"], row["impl"], row["stage"]) for row in timing]
    want = [(s, i, st) for i in ("onednn",) for s in ("dot", "general") for st in ("keys", "step")] + \
           [(s, "torch", st) for s in ("dot", "general") for st in ("keys", "step")]
    check(got == want, f"rows (scorer, impl, stage) {got}, expected {want}", r.command)
    check({s["stage"] for s in samples} == {"keys", "step"}, "samples.csv has other stages", r.command)
    check(meta_of(out).get("stages") == ["keys", "step"], f"meta.json stages {meta_of(out).get('stages')}")
    check(all(" --stages keys,step " in row["repro"] for row in timing),
          f"a repro lacks --stages keys,step: {timing[0]['repro']!r}", r.command)
    with open(os.path.join(out, "timing.csv"), encoding="utf-8") as f:
        before = f.read()
    r = attnbench.run_ok("run", "--resume", out, "--quiet")
    with open(os.path.join(out, "timing.csv"), encoding="utf-8") as f:
        check(f.read() == before, "--resume of a complete --stages run appended rows", r.command)


def test_stages_repro_remeasures_its_row(sweep, attnbench, tmp_path, key):
    """stages: a row's repro re-measures exactly its (point, scorer) at the run's stages"""
    out, _ = sweep("stages_repro", *TINY, "--src-len", 4, "--scorer", "dot", "--stages", "attend")
    _, timing = read(os.path.join(out, "timing.csv"))
    check(len(timing) == 1, f"{len(timing)} rows, expected 1 (dot, attend)")
    argv = timing[0]["repro"].split()
    again = str(tmp_path / "stages_repro_again")
    r = attnbench.run_ok(*argv[1:], "--quiet", "--out", again)
    _, rows = read(os.path.join(again, "timing.csv"))
    check([key(row) for row in rows] == [key(timing[0])], f"repro wrote keys {[key(row) for row in rows]}", r.command)


@pytest.mark.parametrize("value", ["step,bogus", "", "step,", "Step"], ids=["unknown", "empty", "trailing-comma",
                                                                        "capitalised"])
def test_bad_stages_one_error_line_nothing_written(attnbench, tmp_path, stages, value):
    """--stages VALUE -> exit 2, one line naming --stages, the bad name and every stage in order; nothing written."""
    out = str(tmp_path / "run")
    r = attnbench.run("run", *TINY, "--src-len", 4, "--scorer", "dot", "--stages", value, "--out", out)
    bad = next((name for name in value.split(",") if name not in stages), "")
    r.one_error_line([r"--stages", re.escape(f"'{bad}'"), r".*".join(rf"\b{stage}\b" for stage in stages)])
    check(not os.path.exists(out), f"created {out}", r.command)


