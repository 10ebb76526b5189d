"""Cross-checks `attnbench probe --init torch` against PyTorch, value for value.

Each case runs the binary and scripts/torch_twin.py on the same flags and compares the two CSVs: the rows
must name the same tensor, step, example and index in the same order, -inf must sit at the same places,
and every other value must agree within 1e-5. A case is one named shape, one scorer and one --impl; the
one-step cases loop over the seeds. The twin's outputs do not depend on the binary: they are computed
once per build, in one process (torch is imported once), for every case of this file.
"""
from __future__ import annotations

import contextlib
import io
import math
import subprocess

import pytest

TOLERANCE = 1e-5
# 2**32 + 3: PyTorch seeds MT19937 with the low 32 bits, so this is seed 3's stream.
SEEDS = (0, 1, 7, 12345, 2**32 + 3)

# One attention step: H = randn(B, L, E), s = randn(B, D), then the scorer.
ONE_STEP_SHAPES = {
    # The lesson's sizes, no padding.
    "lesson": dict(batch=2, src_len=10, enc_dim=16, dec_dim=20, attn_dim=32),
    # Batch 1, one source position; H (2 values) and s (7) take PyTorch's double Box-Muller path.
    "one-position": dict(batch=1, src_len=1, enc_dim=2, dec_dim=7, attn_dim=3),
    # Odd sizes and explicit lengths down to 1.
    "odd-lengths": dict(batch=3, src_len=17, enc_dim=18, dec_dim=33, attn_dim=17, lengths=(17, 9, 1)),
    # s has 12 values (< 16), H many; lengths fall linearly 33 .. 2.
    "linear-lengths": dict(batch=4, src_len=33, enc_dim=8, dec_dim=3, attn_dim=5, len_min=2),
    # Two blocks of 16 plus a tail in both randn calls; one short example.
    "block-tails": dict(batch=2, src_len=5, enc_dim=6, dec_dim=19, attn_dim=1, lengths=(5, 2)),
}

# Whole decodes, run for every scorer; each (shape, scorer) with one seed, SEEDS[(n + k) % len(SEEDS)] for
# the n-th shape and the k-th scorer.
DECODE_SHAPES = {
    # The lesson's sizes, lengths 10 and 6.
    "lesson": dict(batch=2, src_len=10, emb_dim=16, enc_dim=16, dec_dim=20, attn_dim=32, vocab=100, len_min=6,
                   steps=5),
    # Embedding tables of 15 values: the second uses the normal the first left cached.
    "tiny-tables": dict(batch=1, src_len=1, emb_dim=5, enc_dim=2, dec_dim=3, attn_dim=2, vocab=3, steps=3),
    # Odd sizes, explicit lengths down to 1.
    "odd-lengths": dict(batch=3, src_len=17, emb_dim=9, enc_dim=34, dec_dim=33, attn_dim=17, vocab=41,
                        lengths=(17, 5, 1), steps=4),
    # Larger and padded (lengths 33, 23, 13, 3), on two threads.
    "padded-two-threads": dict(batch=4, src_len=33, emb_dim=32, enc_dim=64, dec_dim=48, attn_dim=40, vocab=257,
                               len_min=3, steps=6, threads=2),
}


def one_step_probes(shape, scorer):
    """{label: Probe fields} of one one-step case."""
    return {f"one-step {shape} {scorer} seed {seed}": dict(scorer=scorer, seed=seed, **ONE_STEP_SHAPES[shape])
            for seed in SEEDS}


def decode_probes(shape, scorer, scorers):
    n, k = list(DECODE_SHAPES).index(shape), scorers.index(scorer)
    return {f"decode {shape} {scorer}": dict(scorer=scorer, seed=SEEDS[(n + k) % len(SEEDS)], **DECODE_SHAPES[shape])}


@pytest.fixture(scope="session")
def twin(cache, binary):
    """{label: {"flags": the binary's flags, "csv": the twin's CSV or "error": why it has none}} for every probe
    of this file, computed once per build."""
    import attnbench_lists
    scorers = attnbench_lists.scorer_names(binary)

    def make(_):
        import torch_twin
        probes = {}
        for scorer in scorers:
            for shape in ONE_STEP_SHAPES:
                probes.update(one_step_probes(shape, scorer))
            for shape in DECODE_SHAPES:
                probes.update(decode_probes(shape, scorer, scorers))
        out = {}
        for label, fields in probes.items():
            probe = torch_twin.Probe(**fields)
            try:
                out[label] = {"flags": probe.flags(), "csv": torch_twin.run_probe(probe)}
            except Exception as error:  # noqa: BLE001  (the case that needs it reports it)
                out[label] = {"flags": probe.flags(), "error": f"{type(error).__name__}: {error}"}
        return out
    return cache.get("torch_crosscheck_test.twin", make)[1]


def parse_csv(text):
    """Splits probe CSV into (header, keys, values): keys are the leading columns, values floats."""
    lines = text.splitlines()
    keys, values = [], []
    for line in lines[1:]:
        key, _, value = line.rpartition(",")
        keys.append(key)
        values.append(float(value))
    return lines[0] if lines else "", keys, values


def difference(a, b):
    """|a - b|, 0 when both are the same infinity, inf when the values cannot match (nan, one infinite)."""
    if math.isinf(a) or math.isinf(b):
        return 0.0 if a == b else math.inf
    return abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf


def compare(binary, impl, expected):
    """Runs the binary for one probe; returns (None or what differs, the largest difference seen)."""
    if "error" in expected:
        return f"the twin cannot run it: {expected['error']}", None
    run = subprocess.run([binary, "probe", "--impl", impl, *expected["flags"]], capture_output=True, text=True,
                         check=False, timeout=60)
    if run.returncode != 0:
        return f"binary exited {run.returncode}: {run.stderr.strip()}", None
    header, keys, values = parse_csv(run.stdout)
    twin_header, twin_keys, twin_values = parse_csv(expected["csv"])
    if header != twin_header:
        return f"header: binary '{header}', twin '{twin_header}'", None
    if keys != twin_keys:
        at = next((n for n, (a, b) in enumerate(zip(keys, twin_keys)) if a != b), min(len(keys), len(twin_keys)))
        got = keys[at] if at < len(keys) else "<end>"
        want = twin_keys[at] if at < len(twin_keys) else "<end>"
        return f"row {at + 1}: binary has '{got}', twin has '{want}' ({len(keys)} vs {len(twin_keys)} rows)", None
    worst = 0.0
    for key, a, b in zip(keys, values, twin_values):
        diff = difference(a, b)
        if diff > TOLERANCE:
            return f"{key} (tensor,[t,]b,i): binary {a!r}, torch {b!r}, |diff| {diff:.3g} > {TOLERANCE}", None
        worst = max(worst, diff)
    return None, worst


def check_probes(binary, impl, twin, labels):
    problems = []
    for label in labels:
        problem, worst = compare(binary, impl, twin[label])
        command = " ".join(["attnbench", "probe", "--impl", impl, *twin[label]["flags"]])
        if problem:
            problems.append(f"{command}\n  {problem}")
        else:
            print(f"worst |diff| {worst:.3g}: {command}")
    assert not problems, f"{len(problems)} of {len(labels)} probes differ from PyTorch:\n" + "\n".join(problems)


@pytest.mark.parametrize("shape", list(ONE_STEP_SHAPES))
def test_one_step_matches_torch_for_every_seed(binary, twin, impl, shape, scorer):
    check_probes(binary, impl, twin, list(one_step_probes(shape, scorer)))


@pytest.mark.parametrize("shape", list(DECODE_SHAPES))
def test_decode_matches_torch(binary, twin, lists, impl, shape, scorer):
    scorers = [s["name"] for s in lists["scorers"]]
    check_probes(binary, impl, twin, list(decode_probes(shape, scorer, scorers)))


def test_twin_refuses_the_fast_init():
    """scripts/torch_twin.py probe --init fast: exit 2 naming --init, nothing on stdout."""
    import torch_twin
    with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()) as out:
        code = torch_twin.main(["probe", "--init", "fast"])
    assert code == 2 and not out.getvalue() and "--init" in err.getvalue(), \
        f"exit {code}, stdout {out.getvalue()[:80]!r}, stderr {err.getvalue().strip()!r}"


def test_twin_has_exactly_the_binarys_scorers(lists):
    """A scorer the binary lists but the twin lacks (or the other way round) cannot go unchecked against PyTorch."""
    import torch_twin
    binary = [s["name"] for s in lists["scorers"]]
    assert list(torch_twin.SCORERS) == binary, f"torch_twin.SCORERS {list(torch_twin.SCORERS)}, the binary {binary}"
