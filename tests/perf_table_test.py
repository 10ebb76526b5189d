"""Tests of scripts/perf_table.py (the README's performance table) on a hand-made run folder.

The folder's timing.csv (the binary's timing columns) has known medians, so every cell of the table is
asserted exactly.
"""

import csv
import io
import json
import os
import re
import shlex
import sys

import pytest

from conftest import ROOT, execute

SCRIPT = os.path.join(ROOT, "scripts", "perf_table.py")
LESSON = (2, 10, 16, 20, 32)
PAPER = (80, 50, 2000, 1000, 1000)
ODD = (3, 7, 8, 10, 12)
# (scorer, size, threads, impl, median_ns, roofline_pct, bound[, stage, dtype, status])
ROWS = [
    ("additive", LESSON, 1, "onednn", 12345, "", "memory"),
    ("additive", LESSON, 1, "fused", 4321, "12.345", "memory"),
    ("additive", LESSON, 1, "torch", 45678, "", ""),
    ("additive", LESSON, 2, "onednn", 9000, "", "memory"),
    ("additive", LESSON, 2, "fused", 5000, "5.56", "memory"),
    ("additive", LESSON, 2, "torch", 40000, "", ""),
    ("additive", PAPER, 1, "onednn", 7912345, "", "compute"),
    ("additive", PAPER, 1, "fused", 5000000, "", "compute"),
    ("additive", PAPER, 1, "torch", 9000000, "", ""),
    ("additive", PAPER, 2, "onednn", 4000000, "", "compute"),
    ("additive", PAPER, 2, "fused", 2600000, "30.14", "compute"),
    ("additive", PAPER, 2, "torch", "", "", "", "step", "f32", "skipped: needs 9 GiB > --max-memory 8 GiB"),
    ("additive", PAPER, 2, "torch", 1, "", "", "keys"),      # another stage: not in the table
    ("additive", PAPER, 1, "fused", 2500000, "", "compute", "step", "bf16"),  # another dtype: a column of its own
    ("additive", PAPER, 2, "fused", 1300000, "", "compute", "step", "bf16"),
    ("dot", LESSON, 1, "onednn", 1000, "", "memory"),
    ("dot", LESSON, 1, "torch", 30000, "", ""),
    ("dot", LESSON, 2, "onednn", 800, "", "memory"),
    ("dot", LESSON, 2, "torch", 25000, "", ""),
    ("dot", ODD, 1, "onednn", 2000, "", ""),
]
META = {"command": "attnbench run --scenario perf --stages step --peer torch", "start_utc": "2026-12-01T10:00:00Z",
        "build": {"cpu_model": "Test CPU", "cores": 2, "onednn_isa": "avx2", "onednn_version": "3.0"},
        "peer": {"name": "torch", "torch_version": "2.1",
                 "blas": ["/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"]},
        # the sizes' names come from the scenario rows' `name` setting, as meta.json records them
        "grid": [{"batch": "2", "src_len": "10", "enc_dim": "16", "dec_dim": "20", "attn_dim": "32", "name": "lesson"},
                 {"batch": "80", "src_len": "50", "enc_dim": "2000", "dec_dim": "1000", "attn_dim": "1000",
                  "name": "paper"}]}

CAPTION = ("Run `{run}` (`attnbench run --scenario perf --stages step --peer torch`) on Test CPU, 2 cores, avx2, "
           "oneDNN 3.0, torch 2.1 (BLAS openblas-openmp/libblas.so.3), 2026-12-01. Stage `step` (score + masked softmax + context), f32 (`fused bf16`: the fused "
           "impl with bf16 storage), median of 5 "
           "repetitions in µs; PyTorch is eager under `torch.no_grad()`; a `-` was not measured.")
TABLE = """
| scorer | size | threads | ours onednn µs | ours fused µs | ours fused bf16 µs | PyTorch µs | PyTorch / best ours | PyTorch / best ours, bf16 allowed | % roofline (fused) | bound |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| additive | lesson | 1 | 12.3 | 4.32 | - | 45.7 | 10.57 | 10.57 | 12.3 | memory |
| additive | lesson | 2 | 9.00 | 5.00 | - | 40.0 | 8.00 | 8.00 | 5.6 | memory |
| additive | paper | 1 | 7912 | 5000 | 2500 | 9000 | 1.80 | 3.60 | - | compute |
| additive | paper | 2 | 4000 | 2600 | 1300 | - | - | - | 30.1 | compute |
| dot | lesson | 1 | 1.00 | - | - | 30.0 | 30.00 | 30.00 | - | memory |
| dot | lesson | 2 | 0.80 | - | - | 25.0 | 31.25 | 31.25 | - | memory |
| dot | B3 L7 E8 D10 A12 | 1 | 2.00 | - | - | - | - | - | - | - |

Speedup of 2 threads over 1, for the impl of ours that is faster on 2 threads:

| scorer | size | impl | 1 thread µs | 2 threads µs | speedup |
| --- | --- | --- | ---: | ---: | ---: |
| additive | lesson | fused | 4.32 | 5.00 | 0.86 |
| additive | paper | fused | 5000 | 2600 | 1.92 |
| dot | lesson | onednn | 1.00 | 0.80 | 1.25 |
"""


@pytest.fixture
def run(binary, tmp_path):
    """The hand-made run folder: timing.csv of ROWS, meta.json of META."""
    return make_run(binary, tmp_path / "run")


def make_run(binary, folder, scale=1.0, meta=META, rows=ROWS):
    """A run folder of `rows` with every median times `scale`, and `meta` as its meta.json."""
    import attnbench_lists
    os.makedirs(folder)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = attnbench_lists.columns(binary, "timing.csv")
    key = attnbench_lists.key_columns(binary, "timing.csv")
    writer.writerow(header)
    for scorer, size, threads, impl, median, pct, bound, *rest in rows:
        stage, dtype, status = (rest + ["step", "f32", "ok"][len(rest):])[:3]
        median = median * scale if median != "" else median
        batch, src_len, enc, dec, attn = size
        cells = dict(scorer=scorer, impl=impl, dtype=dtype, threads=threads, batch=batch, src_len=src_len, tgt_len=5,
                     emb_dim=16, enc_dim=enc, dec_dim=dec, attn_dim=attn, vocab=100, stage=stage, repetitions=5,
                     iterations=100, median_ns=median, mean_ns=median, stddev_ns=1, cv=0.01, min_ns=median,
                     max_ns=median, ns_per_step=median, flops=10, bytes=10, gflops=1, gbps=1, roofline_pct=pct,
                     bound=bound, status=status, repro="attnbench run ...")
        if status != "ok":
            cells = {name: value for name, value in cells.items() if name in key}
            cells.update(status=status, repro="attnbench run ...")
        writer.writerow([cells.get(name, "") for name in header])
    with open(folder / "timing.csv", "w", encoding="utf-8") as f:
        f.write(out.getvalue())
    with open(folder / "meta.json", "w", encoding="utf-8") as f:
        json.dump(meta, f)
    return str(folder)


def perf_table(*args):
    return execute([sys.executable, SCRIPT, *args], "scripts/perf_table.py")


def expected(run):
    return CAPTION.format(run=os.path.normpath(run)) + "\n" + TABLE


def test_every_cell_of_both_tables_from_known_medians(run):
    """Missing and skipped rows are '-'."""
    r = perf_table(run).ok()
    want = expected(run)
    if r.stdout != want:
        got, wanted = r.stdout.splitlines(), want.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(got, wanted)) if a != b), min(len(got), len(wanted)))
        r.fail(f"line {first + 1}: got {got[first] if first < len(got) else None!r}, "
               f"expected {wanted[first] if first < len(wanted) else None!r}")


def test_readme_replaces_only_between_the_markers_idempotently(run, tmp_path):
    readme = str(tmp_path / "README.md")
    head = "# Title\n\nSome text.\n\n<!-- perf-table:begin -->\n"
    tail = "<!-- perf-table:end -->\n\nMore text.\n"
    with open(readme, "w", encoding="utf-8") as f:
        f.write(head + "Not measured yet.\n" + tail)
    for attempt in (1, 2):
        r = perf_table(run, "--readme", readme)
        assert r.returncode == 0, f"attempt {attempt}: expected exit 0; got {r.brief()}"
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        assert text == head + expected(run) + tail, f"attempt {attempt}: README is now {text[:300]!r}..."
    assert not os.path.exists(readme + ".tmp"), "left README.md.tmp behind"


def test_readme_without_the_markers_is_refused_unchanged(run, tmp_path):
    readme = str(tmp_path / "NO_MARKERS.md")
    text = "# Title\n<!-- perf-table:end -->\n<!-- perf-table:begin -->\n"
    with open(readme, "w", encoding="utf-8") as f:
        f.write(text)
    perf_table(run, "--readme", readme).one_error_line([r"--readme", r"perf-table:begin"])
    with open(readme, encoding="utf-8") as f:
        assert f.read() == text, "the file changed"


def test_stage_without_rows_is_refused(run):
    perf_table(run, "--stage", "decode").one_error_line([r"no ok rows of stage 'decode'"])


def test_folder_without_timing_csv_is_refused(tmp_path):
    empty = tmp_path / "empty"
    os.makedirs(empty)
    perf_table(str(empty)).one_error_line([r"RUN", r"timing\.csv"])


def test_stage_keys_makes_the_table_of_another_stage(run):
    r = perf_table(run, "--stage", "keys").ok()
    rows = [line for line in r.stdout.splitlines() if line.startswith("| additive")]
    assert rows == ["| additive | paper | 2 | - | - | 0.00 | - | - | - |"], f"rows {rows}"  # no bf16 keys rows
    assert "Stage `keys`, f32" in r.stdout, f"caption {r.stdout.splitlines()[0]!r}"


def test_several_runs_take_each_figure_from_the_run_with_its_median(binary, tmp_path):
    """Runs at 3x, 1x and 1/4x the medians, the median one second: the table is the 1x run's (its
    roofline too), not the first run's, nor the mean (1.42x); the caption names all three."""
    slow, middle, fast = (make_run(binary, tmp_path / name, scale) for name, scale in
                          (("slow", 3.0), ("middle", 1.0), ("fast", 0.25)))
    r = perf_table(slow, middle, fast).ok()
    caption, table = r.stdout.split("\n", 1)
    assert table == TABLE, f"table:\n{table}"
    names = ", ".join(f"`{os.path.normpath(run)}`" for run in (slow, middle, fast))
    assert caption.startswith(f"3 runs, {names} (`attnbench run --scenario perf --stages step --peer torch` each)"), caption
    assert "the run with the median of the 3 runs' medians for each figure" in caption, caption


ZEN4 = dict(META, build=dict(META["build"], cpu_model="AMD EPYC", cpu_id="AuthenticAMD family 25 model 17 stepping 1"))
ZEN5 = dict(META, build=dict(META["build"], cpu_model="AMD EPYC", cpu_id="AuthenticAMD family 26 model 2 stepping 0",
                             git_commit="0123abcdef+dirty"))


F32_ROWS = [row for row in ROWS if "bf16" not in row[7:]]


def test_runs_of_two_machines_are_side_by_side_each_column_named(binary, tmp_path):
    """Two runs of one machine (1x and 3x: the lower middle one, 1x, is taken) beside one of
    another at 2x without bf16 rows: one caption per machine, its columns headed by its name (a
    bf16 column and ratio only where the machine has bf16 rows); same-named CPUs told apart by
    cpu_id."""
    z4_fast, z4_slow = make_run(binary, tmp_path / "z4a", meta=ZEN4), make_run(binary, tmp_path / "z4b", 3.0, ZEN4)
    z5 = make_run(binary, tmp_path / "z5", 2.0, ZEN5, F32_ROWS)
    r = perf_table(z4_fast, z5, z4_slow).ok()
    lines = r.stdout.splitlines()
    assert lines[0] == "2 machines side by side, each column named by its machine.", lines[0]
    z4, z5_name = "AMD EPYC family 25 model 17", "AMD EPYC family 26 model 2"
    assert lines[2].startswith(f"{z4}: 2 runs, `{os.path.normpath(z4_fast)}`, `{os.path.normpath(z4_slow)}` "), lines[2]
    assert "on AMD EPYC (AuthenticAMD family 25 model 17 stepping 1), 2 cores" in lines[2], lines[2]
    assert ", commit 0123abc+dirty, 2026-12-01." in lines[4], lines[4]  # the commit each machine measured
    assert lines[4].startswith(f"{z5_name}: Run `{os.path.normpath(z5)}` "), lines[4]
    per = ["onednn µs", "fused µs", "PyTorch µs", "PyTorch / best ours", "% roofline (fused)"]
    with_bf16 = per[:2] + ["fused bf16 µs"] + per[2:4] + ["PyTorch / best ours, bf16 allowed"] + per[4:]
    header = ("| scorer | size | threads | " + " | ".join([f"{z4}: {w}" for w in with_bf16] + [f"{z5_name}: {w}" for w in per])
              + " |")
    assert lines[6] == header, lines[6]
    assert lines[7] == "| --- | --- | ---: |" + " ---: |" * 12, lines[7]
    rows = [line for line in lines if line.startswith("| ")]
    assert "| additive | lesson | 1 | 12.3 | 4.32 | - | 45.7 | 10.57 | 10.57 | 12.3 | 24.7 | 8.64 | 91.4 | 10.57 | 12.3 |" in rows, rows
    assert "| additive | paper | 1 | 7912 | 5000 | 2500 | 9000 | 1.80 | 3.60 | - | 15825 | 10000 | 18000 | 1.80 | - |" in rows, rows
    assert "| additive | paper | 2 | 4000 | 2600 | 1300 | - | - | - | 30.1 | 8000 | 5200 | - | - | 30.1 |" in rows, rows
    assert "| dot | B3 L7 E8 D10 A12 | 1 | 2.00 | - | - | - | - | - | - | 4.00 | - | - | - | - |" in rows, rows
    speedup = lines.index(f"| scorer | size | {z4}: impl | {z4}: 2 threads / 1 | {z5_name}: impl | "
                          f"{z5_name}: 2 threads / 1 |")
    assert lines[speedup + 2:speedup + 5] == ["| additive | lesson | fused | 0.86 | fused | 0.86 |",
                                              "| additive | paper | fused | 1.92 | fused | 1.92 |",
                                              "| dot | lesson | onednn | 1.25 | onednn | 1.25 |"], lines[speedup:]


def test_label_names_a_machine_and_separates_runs_recorded_without_cpu_id(binary, tmp_path):
    first, second = make_run(binary, tmp_path / "first"), make_run(binary, tmp_path / "second", 2.0)
    r = perf_table(first, second, "--label", f"{second}/=Older VM").ok()
    assert "| Test CPU: fused µs |" in r.stdout and "| Older VM: fused µs |" in r.stdout, r.stdout[:600]
    assert ("| additive | lesson | 1 | 12.3 | 4.32 | - | 45.7 | 10.57 | 10.57 | 12.3 | 24.7 | 8.64 | - | 91.4 | 10.57 "
            "| 10.57 | 12.3 |") in r.stdout
    # without the label the two are one machine: each figure from the lower middle run (the 1x one)
    assert perf_table(first, second).ok().stdout.split("\n", 1)[1] == TABLE


def test_machines_named_alike_are_refused_with_the_way_out(binary, tmp_path):
    other = dict(META, build=dict(META["build"], cores=4))
    first, second = make_run(binary, tmp_path / "first"), make_run(binary, tmp_path / "second", meta=other)
    perf_table(first, second).one_error_line([r"RUN", r"2 machines", r"'Test CPU'", r"--label RUN=NAME"])


@pytest.mark.parametrize("label, message", [("nowhere=X", "--label: nowhere is not one of the RUNs"),
                                            ("no-equals", "--label: 'no-equals' is not RUN=NAME"),
                                            ("{run}=", "--label: '{run}=' is not RUN=NAME")])
def test_bad_label_is_refused(run, label, message):
    perf_table(run, "--label", label.format(run=run)).one_error_line([re.escape(message.format(run=run))])


def test_the_readme_table_is_what_its_committed_runs_make(tmp_path):
    """README.md's table between the perf-table markers is, byte for byte, what the command the
    README gives for it makes of the committed run folders it names (nothing edited by hand):
    that command, run on a copy of the README, leaves the copy as it was."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    blocks = re.findall(r"```sh\n(scripts/perf_table\.py results/perf/.*?)```", readme, re.S)
    assert len(blocks) == 1, f"expected one ```sh block running scripts/perf_table.py on results/perf runs: {blocks}"
    args = shlex.split(blocks[0].replace("\\\n", " "))[1:]
    assert args[-2:] == ["--readme", "README.md"], args
    copy = tmp_path / "README.md"
    copy.write_text(readme, encoding="utf-8")
    execute([sys.executable, SCRIPT, *args[:-2], "--readme", str(copy)], "scripts/perf_table.py", cwd=ROOT).ok()
    assert copy.read_text(encoding="utf-8") == readme, "README's table differs from what its runs make"
