"""Tests of scripts/peer_torch.py, the PyTorch eager peer, against the attnbench binary.

A tiny `attnbench run` (A) and the peer on its grid (B), made once per build and shared: the cases
check that B keeps A's schema, keys (with impl=torch) and cost model, that its samples agree with its
statistics, and what `attnbench compare` does with the two. No case asserts a speed. Needs Debian's
/usr/bin/python3 with python3-torch.
"""

import csv
import json
import os
import shlex
import statistics
import sys

import pytest

from conftest import ROOT, execute, writable_copy

PEER = os.path.join(ROOT, "scripts", "peer_torch.py")
REPETITIONS = 2
A_SCORERS = ["dot", "additive"]
A_GRID = ["--batch", 2, "--src-len", "4,8", "--scorer", ",".join(A_SCORERS)]
A_ROWS_PER_STAGE = 2 * len(A_SCORERS)  # two sizes
# The timing values every peer row has its own check for; the others must be positive numbers.
OWN_CHECK = {"repetitions", "iterations", "stddev_ns", "cv", "roofline_pct", "bound", "status", "repro"}


def peer(*args, cwd=None, stdin=None):
    """Runs the peer with `args` under this Python (Debian's, with torch)."""
    return execute([sys.executable, PEER, *args], "scripts/peer_torch.py", cwd=cwd, stdin=stdin)


@pytest.fixture
def folder_a(cached_sweep):
    """attnbench's run (read-only)."""
    return cached_sweep("peer_torch_test.A", *A_GRID, "--repetitions", REPETITIONS, "--min-time", 0.002,
                        "--quiet")[0]


@pytest.fixture
def folder_b(cache, folder_a):
    """The peer on A's grid (read-only)."""
    def make(entry):
        peer("--grid-from", folder_a, "--out", os.path.join(entry, "run"), "--repetitions", REPETITIONS,
             "--min-time", 0.002, "--quiet").ok()
        return None
    return os.path.join(cache.get("peer_torch_test.B", make)[0], "run")


COMBINE = ["--repetitions", 1, "--min-time", 0.0005, "--quiet"]


@pytest.fixture
def combined(cache, folder_a):
    """A copy of A with the peer's rows appended by `--grid-from A --out A` (read-only)."""
    def make(entry):
        run = writable_copy(folder_a, os.path.join(entry, "run"))
        peer("--grid-from", run, "--out", run, *COMBINE).ok()
        return None
    return os.path.join(cache.get("peer_torch_test.combined", make)[0], "run")


def read(path):
    """(header, rows as dicts) of a CSV file."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], row)) for row in rows[1:]]


def key_of(names, row, impl=None):
    return tuple(impl if (c == "impl" and impl) else row[c] for c in names)


def close(cell, value):
    """A %.9g cell against a value computed from other %.9g cells (two roundings of 5e-9 each)."""
    return abs(float(cell) - value) <= 1e-8 * abs(value)


# ------------------------------------------------------------------------------------ cases

@pytest.mark.parametrize("name", ["timing.csv", "samples.csv"])
def test_peer_writes_attnbenchs_header(folder_a, folder_b, name):
    header_a, _ = read(os.path.join(folder_a, name))
    header_b, _ = read(os.path.join(folder_b, name))
    assert header_a == header_b, f"{name}: header {header_b} differs from attnbench's {header_a}"


def test_peer_keys_are_attnbenchs_with_impl_torch_in_order(folder_a, folder_b, key_names, stages):
    _, rows_a = read(os.path.join(folder_a, "timing.csv"))
    _, rows_b = read(os.path.join(folder_b, "timing.csv"))
    want_rows = A_ROWS_PER_STAGE * len(stages)
    assert len(rows_a) == want_rows, f"attnbench wrote {len(rows_a)} timing rows, expected 2 points x 2 scorers x " \
                                     f"{len(stages)} stages"
    got, want = [key_of(key_names, r) for r in rows_b], [key_of(key_names, r, impl="torch") for r in rows_a]
    assert got == want, f"keys differ: first B-only {sorted(set(got) - set(want))[:2]}, " \
                        f"first A-only {sorted(set(want) - set(got))[:2]}"


def test_peer_values_parse_positive_and_ordered(folder_b, key_names, binary):
    """Every value parses, is positive where it must be, and min <= median <= max."""
    import attnbench_lists
    info = attnbench_lists.lists(binary)
    sequence = {stage["name"] for stage in info["stages"] if stage["per"] == "sequence"}
    positive = [c for c in info["files"]["timing.csv"]["values"] if c not in OWN_CHECK]
    _, rows = read(os.path.join(folder_b, "timing.csv"))
    for row in rows:
        where = f"row {key_of(key_names, row)}"
        assert row["status"] == "ok" and row["roofline_pct"] == "", f"{where}: status/roofline_pct {row['status']!r}"
        assert row["repetitions"] == str(REPETITIONS), f"{where}: repetitions {row['repetitions']}"
        assert int(row["iterations"]) >= REPETITIONS, f"{where}: iterations {row['iterations']}"
        for column in positive:
            assert float(row[column]) > 0, f"{where}: {column} = {row[column]!r}, expected > 0"
        for column in ("stddev_ns", "cv"):
            assert float(row[column]) >= 0, f"{where}: {column} = {row[column]!r}, expected >= 0"
        median = float(row["median_ns"])
        assert float(row["min_ns"]) <= median <= float(row["max_ns"]), f"{where}: median outside [min, max]"
        per_step = median / int(row["tgt_len"]) if row["stage"] in sequence else median
        assert close(row["ns_per_step"], per_step), f"{where}: ns_per_step {row['ns_per_step']}, " \
                                                    f"expected {per_step:.9g}"
        for rate, work in (("gflops", "flops"), ("gbps", "bytes")):
            want = float(row[work]) / median
            assert close(row[rate], want), f"{where}: {rate} {row[rate]}, expected {work} / median_ns = {want:.9g}"


def test_peer_samples_agree_with_its_statistics(folder_b, key_names):
    """One sample per repetition and key, their median is median_ns, their iterations add up."""
    _, timing = read(os.path.join(folder_b, "timing.csv"))
    _, samples = read(os.path.join(folder_b, "samples.csv"))
    by_key = {}
    for s in samples:
        by_key.setdefault(key_of(key_names, s), []).append(s)
    assert set(by_key) == {key_of(key_names, r) for r in timing}, "samples.csv keys differ from timing.csv's"
    for row in timing:
        rows = by_key[key_of(key_names, row)]
        where = f"key {key_of(key_names, row)}"
        assert sorted(int(s["repetition"]) for s in rows) == list(range(REPETITIONS)), f"{where}: repetitions"
        median = statistics.median(float(s["ns"]) for s in rows)
        assert close(row["median_ns"], median), f"{where}: median of samples {median:.9g} != {row['median_ns']}"
        total = sum(int(s["iterations"]) for s in rows)
        assert total == int(row["iterations"]), f"{where}: sample iterations add to {total}, not {row['iterations']}"


def test_peer_flops_and_bytes_equal_attnbenchs(folder_a, folder_b, key_names):
    """The same cost model for the same key."""
    _, rows_a = read(os.path.join(folder_a, "timing.csv"))
    _, rows_b = read(os.path.join(folder_b, "timing.csv"))
    ours = {key_of(key_names, r, impl="torch"): r for r in rows_a}
    for row in rows_b:
        a = ours[key_of(key_names, row)]
        for column in ("flops", "bytes"):
            assert row[column] == a[column], f"{key_of(key_names, row)}: {column} {row[column]}, attnbench {a[column]}"


def test_ported_cost_model_equals_attnbenchs_at_odd_sizes(attnbench, tmp_path, scorer, stages):
    """For every scorer and stage."""
    import peer_torch  # imports torch: only here
    path = tmp_path / "costs"
    attnbench.run_ok("run", "--scorer", scorer, "--batch", 3, "--src-len", 5, "--tgt-len", 3, "--emb-dim", 7,
                     "--enc-dim", 6, "--dec-dim", 9, "--attn-dim", 11, "--vocab", 13, "--len-min", 2,
                     "--repetitions", 1, "--min-time", 0.0001, "--quiet", "--out", path)
    _, rows = read(os.path.join(path, "timing.csv"))
    assert [row["stage"] for row in rows] == stages, f"stages {[row['stage'] for row in rows]}, expected {stages}"
    point = peer_torch.Point(scorers=[], batch=3, src_len=5, tgt_len=3, emb_dim=7, enc_dim=6, dec_dim=9, attn_dim=11,
                             vocab=13, len_min=2)
    for row in rows:
        cost = peer_torch.stage_cost(point, row["scorer"], row["stage"])
        got = ("%.9g" % cost.flops, "%.9g" % cost.bytes)
        assert got == (row["flops"], row["bytes"]), f"{row['scorer']} {row['stage']}: peer {got}, " \
                                                    f"attnbench {(row['flops'], row['bytes'])}"


def test_cached_key_scores_equal_the_twins_forward(scorer):
    """score(s, K) with the keys cached equals the twin scorer's forward(s, H); padding masked."""
    import torch
    import peer_torch
    point = peer_torch.Point(scorers=[scorer], batch=3, src_len=6, len_min=2, seed=5)
    with torch.no_grad():
        r = peer_torch.make_rig(point, scorer)
        cached = peer_torch.score(r.model.scorer, r.s, r.K)
        direct = r.model.scorer(r.s, r.H)
        assert torch.allclose(cached, direct, rtol=1e-6, atol=1e-6), f"{scorer}: cached {cached} != {direct}"
        masked = torch.isinf(r.e)
        want = torch.arange(6)[None, :] >= torch.tensor([6, 4, 2])[:, None]
        assert torch.equal(masked, want), f"{scorer}: masked positions {masked.tolist()}"


def compare_csv(attnbench, *args):
    r = attnbench.run_ok("compare", *args, "--csv")
    lines = r.stdout.strip().splitlines()
    header = lines[0].split(",")
    return r, header, lines[1:]


def test_compare_b_with_b_matches_every_row_ratio_1(attnbench, folder_b, key_names, stages):
    r, header, body = compare_csv(attnbench, folder_b, folder_b)
    assert header[:len(key_names)] == key_names, f"compare --csv header {header}"
    rows = [dict(zip(header, line.split(","))) for line in body]
    want = A_ROWS_PER_STAGE * len(stages)
    assert len(rows) == want, f"expected {want} matched rows, got {len(rows)}:\n{r.stdout[:500]}"
    assert all(row["impl"] == "torch" and float(row["ratio"]) == 1.0 for row in rows), "a ratio is not 1 or impl wrong"


def test_appending_to_attnbenchs_run_keeps_one_header_a_rerun_adds_nothing(attnbench, folder_a, combined, tmp_path,
                                                                           stages):
    """Appending to attnbench's own run folder keeps one header and both impls; a rerun adds nothing."""
    per_impl = A_ROWS_PER_STAGE * len(stages)
    header, rows = read(os.path.join(combined, "timing.csv"))
    assert header == read(os.path.join(folder_a, "timing.csv"))[0], "the header changed"
    impls = sorted({r["impl"] for r in rows})
    assert len(rows) == 2 * per_impl and impls == ["onednn", "torch"], f"{len(rows)} rows, impls {impls}"
    _, samples = read(os.path.join(combined, "samples.csv"))
    assert len(samples) == per_impl * REPETITIONS + per_impl, \
        f"samples.csv has {len(samples)} rows, expected {per_impl * REPETITIONS + per_impl}"
    again = writable_copy(combined, str(tmp_path / "combined"))
    peer("--grid-from", again, "--out", again, *COMBINE).ok()
    assert len(read(os.path.join(again, "timing.csv"))[1]) == 2 * per_impl, "a second run appended rows again"
    r = attnbench.run_ok("compare", again, again)
    assert f"over {per_impl} rows" in r.stdout, f"compare of the combined folder with itself:\n{r.stdout[-400:]}"


def test_compare_baseline_impl_torch_pairs_every_onednn_row(attnbench, combined, key_names, stages):
    r, header, body = compare_csv(attnbench, combined, "--baseline", "impl=torch")
    rows = [dict(zip(header, line.split(","))) for line in body if line.count(",") >= len(key_names)]
    want = A_ROWS_PER_STAGE * len(stages)
    assert len(rows) == want, f"expected {want} matched rows, got {len(rows)}:\n{r.stdout[:500]}"
    assert all(row["impl"] == "onednn" and float(row["ratio"]) > 0 for row in rows), "a row is not onednn/torch"


def test_peer_repro_reruns_exactly_its_point(folder_b, tmp_path, key_names, stages):
    _, rows = read(os.path.join(folder_b, "timing.csv"))
    row = next(r for r in rows if r["scorer"] == "additive" and r["src_len"] == "8")
    argv = shlex.split(row["repro"])
    assert argv[0] == "scripts/peer_torch.py", f"repro {row['repro']!r} does not start with scripts/peer_torch.py"
    out = tmp_path / "repro"
    peer(*argv[1:], "--out", out, "--quiet", cwd=ROOT).ok()
    _, again = read(os.path.join(out, "timing.csv"))
    want = [key_of(key_names, r) for r in rows if r["repro"] == row["repro"]]
    assert [key_of(key_names, r) for r in again] == want and len(want) == len(stages), \
        f"repro wrote keys {[key_of(key_names, r) for r in again]}"
    assert all(r["repro"] == row["repro"] for r in again), "the re-run's repro differs"


BAD_INPUT = [("scorer-nope", ["--scorer", "nope"], "--scorer"),
             ("odd-enc-dim", ["--enc-dim", "7"], "--enc-dim"),
             ("batch-x", ["--batch", "x"], "--batch"),
             ("grid-from-missing", ["--grid-from", "{out}/missing"], "--grid-from"),
             ("grid-from-with-grid-flags", ["--grid-from", "{out}", "--batch", "3"], "--grid-from"),
             ("repetitions-0", ["--repetitions", "0"], "--repetitions"),
             ("unknown-stage", ["--stages", "step,nope"], "--stages")]


@pytest.mark.parametrize("args, flag", [case[1:] for case in BAD_INPUT], ids=[case[0] for case in BAD_INPUT])
def test_peer_bad_input_one_error_line_no_output_folder(tmp_path, args, flag):
    out = str(tmp_path / "never")
    r = peer(*[a.format(out=out) for a in args], "--out", out)
    r.one_error_line([flag])
    assert not os.path.exists(out), f"{r.command} created {out}"


def test_serve_answers_requests_errors_and_ends_at_eof(binary):
    """--serve: hello line, rows of a request as cells (f32 measured, bf16 skipped), errors answered, EOF ends it."""
    import torch
    import attnbench_lists
    timing_columns = attnbench_lists.columns(binary, "timing.csv")
    samples_columns = attnbench_lists.columns(binary, "samples.csv")
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
    done = peer("--serve", stdin=text.encode()).ok()
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 1 + len(requests) + 1, f"{done.command}: {len(lines)} lines, expected hello + 6 answers"
    assert lines[0].get("peer") == "torch" and lines[0].get("torch_version") == torch.__version__, \
        f"hello {lines[0]}"
    at = {name: n for n, name in enumerate(timing_columns)}
    timing, samples = lines[1]["timing"], lines[1]["samples"]
    assert [(r[at["scorer"]], r[at["impl"]], r[at["src_len"]], r[at["stage"]]) for r in timing] == \
        [(s, "torch", "4", st) for s in ("dot", "general") for st in ("keys", "step")], f"timing keys {timing}"
    assert all(len(r) == len(timing_columns) and r[at["status"]] == "ok" and " --stages keys,step " in r[at["repro"]]
               for r in timing), f"timing cells {timing[0]}"
    assert len(samples) == 4 * REPETITIONS and all(len(r) == len(samples_columns) for r in samples), \
        f"{len(samples)} samples rows"
    skipped = lines[2]["timing"]
    assert len(skipped) == 1 and skipped[0][at["dtype"]] == "bf16" \
        and skipped[0][at["status"]].startswith("skipped: the torch peer") and skipped[0][at["median_ns"]] == "" \
        and lines[2]["samples"] == [], f"bf16 answer {lines[2]}"
    assert [r[at["status"]] for r in lines[3]["timing"]] == ["skipped: needs 2 GiB > --max-memory 1 GiB"] \
        and lines[3]["samples"] == [], f"skip answer {lines[3]}"
    assert "--enc-dim" in lines[4].get("error", ""), f"bad point answer {lines[4]}"
    assert "--stages: unknown stage 'bogus'" in lines[5].get("error", ""), f"bad stage answer {lines[5]}"
    assert "not JSON" in lines[6].get("error", ""), f"non-JSON answer {lines[6]}"


def test_peer_knows_exactly_the_binarys_scorers_and_stages(binary):
    """A scorer or stage the binary lists but the peer (or its twin) lacks cannot go unchecked against PyTorch."""
    import attnbench_lists
    import peer_torch
    scorers, stages = attnbench_lists.scorer_names(binary), attnbench_lists.stage_names(binary)
    assert peer_torch.scorer_list("all") == scorers, \
        f"peer_torch.py --scorer all is {peer_torch.scorer_list('all')}, the binary lists {scorers}"
    assert peer_torch.stage_list(",".join(stages)) == stages, \
        f"peer_torch.py orders the stages {peer_torch.stage_list(','.join(stages))}, the binary lists {stages}"
