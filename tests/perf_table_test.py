#!/usr/bin/python3
"""Tests of scripts/perf_table.py (the README's performance table) on a hand-made run folder.

Usage: perf_table_test.py /path/to/build/attnbench   (the binary is not used; CTest passes it)

The folder's timing.csv has known medians, so every cell of the table is asserted exactly.
Standard library only. The last line is `N passed, M failed`; exit 1 when any case failed.
"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import cli_support as cli
from cli_support import Failure, Result, case, one_error_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "perf_table.py")
HEADER = ["scorer", "impl", "dtype", "threads", "batch", "src_len", "tgt_len", "emb_dim", "enc_dim", "dec_dim",
          "attn_dim", "vocab", "stage", "repetitions", "iterations", "median_ns", "mean_ns", "stddev_ns", "cv",
          "min_ns", "max_ns", "ns_per_step", "flops", "bytes", "gflops", "gbps", "roofline_pct", "bound", "status",
          "repro"]
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
    ("dot", LESSON, 1, "onednn", 1000, "", "memory"),
    ("dot", LESSON, 1, "torch", 30000, "", ""),
    ("dot", LESSON, 1, "onednn", 1, "", "memory", "step", "bf16"),  # another dtype: not in the table
    ("dot", LESSON, 2, "onednn", 800, "", "memory"),
    ("dot", LESSON, 2, "torch", 25000, "", ""),
    ("dot", ODD, 1, "onednn", 2000, "", ""),
]
META = {"command": "attnbench run --scenario perf --stages step --peer torch", "start_utc": "2026-12-01T10:00:00Z",
        "build": {"cpu_model": "Test CPU", "cores": 2, "onednn_isa": "avx2", "onednn_version": "3.0"},
        "peer": {"name": "torch", "torch_version": "2.1",
                 "blas": ["/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3"]}}

CAPTION = ("Run `{run}` (`attnbench run --scenario perf --stages step --peer torch`) on Test CPU, 2 cores, avx2, "
           "oneDNN 3.0, torch 2.1 (BLAS openblas-openmp/libblas.so.3), 2026-12-01. Stage `step` (score + masked softmax + context), f32, median of 5 "
           "repetitions in µs; PyTorch is eager under `torch.no_grad()`; a `-` was not measured.")
TABLE = """
| scorer | size | threads | ours onednn µs | ours fused µs | PyTorch µs | PyTorch / best ours | % roofline (fused) | bound |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| additive | lesson | 1 | 12.3 | 4.32 | 45.7 | 10.57 | 12.3 | memory |
| additive | lesson | 2 | 9.00 | 5.00 | 40.0 | 8.00 | 5.6 | memory |
| additive | paper | 1 | 7912 | 5000 | 9000 | 1.80 | - | compute |
| additive | paper | 2 | 4000 | 2600 | - | - | 30.1 | compute |
| dot | lesson | 1 | 1.00 | - | 30.0 | 30.00 | - | memory |
| dot | lesson | 2 | 0.80 | - | 25.0 | 31.25 | - | memory |
| dot | B3 L7 E8 D10 A12 | 1 | 2.00 | - | - | - | - | - |

Speedup of 2 threads over 1, for the impl of ours that is faster on 2 threads:

| scorer | size | impl | 1 thread µs | 2 threads µs | speedup |
| --- | --- | --- | ---: | ---: | ---: |
| additive | lesson | fused | 4.32 | 5.00 | 0.86 |
| additive | paper | fused | 5000 | 2600 | 1.92 |
| dot | lesson | onednn | 1.00 | 0.80 | 1.25 |
"""
STATE = {}


def tmp(name):
    if "tmp" not in STATE:
        STATE["tmp"] = tempfile.mkdtemp(prefix="perf_table_test.")
    return os.path.join(STATE["tmp"], name)


def check(condition, message, command=None):
    if not condition:
        raise Failure(command, message)


def make_run():
    """The hand-made run folder (timing.csv of ROWS, meta.json of META), made once."""
    if "run" in STATE:
        return STATE["run"]
    folder = tmp("run")
    os.makedirs(folder)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for scorer, size, threads, impl, median, pct, bound, *rest in ROWS:
        stage, dtype, status = (rest + ["step", "f32", "ok"][len(rest):])[:3]
        batch, src_len, enc, dec, attn = size
        values = ["5", "100", str(median), str(median), "1", "0.01", str(median), str(median), str(median), "10",
                  "10", "1", "1", pct, bound, status, "attnbench run ..."]
        if status != "ok":
            values = [""] * 15 + [status, "attnbench run ..."]
        writer.writerow([scorer, impl, dtype, threads, batch, src_len, 5, 16, enc, dec, attn, 100, stage] + values)
    with open(os.path.join(folder, "timing.csv"), "w", encoding="utf-8") as f:
        f.write(out.getvalue())
    with open(os.path.join(folder, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(META, f)
    STATE["run"] = folder
    return folder


def perf_table(*args):
    args = [str(a) for a in args]
    done = subprocess.run([sys.executable, SCRIPT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=cli.TIMEOUT_S, check=False)
    r = Result(args, done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8"))
    r.args = ["scripts/perf_table.py"] + args
    return r


def expected(run):
    return CAPTION.format(run=os.path.normpath(run)) + "\n" + TABLE


@case("perf_table: every cell of both tables, from known medians (missing and skipped rows are '-')")
def _():
    run = make_run()
    r = perf_table(run)
    check(r.returncode == 0, f"expected exit 0; got {r.brief()}", r.command)
    want = expected(run)
    if r.stdout != want:
        got, wanted = r.stdout.splitlines(), want.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(got, wanted)) if a != b), min(len(got), len(wanted)))
        r.fail(f"line {first + 1}: got {got[first] if first < len(got) else None!r}, "
               f"expected {wanted[first] if first < len(wanted) else None!r}")


@case("perf_table --readme: replaces only the text between the markers, idempotently")
def _():
    run = make_run()
    readme = tmp("README.md")
    head = "# Title\n\nSome text.\n\n<!-- perf-table:begin -->\n"
    tail = "<!-- perf-table:end -->\n\nMore text.\n"
    with open(readme, "w", encoding="utf-8") as f:
        f.write(head + "Not measured yet.\n" + tail)
    for attempt in (1, 2):
        r = perf_table(run, "--readme", readme)
        check(r.returncode == 0, f"attempt {attempt}: expected exit 0; got {r.brief()}", r.command)
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        check(text == head + expected(run) + tail, f"attempt {attempt}: README is now {text[:300]!r}...", r.command)
    check(not os.path.exists(readme + ".tmp"), "left README.md.tmp behind")


@case("perf_table: a README without the markers -> exit 2, one line naming --readme, the file unchanged")
def _():
    run = make_run()
    readme = tmp("NO_MARKERS.md")
    with open(readme, "w", encoding="utf-8") as f:
        f.write("# Title\n<!-- perf-table:end -->\n<!-- perf-table:begin -->\n")
    r = perf_table(run, "--readme", readme)
    one_error_line(r, [r"--readme", r"perf-table:begin"])
    with open(readme, encoding="utf-8") as f:
        check(f.read() == "# Title\n<!-- perf-table:end -->\n<!-- perf-table:begin -->\n", "the file changed")


@case("perf_table: a stage without rows, or a folder without timing.csv -> exit 2, one line")
def _():
    run = make_run()
    one_error_line(perf_table(run, "--stage", "decode"), [r"no ok rows of stage 'decode'"])
    empty = tmp("empty")
    os.makedirs(empty)
    one_error_line(perf_table(empty), [r"RUN", r"timing\.csv"])


@case("perf_table --stage keys: the table of another stage")
def _():
    r = perf_table(make_run(), "--stage", "keys")
    check(r.returncode == 0, f"expected exit 0; got {r.brief()}", r.command)
    rows = [line for line in r.stdout.splitlines() if line.startswith("| additive")]
    check(rows == ["| additive | paper | 2 | - | - | 0.00 | - | - | - |"], f"rows {rows}", r.command)
    check("Stage `keys`, f32" in r.stdout, f"caption {r.stdout.splitlines()[0]!r}", r.command)


def cleanup():
    if "tmp" in STATE:
        shutil.rmtree(STATE["tmp"], ignore_errors=True)


if __name__ == "__main__":
    sys.exit(cli.main(sys.argv, teardown=cleanup))
