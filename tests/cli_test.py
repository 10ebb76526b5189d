"""CLI tests: run the built attnbench binary the way a user does and check what it prints.

Run by CTest one case per process (see tests/CMakeLists.txt), or all at once:
    /usr/bin/python3 -m pytest tests/cli_test.py --attnbench build/attnbench
"""

import math
import os
import re

import pytest

PROBE_ONLY_FLAGS = ["--lengths", "--steps"]


# ---------------------------------------------------------------------------- CSV helpers

def parse_csv(r, header):
    """Parses probe output: checks the header and returns rows as lists of strings,
    the last cell converted to float."""
    lines = r.stdout.splitlines()
    if not lines or lines[0] != header:
        r.fail(f"expected header {header!r}, got {lines[0] if lines else ''!r}")
    width = header.count(",") + 1
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        cells = line.split(",")
        if len(cells) != width:
            r.fail(f"line {n} {line!r} has {len(cells)} fields, expected {width}")
        try:
            value = float(cells[-1])
        except ValueError:
            r.fail(f"line {n} {line!r}: value {cells[-1]!r} is not a number")
        if math.isnan(value):
            r.fail(f"line {n} {line!r}: value is NaN")
        rows.append(cells[:-1] + [value])
    return rows


def group(rows, key_len):
    """{tuple(first key_len cells): [values in order]}, and the order of first appearance."""
    out = {}
    for row in rows:
        out.setdefault(tuple(row[:key_len]), []).append(row)
    return out


def check_indices(r, name, rows, batch, per_example):
    """rows are (..., b, i, value) for one tensor: b in 0..batch-1, i in 0..per_example-1, in order."""
    expected = [(str(b), str(i)) for b in range(batch) for i in range(per_example)]
    got = [(row[-3], row[-2]) for row in rows]
    if got != expected:
        r.fail(f"{name}: (b, i) indices are not 0..{batch - 1} x 0..{per_example - 1} in row-major order")


def check_weights(r, label, weights_by_b, lengths):
    """Weights of each example sum to 1 within 1e-6, are in [0, 1], and are 0 beyond its length."""
    for b, values in enumerate(weights_by_b):
        total = sum(values)
        if abs(total - 1.0) > 1e-6:
            r.fail(f"{label}: weights of example {b} sum to {total!r}, expected 1 within 1e-6")
        for i, w in enumerate(values):
            if not 0.0 <= w <= 1.0:
                r.fail(f"{label}: weight[{b}][{i}] = {w!r} is outside [0, 1]")
            if i >= lengths[b] and w != 0.0:
                r.fail(f"{label}: weight[{b}][{i}] = {w!r} beyond length {lengths[b]}, expected 0")


def check_scores(r, label, scores_by_b, lengths):
    """Scores are finite within each example's length and -inf beyond it."""
    for b, values in enumerate(scores_by_b):
        for i, s in enumerate(values):
            if i < lengths[b] and not math.isfinite(s):
                r.fail(f"{label}: score[{b}][{i}] = {s!r} within length {lengths[b]}, expected finite")
            if i >= lengths[b] and s != -math.inf:
                r.fail(f"{label}: score[{b}][{i}] = {s!r} beyond length {lengths[b]}, expected -inf")


def split_by_example(rows, batch):
    return [[row[-1] for row in rows if row[-3] == str(b)] for b in range(batch)]


def check_one_step(r, batch, src_len, enc_dim, lengths):
    """Checks one-step probe output (header tensor,b,i,value); returns {tensor: rows}."""
    rows = parse_csv(r, "tensor,b,i,value")
    by_tensor = group(rows, 1)
    names = [key[0] for key in by_tensor]
    if names != ["scores", "weights", "context"]:
        r.fail(f"expected tensors scores, weights, context in that order, got {names}")
    counts = {"scores": batch * src_len, "weights": batch * src_len, "context": batch * enc_dim}
    for name, count in counts.items():
        got = len(by_tensor[(name,)])
        if got != count:
            r.fail(f"{name}: expected {count} rows, got {got}")
    check_indices(r, "scores", by_tensor[("scores",)], batch, src_len)
    check_indices(r, "weights", by_tensor[("weights",)], batch, src_len)
    check_indices(r, "context", by_tensor[("context",)], batch, enc_dim)
    check_scores(r, "scores", split_by_example(by_tensor[("scores",)], batch), lengths)
    check_weights(r, "weights", split_by_example(by_tensor[("weights",)], batch), lengths)
    for row in by_tensor[("context",)]:
        if not math.isfinite(row[-1]):
            r.fail(f"context[{row[1]}][{row[2]}] = {row[-1]!r}, expected finite")
    return by_tensor


def check_decode(r, steps, batch, src_len, enc_dim, dec_dim, vocab, lengths):
    """Checks --steps output (header tensor,t,b,i,value)."""
    rows = parse_csv(r, "tensor,t,b,i,value")
    by_key = group(rows, 2)
    expected = [("annotations", ""), ("state", "0")]
    for t in range(1, steps + 1):
        expected += [(name, str(t)) for name in ("scores", "weights", "context", "state", "logits")]
    if list(by_key) != expected:
        r.fail(f"expected (tensor, t) blocks {expected}, got {list(by_key)}")
    per_example = {"annotations": src_len * enc_dim, "state": dec_dim, "scores": src_len, "weights": src_len,
                   "context": enc_dim, "logits": vocab}
    for key, block in by_key.items():
        name, t = key
        count = batch * per_example[name]
        if len(block) != count:
            r.fail(f"{name} at t={t!r}: expected {count} rows (B x {per_example[name]}), got {len(block)}")
        check_indices(r, f"{name} at t={t!r}", block, batch, per_example[name])
        if name not in ("scores",):
            for row in block:
                if not math.isfinite(row[-1]):
                    r.fail(f"{name} at t={t!r}: value {row[-1]!r} at b={row[2]}, i={row[3]} is not finite")
    for t in range(1, steps + 1):
        label = f"t={t}"
        check_scores(r, f"scores at {label}", split_by_example(by_key[("scores", str(t))], batch), lengths)
        check_weights(r, f"weights at {label}", split_by_example(by_key[("weights", str(t))], batch), lengths)
    return by_key


def compare_values(r1, r2, header, tol):
    """Same rows (all key cells equal) and values within tol (absolute, or relative for |x| > 1)."""
    rows1, rows2 = parse_csv(r1, header), parse_csv(r2, header)
    if len(rows1) != len(rows2):
        r2.fail(f"{len(rows2)} rows, but `{r1.command}` gave {len(rows1)}")
    worst = 0.0
    for a, b in zip(rows1, rows2):
        if a[:-1] != b[:-1]:
            r2.fail(f"row keys {b[:-1]} differ from {a[:-1]} of `{r1.command}`")
        x, y = a[-1], b[-1]
        if math.isinf(x) or math.isinf(y):
            if x != y:
                r2.fail(f"{','.join(b[:-1])}: {y!r} vs {x!r} from `{r1.command}`")
            continue
        diff = abs(x - y) / max(1.0, abs(x))
        worst = max(worst, diff)
        if diff > tol:
            r2.fail(f"{','.join(b[:-1])}: {y!r} vs {x!r} from `{r1.command}`, differs by more than {tol}")
    return worst


# ---------------------------------------------------------------------------- cases

def test_version_prints_the_project_version(attnbench):
    r = attnbench.run_ok("--version")
    if not re.fullmatch(r"attnbench \d+\.\d+\.\d+\n?", r.stdout):
        r.fail(f"expected stdout 'attnbench <x.y.z>', got {r.stdout!r}")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "CMakeLists.txt"),
              encoding="utf-8") as f:
        m = re.search(r"project\(\s*attnbench\s+VERSION\s+([0-9.]+)", f.read())
    assert m, "no project(attnbench VERSION x.y.z) in CMakeLists.txt"
    if r.stdout.split()[1] != m.group(1):
        r.fail(f"version {r.stdout.split()[1]} differs from project VERSION {m.group(1)} in CMakeLists.txt")


def test_help_names_every_subcommand(attnbench):
    r = attnbench.run_ok("--help")
    for sub in ("list", "lesson", "probe"):
        if not re.search(rf"^\s+{sub}\s", r.stdout, re.M):
            r.fail(f"help does not list subcommand {sub!r}")


@pytest.mark.parametrize("sub", ["list", "lesson"])
def test_subcommand_help_shows_its_usage(attnbench, sub):
    r = attnbench.run_ok(sub, "--help")
    if f"attnbench {sub}" not in r.stdout:
        r.fail(f"help does not show usage 'attnbench {sub}': {r.stdout!r}")


def test_probe_help_lists_every_problem_flag_and_scorer(attnbench, lists):
    r = attnbench.run_ok("probe", "--help")
    flags = [field["flag"] for field in lists["fields"]] + PROBE_ONLY_FLAGS
    missing = [flag for flag in flags if not re.search(rf"{flag}\b", r.stdout)]
    if missing:
        r.fail(f"help does not mention {', '.join(missing)}")
    for scorer in lists["scorers"]:
        if scorer["name"] not in r.stdout:
            r.fail(f"--scorer help does not list {scorer['name']!r}")


def test_list_shows_formula_and_paper_of(attnbench, scorer):
    r = attnbench.run_ok("list", require_stdout=True)
    lines = r.stdout.splitlines()
    starts = [n for n, line in enumerate(lines) if line.strip() == scorer]
    if not starts:
        r.fail(f"no line naming scorer {scorer!r}")
    block = []
    for line in lines[starts[0] + 1:]:
        if not line.startswith("      "):  # the scorer's indented detail lines
            break
        block.append(line.strip())
    if not any(line.startswith("e_tj =") for line in block):
        r.fail(f"{scorer}: no formula line 'e_tj = ...' under it")
    sources = [line for line in block if line.startswith("source:")]
    if not sources or not re.search(r"(19|20)\d\d", sources[0]):
        r.fail(f"{scorer}: no 'source:' line citing a paper and year")


def test_lesson_reproduces_all_11_results(attnbench):
    r = attnbench.run_ok("lesson")
    m = re.search(r"^(\d+) of (\d+) lesson results match", r.stdout, re.M)
    if not m:
        r.fail("no 'N of N lesson results match' line")
    matched, total = int(m.group(1)), int(m.group(2))
    if total == 0 or matched != total:
        r.fail(f"reports {matched} of {total}, expected all to match")
    if total != 11:
        r.fail(f"reports {total} results, the lesson prints 11")
    lines = r.stdout.splitlines()
    header = next((n for n, line in enumerate(lines) if line.split()[:1] == ["block"]), None)
    if header is None:
        r.fail("no table header starting with 'block'")
    rows = [line for line in lines[header + 1:] if line.strip() and not re.match(r"^\d+ of \d+", line)]
    if len(rows) != total:
        r.fail(f"table has {len(rows)} rows, the summary says {total}")
    bad = [line for line in rows if line.split()[-1] != "yes"]
    if bad:
        r.fail(f"rows not ending in 'yes': {bad}")


def test_probe_one_step_counts_and_weights(attnbench, scorer):
    """B*L scores, B*L weights summing to 1, B*E context."""
    B, L, E = 3, 7, 6
    r = attnbench.run_ok("probe", "--scorer", scorer, "--batch", B, "--src-len", L, "--enc-dim", E, "--dec-dim", 5,
                         "--attn-dim", 4, require_stdout=True)
    check_one_step(r, B, L, E, [L] * B)


def test_probe_defaults_header_and_counts(attnbench):
    """B=2, L=10, E=16."""
    r = attnbench.run_ok("probe", require_stdout=True)
    check_one_step(r, 2, 10, 16, [10, 10])


def test_probe_lengths_mask_scores_and_weights(attnbench):
    """--lengths 4,2: masked scores -inf, masked weights 0."""
    r = attnbench.run_ok("probe", "--lengths", "4,2", "--batch", 2, "--src-len", 4, require_stdout=True)
    by_tensor = check_one_step(r, 2, 4, 16, [4, 2])
    masked = [row for row in by_tensor[("scores",)] if row[1] == "1" and int(row[2]) >= 2]
    if len(masked) != 2 or any(row[-1] != -math.inf for row in masked):
        r.fail(f"scores of example 1 at i=2,3 should be -inf, got {masked}")
    if "scores,1,2,-inf" not in r.stdout.splitlines():
        r.fail("expected the literal row 'scores,1,2,-inf'")
    if "weights,1,3,0" not in r.stdout.splitlines():
        r.fail("expected the literal row 'weights,1,3,0'")


def test_probe_len_min_lengths_fall_linearly(attnbench):
    r = attnbench.run_ok("probe", "--batch", 3, "--src-len", 6, "--len-min", 2, require_stdout=True)
    check_one_step(r, 3, 6, 16, [6, 4, 2])


def test_probe_steps_every_tensor_count(attnbench):
    """--steps 3: header tensor,t,b,i,value and every tensor's count."""
    B, L, E, D, V = 2, 5, 6, 7, 11
    r = attnbench.run_ok("probe", "--steps", 3, "--batch", B, "--src-len", L, "--enc-dim", E, "--dec-dim", D,
                         "--vocab", V, "--emb-dim", 4, "--attn-dim", 3, require_stdout=True)
    check_decode(r, 3, B, L, E, D, V, [L] * B)


def test_probe_steps_masked_in_every_step(attnbench):
    """--steps 2 with --lengths 5,3."""
    B, L, E, D, V = 2, 5, 6, 7, 11
    r = attnbench.run_ok("probe", "--steps", 2, "--batch", B, "--src-len", L, "--enc-dim", E, "--dec-dim", D,
                         "--vocab", V, "--lengths", "5,3", "--scorer", "general", require_stdout=True)
    check_decode(r, 2, B, L, E, D, V, [5, 3])


@pytest.mark.parametrize("steps", [0, 3], ids=["one-step", "steps-3"])
def test_probe_twice_is_byte_identical(attnbench, init, steps):
    args = ["probe", "--init", init, "--seed", 7, "--batch", 3, "--src-len", 9, "--len-min", 4]
    if steps:
        args += ["--steps", steps]
    first = attnbench.run_ok(*args, require_stdout=True)
    second = attnbench.run_ok(*args, require_stdout=True)
    if first.stdout != second.stdout:
        n = next(k for k, (a, b) in enumerate(zip(first.stdout.splitlines(), second.stdout.splitlines()))
                 if a != b) if first.stdout.count("\n") == second.stdout.count("\n") else None
        second.fail("two runs differ" + (f" first at line {n + 1}" if n is not None else " in length"))


def test_probe_seed_changes_the_values(attnbench):
    a = attnbench.run_ok("probe", "--seed", 1, require_stdout=True)
    b = attnbench.run_ok("probe", "--seed", 2, require_stdout=True)
    if a.stdout == b.stdout:
        b.fail("output identical to --seed 1; the seed has no effect")


@pytest.mark.parametrize("steps", [0, 3], ids=["one-step", "steps-3"])
def test_probe_two_threads_match_one_within_1e_5(attnbench, steps):
    args = ["probe", "--batch", 8, "--src-len", 64, "--enc-dim", 64, "--dec-dim", 48, "--attn-dim", 40, "--len-min", 10]
    header = "tensor,b,i,value"
    if steps:
        args += ["--steps", steps, "--vocab", 300]
        header = "tensor,t,b,i,value"
    one = attnbench.run_ok(*args, "--threads", 1, require_stdout=True)
    two = attnbench.run_ok(*args, "--threads", 2, require_stdout=True)
    compare_values(one, two, header, 1e-5)


def test_probe_tensors_weights_prints_only_the_weights(attnbench):
    """--steps 4 --tensors weights prints only the T x L weights, each step's summing to 1."""
    r = attnbench.run_ok("probe", "--steps", 4, "--src-len", 6, "--batch", 2, "--tensors", "weights",
                         require_stdout=True)
    lines = r.stdout.splitlines()
    if lines[0] != "tensor,t,b,i,value":
        r.fail(f"header {lines[0]!r}")
    rows = [line.split(",") for line in lines[1:]]
    if {row[0] for row in rows} != {"weights"} or len(rows) != 4 * 2 * 6:
        r.fail(f"expected 48 weights rows only, got {len(rows)} rows of {sorted({row[0] for row in rows})}")
    for t in range(1, 5):
        total = sum(float(row[4]) for row in rows if row[1] == str(t) and row[2] == "0")
        if abs(total - 1) > 1e-6:
            r.fail(f"step {t} weights of example 0 sum to {total}")


def words(names):
    """Regexes requiring each of `names` as a word."""
    return [rf"\b{re.escape(name)}\b" for name in names]


# (id, args, regexes stderr must match, the binary's lists whose every word the message must name)
ERRORS = [
    ("unknown-scorer", ["probe", "--scorer", "luong"], [r"--scorer", r"luong"], "scorers"),
    ("batch-0", ["probe", "--batch", "0"], [r"--batch", r"\b0\b"], None),
    ("batch=-3", ["probe", "--batch=-3"], [r"--batch", r"-3\b"], None),
    ("src-len-abc", ["probe", "--src-len", "abc"], [r"--src-len", r"\babc\b"], None),
    ("attn-dim-0", ["probe", "--attn-dim", "0"], [r"--attn-dim", r"\b0\b"], None),
    ("odd-enc-dim-15", ["probe", "--enc-dim", "15"], [r"--enc-dim", r"\b15\b", r"2 x|2x|twice", r"hidden"], None),
    ("dtype-f64", ["probe", "--dtype", "f64"], [r"--dtype", r"\bf64\b"], "dtypes"),
    ("impl-gpu", ["probe", "--impl", "gpu"], [r"--impl", r"\bgpu\b"], "impls"),
    ("init-nope", ["probe", "--init", "nope"], [r"--init", r"\bnope\b"], "inits"),
    ("lengths-beyond-src-len", ["probe", "--src-len", "4", "--lengths", "4,9"], [r"--lengths", r"\b9\b", r"\b4\b"],
     None),
    ("lengths-count-not-batch", ["probe", "--batch", "2", "--lengths", "3"], [r"--lengths", r"--batch", r"\b2\b"],
     None),
    ("len-min-beyond-src-len", ["probe", "--src-len", "10", "--len-min", "99"], [r"--len-min", r"\b99\b", r"\b10\b"],
     None),
    ("point-too-large-for-memory", ["probe", "--vocab", "2000000000", "--steps", "1"],
     [r"--vocab", r"memory", r"GiB"], None),
    ("steps--1", ["probe", "--steps", "-1"], [r"--steps", r"-1\b"], None),
    ("threads-0", ["probe", "--threads", "0"], [r"--threads", r"\b0\b"], None),
    ("tensors-logits-without-steps", ["probe", "--tensors", "logits"], [r"--tensors", r"\blogits\b", r"weights"],
     None),
    ("unknown-flag-on-probe", ["probe", "--bogus-flag", "1"], [r"--bogus-flag"], None),
    ("unknown-flag-on-list", ["list", "--bogus-flag"], [r"--bogus-flag"], None),
    ("unknown-flag-before-the-subcommand", ["--bogus-flag", "list"], [r"--bogus-flag"], None),
    ("unknown-flag-and-no-subcommand", ["--bogus-flag"], [r"--bogus-flag"], None),
    ("unknown-subcommand", ["frobnicate"], [r"frobnicate"], None),
    ("missing-subcommand", [], [r"subcommand"], None),
]


@pytest.mark.parametrize("variable, bad, values", [
    ("ATTNBENCH_FUSED_LOOPS", "sse4", ["best", "avx2", "portable"]),
    ("ATTNBENCH_FUSED_BF16_QUERY", "fp16", ["best", "bf16", "f32"]),
])
def test_bad_fused_setting_is_one_error_line(attnbench, variable, bad, values):
    attnbench.run("list", env={variable: bad}).one_error_line([rf"{variable}: bad value '{bad}'", *values])


@pytest.mark.parametrize("args, patterns, choices", [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS])
def test_bad_input_one_error_line_naming_it(attnbench, lists, args, patterns, choices):
    """Exit 2, one stderr line naming the flag and the bad value (and the valid words), nothing on stdout."""
    valid = words(listed_names(lists, choices)) if choices else []
    attnbench.run(*args).one_error_line(patterns + valid)


def listed_names(lists, kind):
    return [item["name"] if isinstance(item, dict) else item for item in lists[kind]]
