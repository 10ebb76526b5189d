"""Every reader of a run folder (compare, merge, plot, report) meets a damaged file with one
line "file:line: reason" and exit 2: never a traceback, never a silently wrong number."""
import json
import os
import shutil

import pytest

TIMEOUT_S = 300  # one command (plot and report start Python and matplotlib)
SIZES = ["--scorer", "dot,general", "--src-len", "3,4", "--batch", "1", "--tgt-len", "1", "--emb-dim", "2",
         "--enc-dim", "2", "--dec-dim", "2", "--attn-dim", "2", "--vocab", "3", "--stages", "step",
         "--repetitions", "2", "--min-time", "0.0001", "--quiet"]
READERS = {
    "compare": lambda run, good, out: ["compare", good, run],
    "merge": lambda run, good, out: ["merge", run, "--out", out],
    "plot": lambda run, good, out: ["plot", run],
    "report": lambda run, good, out: ["report", run],
}


@pytest.fixture(scope="module")
def good_run(attnbench, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("good") / "run")
    attnbench.run("run", *SIZES, "--out", folder, timeout=TIMEOUT_S).ok()
    return folder


def damaged(good_run, tmp_path, damage):
    folder = str(tmp_path / "damaged")
    shutil.copytree(good_run, folder)
    damage(folder)
    return folder


def cut_middle(name, count):
    def damage(folder):
        path = os.path.join(folder, name)
        data = open(path, "rb").read()
        middle = len(data) // 2
        open(path, "wb").write(data[:middle] + data[middle + count:])
    return damage


def truncate(name, count):
    def damage(folder):
        path = os.path.join(folder, name)
        os.truncate(path, os.path.getsize(path) - count)
    return damage


def legacy(edit):
    """A folder without a journal (an older attnbench) whose `edit` breaks a file."""
    def damage(folder):
        os.remove(os.path.join(folder, "journal"))
        edit(folder)
    return damage


def replace_in(name, old, new):
    def edit(folder):
        path = os.path.join(folder, name)
        text = open(path, encoding="utf-8").read()
        assert old in text
        open(path, "w", encoding="utf-8").write(text.replace(old, new, 1))
    return edit


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


def bad_number(folder):
    path = os.path.join(folder, "samples.csv")
    lines = open(path, encoding="utf-8").read().split("\n")
    cells = lines[1].split(",")
    cells[-1] = "3x"
    lines[1] = ",".join(cells)
    open(path, "w", encoding="utf-8").write("\n".join(lines))


DAMAGE = {
    "timing truncated": (truncate("timing.csv", 200), "timing.csv:", "damaged"),
    "samples lost 10 bytes": (cut_middle("samples.csv", 10), "samples.csv:", "damaged"),
    "entropy lost 10 bytes": (cut_middle("entropy.csv", 10), "entropy.csv:", "damaged"),
    "journal says more": (truncate("samples.csv", 1), "samples.csv:", "damaged"),
    "legacy short row": (legacy(extra_cell), "timing.csv:2", "cells"),
    "legacy bad number": (legacy(bad_number), "samples.csv:2", ""),
}


# merge copies cells as text: a bad number is not its to judge.
CASES = [pytest.param(case, reader, id=f"{case.replace(' ', '_')}-{reader}") for case in sorted(DAMAGE)
         for reader in sorted(READERS) if (case, reader) != ("legacy bad number", "merge")]


@pytest.mark.parametrize("case,reader", CASES)
def test_damaged_file_gives_file_line_and_exit_2(attnbench, good_run, tmp_path, reader, case):
    damage, where, reason = DAMAGE[case]
    folder = damaged(good_run, tmp_path, damage)
    out = str(tmp_path / "out")
    result = attnbench.run(*READERS[reader](folder, good_run, out), timeout=TIMEOUT_S)
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert where in lines[0] and reason in lines[0], lines[0]
    if reader == "merge":
        assert not os.path.exists(out)


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
