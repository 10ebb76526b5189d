"""Fault suite of a train run folder (issue 13's guarantees for `attnbench train`): the folder is
crash-safe like a `run` folder, by the same journal. Truncation of each file at several offsets,
SIGKILL mid-sweep, a second writer, hostile meta.json values and damaged files meet one clean
line and exit 2; after `train --resume` every file is what the journal commits, well-formed, and
holds every training of the sweep exactly once.

Run time on a quiet 2-core machine: about a minute (tiny trainings of a few milliseconds)."""
import collections
import csv
import json
import os
import shutil

import pytest

import attnbench_lists  # scripts/ is on sys.path (tests/conftest.py)
import folder_faults  # tests/folder_faults.py: the checks both kinds of folder share
from folder_faults import bad_number, cut_middle, hold, legacy, one_line, truncate

TIMEOUT_S = 300  # one command (plot and report start Python and matplotlib)
SIZES = ["--task", "reverse", "--len-min", "5", "--src-len", "6", "--long-len", "7", "--eval-size", "16",
         "--batch", "8", "--emb-dim", "4", "--enc-dim", "8", "--dec-dim", "8", "--attn-dim", "8", "--quiet"]
# 4 trainings (2 scorers x 2 seeds) of 10 steps, one evaluation each.
TINY = ["--scorer", "additive,dot", "--seed", "1,2", "--steps", "10", "--eval-every", "10", *SIZES]
# 8 trainings of 100 steps (ten evaluations each): a sweep in progress for about half a second.
LONGER = ["--scorer", "additive,dot", "--seed", "1:4", "--steps", "100", "--eval-every", "10", *SIZES]


@pytest.fixture(scope="module")
def data(binary):
    """The train folder's data files in the journal's order, each with how many leading cells key
    its rows (the training's key, then its step in train.csv, (t, j) in train_attention.csv)."""
    names = attnbench_lists.folder_files(binary, "train")
    widths = {name: attnbench_lists.row_key_width(binary, "train", name) for name in names}
    training_key = len(attnbench_lists.key_columns(binary, "train_final.csv"))
    assert widths["train_final.csv"] == training_key < widths["train.csv"] < widths["train_attention.csv"]
    return widths


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    for n, row in enumerate(table[1:], start=2):
        assert len(row) == len(table[0]), f"{path}:{n}: {len(row)} cells, header has {len(table[0])}"
    return table[1:]


def keys_of(folder, data):
    """{file: Counter of its rows' keys}."""
    return {name: collections.Counter(tuple(r[:width]) for r in rows(os.path.join(folder, name)))
            for name, width in data.items()}


def check_folder(folder, data, reference=None, complete=True):
    """Every file exactly what the journal commits and well-formed; no key doubled; a training's
    rows in all three files or in none; with `reference` (keys_of a clean run), the same keys."""
    folder_faults.check_journal(folder, list(data))
    keys = keys_of(folder, data)
    for name, counter in keys.items():
        doubled = [k for k, n in counter.items() if n > 1]
        assert not doubled, f"{name}: key doubled: {doubled[:2]}"
    width = min(data.values())  # the training's key
    trainings = [{k[:width] for k in counter} for counter in keys.values()]
    assert all(t == trainings[-1] for t in trainings), "a training's rows are not in every file"
    if reference:
        assert keys == reference
    meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
    if complete:
        assert meta["status"] == "complete", meta["status"]
    return meta


def resume(attnbench, folder):
    return folder_faults.resume(attnbench, "train", folder)


@pytest.fixture(scope="module")
def tiny_train(attnbench, data, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("tiny") / "train")
    attnbench.run("train", *TINY, "--out", folder, timeout=TIMEOUT_S).ok()
    reference = keys_of(folder, data)
    check_folder(folder, data, reference)
    assert len(reference["train_final.csv"]) == 4
    return folder, reference


def offsets(data_bytes, ends):
    """Cuts worth trying in a file: nothing, inside the header, at and around every commit, mid-record."""
    cuts = {0, 1, len(data_bytes) - 1}
    for before, end in zip(ends, ends[1:]):
        cuts |= {end - 1, end + 1, (before + end) // 2}
    return sorted(c for c in cuts if 0 <= c < len(data_bytes))


@pytest.mark.parametrize("name", ["train.csv", "train_attention.csv", "train_final.csv", "journal"])
def test_truncation_at_several_offsets_then_resume(attnbench, data, tiny_train, tmp_path, name):
    source, reference = tiny_train
    original = {n: open(os.path.join(source, n), "rb").read() for n in [*data, "journal"]}
    records = folder_faults.journal_records(original["journal"].decode(), list(data))
    ends = [r[1] for r in records] if name == "journal" else [r[0][list(data).index(name)] for r in records]
    cuts = offsets(original[name], ends)
    assert len(cuts) >= 8
    for size in cuts:
        folder = str(tmp_path / f"{name}-{size}")
        shutil.copytree(source, folder)
        os.truncate(os.path.join(folder, name), size)
        result = resume(attnbench, folder)
        assert result.returncode == 0, (size, result.stderr)
        assert "Traceback" not in result.stderr
        if name != "journal":  # a cut data file lost committed bytes
            folder_faults.warns_of_damage(result, "train", os.path.join(folder, name))
        check_folder(folder, data, reference)
        # The trainings the cut left whole are kept byte for byte, not trained again.
        kept = [r for r in records if (r[1] if name == "journal" else r[0][list(data).index(name)]) <= size]
        if kept:
            for data_name, end in zip(data, kept[-1][0]):
                assert open(os.path.join(folder, data_name), "rb").read()[:end] == original[data_name][:end], size
        shutil.rmtree(folder)


def test_an_uncommitted_tail_is_dropped_and_nothing_trained_again(attnbench, data, tiny_train, tmp_path):
    source, reference = tiny_train
    folder = str(tmp_path / "torn")
    shutil.copytree(source, folder)
    before = {n: open(os.path.join(source, n), "rb").read() for n in data}
    with open(os.path.join(folder, "train_final.csv"), "a") as f:
        f.write("reverse,additive,onednn")  # a crash mid-append
    result = resume(attnbench, folder)
    assert result.returncode == 0, result.stderr
    assert "train_final.csv: dropped 23 bytes no journal record commits" in result.stderr
    check_folder(folder, data, reference)
    assert {n: open(os.path.join(folder, n), "rb").read() for n in data} == before
    assert json.load(open(os.path.join(folder, "meta.json")))["points_done_this_session"] == 0


def test_a_handful_of_sigkills_then_resume(attnbench, data, tmp_path):
    reference_folder = str(tmp_path / "reference")
    attnbench.run("train", *LONGER, "--out", reference_folder, timeout=TIMEOUT_S).ok()
    reference = keys_of(reference_folder, data)
    assert len(reference["train_final.csv"]) == 8
    folder_faults.sigkills_then_resume(attnbench, "train", LONGER, str(tmp_path / "killed"), kills=8, seed=12,
                                       longest_s=0.5, check=lambda folder: check_folder(folder, data, reference))


def test_two_writers_on_one_train_folder(attnbench, data, tiny_train, tmp_path):
    source, reference = tiny_train
    folder = str(tmp_path / "held")
    shutil.copytree(source, folder)
    before = {n: open(os.path.join(folder, n), "rb").read() for n in [*data, "journal", "meta.json"]}
    fd = hold(folder)
    try:
        one_line(resume(attnbench, folder), 2, folder, "another attnbench is writing this folder")
    finally:
        os.close(fd)
    assert {n: open(os.path.join(folder, n), "rb").read() for n in before} == before
    # Two real processes: the second, started while the first trains, is refused.
    live = str(tmp_path / "live")
    first = folder_faults.started_writer(attnbench, "train", LONGER, live)
    second = resume(attnbench, live)
    assert first.wait(timeout=TIMEOUT_S) == 0, first.stderr.read()
    if second.returncode != 0:  # else the first had already finished: then it resumed a complete run
        one_line(second, 2, "another attnbench is writing this folder")
    check_folder(live, data)
    assert len(keys_of(live, data)["train_final.csv"]) == 8


HOSTILE = [
    (lambda m: m.__setitem__("kind", "training"), "field 'kind': must be \"train\" or absent (a run), got \"training\""),
    (lambda m: m.__setitem__("grid", "x"), "field 'grid': must be a list of trainings"),
    (lambda m: m["grid"][0].__setitem__("steps", "0"), "field 'grid[0].steps': must be a whole number from 1 to"),
    (lambda m: m["grid"][0].__setitem__("steps", 10), "field 'grid[0].steps': must be a non-empty string, got 10"),
    (lambda m: m["grid"][1].pop("seed"), "field 'grid[1].seed': missing"),
    (lambda m: m["grid"][0].__setitem__("lr", "-1"), "field 'grid[0].lr': must be a number > 0"),
    (lambda m: m["grid"][0].__setitem__("eval_every", "20"), "field 'grid[0]': --eval-every: 20 is more than --steps 10"),
    (lambda m: m["grid"][0].__setitem__("task", "nope"), "field 'grid[0]': "),
    (lambda m: m["grid"][0].__setitem__("scorer", "nope"), "field 'grid[0]': "),
    (lambda m: m.__setitem__("points", "4"), "field 'points'"),
    (lambda m: m.__setitem__("shard", "3/2"), "field 'shard': must be K/N"),
    (lambda m: m.__setitem__("scenario_files", [{"path": 1}]), "field 'scenario_files[0].path': must be a string"),
]


@pytest.mark.parametrize("edit,message", [pytest.param(e, m, id=f"hostile-{n}") for n, (e, m) in enumerate(HOSTILE)])
def test_hostile_train_meta_gives_one_line_and_changes_nothing(attnbench, data, tiny_train, tmp_path, edit, message):
    source, _ = tiny_train
    folder = str(tmp_path / "train")
    shutil.copytree(source, folder)
    meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
    edit(meta)
    json.dump(meta, open(os.path.join(folder, "meta.json"), "w", encoding="utf-8"))
    before = {n: open(os.path.join(folder, n), "rb").read() for n in [*data, "journal", "meta.json"]}
    one_line(resume(attnbench, folder), 2, "meta.json: field '", message)
    assert {n: open(os.path.join(folder, n), "rb").read() for n in before} == before


def test_a_train_folder_is_not_resumed_by_run(attnbench, tiny_train, tmp_path):
    source, _ = tiny_train
    folder = str(tmp_path / "train")
    shutil.copytree(source, folder)
    one_line(attnbench.run("run", "--resume", folder, "--quiet", timeout=TIMEOUT_S), 2,
             "holds a `train` run; continue it with `attnbench train --resume")


def short_row(folder):
    """train_final.csv ends in half a row."""
    with open(os.path.join(folder, "train_final.csv"), "a") as f:
        f.write("reverse,additive,onednn\n")


DAMAGE = {
    "train truncated": (truncate("train.csv", 30), "train.csv:", "damaged"),
    "attention lost 10 bytes": (cut_middle("train_attention.csv", 10), "train_attention.csv:", "damaged"),
    "final lost a byte": (truncate("train_final.csv", 1), "train_final.csv:5", "damaged"),
    "legacy short row": (legacy(short_row), "train_final.csv:6", "cells"),
    "legacy bad number": (legacy(bad_number("train.csv")), "train.csv:2", "column 'entropy_norm'"),
}
TRAIN_READERS = ["merge", "plot", "report"]  # compare reads `run` folders only


@pytest.mark.parametrize("case,reader", folder_faults.reader_cases(DAMAGE, TRAIN_READERS))
def test_damaged_train_folder_gives_file_line_and_exit_2(attnbench, tiny_train, tmp_path, case, reader):
    source, _ = tiny_train
    damage, where, reason = DAMAGE[case]
    folder_faults.reader_gives_file_line(attnbench, "train", source, tmp_path, damage, reader, where, reason)


def test_merge_of_train_shards_reads_committed_rows_and_writes_a_journal(attnbench, data, tiny_train, tmp_path):
    source, reference = tiny_train
    shards = []
    for k in (1, 2):
        shard = str(tmp_path / f"shard{k}")
        attnbench.run("train", *TINY, "--shard", f"{k}/2", "--out", shard, timeout=TIMEOUT_S).ok()
        with open(os.path.join(shard, "train.csv"), "a") as f:
            f.write("reverse,dot,onednn")  # an uncommitted tail: merge must not copy it
        shards.append(shard)
    out = str(tmp_path / "merged")
    attnbench.run("merge", *shards, "--out", out, timeout=TIMEOUT_S).ok()
    meta = check_folder(out, data, reference)
    assert meta["kind"] == "train" and [s["shard"] for s in meta["merged_from"]] == ["1/2", "2/2"]
    # A merged train folder is read like any other: a damaged one gives file:line.
    os.truncate(os.path.join(out, "train_final.csv"), os.path.getsize(os.path.join(out, "train_final.csv")) - 1)
    one_line(attnbench.run("merge", out, "--out", str(tmp_path / "again"), timeout=TIMEOUT_S), 2,
             "train_final.csv:1: damaged")  # merged: one record commits it all
