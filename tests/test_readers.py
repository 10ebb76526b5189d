"""Every reader of a run folder (compare, merge, plot, report) meets a damaged file with one
line "file:line: reason" and exit 2: never a traceback, never a silently wrong number."""
import json
import os

import pytest

import folder_faults  # tests/folder_faults.py: the checks both kinds of folder share
from folder_faults import READERS, TIMEOUT_S, bad_number, cut_middle, damaged, legacy, truncate

SIZES = ["--scorer", "dot,general", "--src-len", "3,4", "--batch", "1", "--tgt-len", "1", "--emb-dim", "2",
         "--enc-dim", "2", "--dec-dim", "2", "--attn-dim", "2", "--vocab", "3", "--stages", "step",
         "--repetitions", "2", "--min-time", "0.0001", "--quiet"]
RUN_READERS = ["compare", "merge", "plot", "report"]


@pytest.fixture(scope="module")
def good_run(attnbench, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("good") / "run")
    attnbench.run("run", *SIZES, "--out", folder, timeout=TIMEOUT_S).ok()
    return folder


def extra_cell(folder):
    path = os.path.join(folder, "timing.csv")
    lines = open(path, encoding="utf-8").read().split("\n")
    lines[1] = lines[1][: len(lines[1]) // 4]  # a row cut short, as a torn append left it
    open(path, "w", encoding="utf-8").write("\n".join(lines))


def doubled_sample(folder):
    path = os.path.join(folder, "samples.csv")
    lines = open(path, encoding="utf-8").read().split("\n")
    lines.insert(2, lines[1])
    open(path, "w", encoding="utf-8").write("\n".join(lines))


DAMAGE = {
    "timing truncated": (truncate("timing.csv", 200), "timing.csv:", "damaged"),
    "samples lost 10 bytes": (cut_middle("samples.csv", 10), "samples.csv:", "damaged"),
    "entropy lost 10 bytes": (cut_middle("entropy.csv", 10), "entropy.csv:", "damaged"),
    "journal says more": (truncate("samples.csv", 1), "samples.csv:", "damaged"),
    "legacy short row": (legacy(extra_cell), "timing.csv:2", "cells"),
    "legacy bad number": (legacy(bad_number("samples.csv")), "samples.csv:2", ""),
}


@pytest.mark.parametrize("case,reader", folder_faults.reader_cases(DAMAGE, RUN_READERS))
def test_damaged_file_gives_file_line_and_exit_2(attnbench, good_run, tmp_path, reader, case):
    damage, where, reason = DAMAGE[case]
    folder_faults.reader_gives_file_line(attnbench, "run", good_run, tmp_path, damage, reader, where, reason)


def test_compare_refuses_a_doubled_key_and_repetition(attnbench, good_run, tmp_path):
    folder = damaged(good_run, tmp_path, legacy(doubled_sample))
    result = attnbench.run("compare", good_run, folder, timeout=TIMEOUT_S)
    assert result.returncode == 2
    assert "samples.csv:3: repeats the key and repetition of line 2" in result.stderr


@pytest.mark.parametrize("reader", ["plot", "report"])
def test_meta_json_that_does_not_parse_names_its_line(attnbench, good_run, tmp_path, reader):
    folder = damaged(good_run, tmp_path, lambda f: open(os.path.join(f, "meta.json"), "w").write('{\n  "grid": [\n'))
    result = attnbench.run(*READERS[reader](folder, good_run, str(tmp_path / "out")), timeout=TIMEOUT_S)
    assert result.returncode == 2
    assert "meta.json:3: does not parse" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_merge_refuses_a_bad_shard_field_and_creates_nothing(attnbench, good_run, tmp_path):
    def edit(folder):
        meta = json.load(open(os.path.join(folder, "meta.json")))
        meta["shard"] = "abc"
        json.dump(meta, open(os.path.join(folder, "meta.json"), "w"))
    folder = damaged(good_run, tmp_path, edit)
    out = str(tmp_path / "out")
    result = attnbench.run("merge", folder, "--out", out, timeout=TIMEOUT_S)
    assert result.returncode == 2
    assert "field 'shard': must be K/N" in result.stderr, result.stderr
    assert not os.path.exists(out)


def test_readers_ignore_an_uncommitted_tail(attnbench, good_run, tmp_path):
    """A crash mid-append leaves bytes no journal line commits: readers read the rest."""
    def torn(folder):
        with open(os.path.join(folder, "timing.csv"), "a") as f:
            f.write("dot,onednn,f32,1,1,3")
    folder = damaged(good_run, tmp_path, torn)
    assert attnbench.run("compare", good_run, folder, timeout=TIMEOUT_S).returncode == 0
    out = str(tmp_path / "merged")
    assert attnbench.run("merge", folder, "--out", out, timeout=TIMEOUT_S).returncode == 0
    assert open(os.path.join(out, "timing.csv")).read() == open(os.path.join(good_run, "timing.csv")).read()
