"""Fault suite of a train run folder (issue 13's guarantees for `attnbench train`): the folder is
crash-safe like a `run` folder, by the same journal. Truncation of each file at several offsets,
SIGKILL mid-sweep, a second writer, hostile meta.json values and damaged files meet one clean
line and exit 2; after `train --resume` every file is what the journal commits, well-formed, and
holds every training of the sweep exactly once.

Run time on a quiet 2-core machine: about a minute (tiny trainings of a few milliseconds)."""
import collections
import csv
import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

import attnbench_lists  # scripts/ is on sys.path (tests/conftest.py)

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


def journal_records(text, names):
    """[(ends per data file, end of the line in the journal)] of the whole lines of a journal."""
    lines = text.split("\n")
    assert lines[0] == "attnbench-journal 1 " + " ".join(names), lines[0]
    records, at = [], len(lines[0]) + 1
    for seq, line in enumerate(lines[1:-1]):
        words = line.split(" ")
        body = line[: line.rfind(" ") + 1]
        if len(words) != 2 + 2 * len(names) or words[0] != str(seq) or \
                hashlib.sha256(body.encode()).hexdigest() != words[-1]:
            break
        at += len(line) + 1
        records.append(([int(w) for w in words[1:1 + len(names)]], at))
    return records


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
    journal = open(os.path.join(folder, "journal"), encoding="utf-8").read()
    records = journal_records(journal, list(data))
    assert records, "the journal commits nothing"
    ends, journal_end = records[-1]
    assert journal_end == len(journal.encode()), "the journal ends in a torn line"
    for name, end in zip(data, ends):
        assert os.path.getsize(os.path.join(folder, name)) == end, f"{name}: not what the journal commits"
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


def one_line(result, code, *words):
    assert result.returncode == code, (result.returncode, result.stderr)
    errors = [line for line in result.stderr.splitlines() if "warning" not in line and "dropped" not in line]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]
    assert "Traceback" not in result.stderr and "json.exception" not in result.stderr


def resume(attnbench, folder):
    return attnbench.run("train", "--resume", folder, "--quiet", "--force", timeout=TIMEOUT_S)


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
    records = journal_records(original["journal"].decode(), list(data))
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


def test_a_handful_of_sigkills_then_resume(attnbench, binary, data, tmp_path):
    reference_folder = str(tmp_path / "reference")
    attnbench.run("train", *LONGER, "--out", reference_folder, timeout=TIMEOUT_S).ok()
    reference = keys_of(reference_folder, data)
    assert len(reference["train_final.csv"]) == 8
    folder = str(tmp_path / "killed")
    rng = random.Random(12)
    kills = 0
    started = False
    while kills < 8:
        args = ["train", "--resume", folder, "--quiet", "--force"] if started else ["train", *LONGER, "--out", folder]
        process = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 0.5))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        _, err = process.communicate()
        assert b"Traceback" not in err
        started = started or os.path.exists(os.path.join(folder, "meta.json"))
        if not started and os.path.exists(folder):
            shutil.rmtree(folder)  # killed before meta.json: the start never happened
        elif process.returncode == 0:
            check_folder(folder, data, reference)
            shutil.rmtree(folder)  # finished: start again, the kills must land somewhere
            started = False
    if started:
        resume(attnbench, folder).ok()
        check_folder(folder, data, reference)


def hold(folder):
    """An exclusive flock on `folder`, as another writer holds it; close the result to release it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_two_writers_on_one_train_folder(attnbench, binary, data, tiny_train, tmp_path):
    source, reference = tiny_train
    folder = str(tmp_path / "held")
    shutil.copytree(source, folder)
    before = {n: open(os.path.join(folder, n), "rb").read() for n in [*data, "journal", "meta.json"]}
    fd = hold(folder)
    try:
        one_line(resume(attnbench, folder), 2, folder, "another attnbench is writing this run folder")
    finally:
        os.close(fd)
    assert {n: open(os.path.join(folder, n), "rb").read() for n in before} == before
    # Two real processes: the second, started while the first trains, is refused.
    live = str(tmp_path / "live")
    first = subprocess.Popen([binary, "train", *LONGER, "--out", live], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(live, "meta.json")) and time.time() < deadline:
        time.sleep(0.005)
    second = resume(attnbench, live)
    assert first.wait(timeout=TIMEOUT_S) == 0, first.stderr.read()
    if second.returncode != 0:  # else the first had already finished: then it resumed a complete run
        one_line(second, 2, "another attnbench is writing this run folder")
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


def cut_middle(name, count):
    def damage(folder):
        path = os.path.join(folder, name)
        blob = open(path, "rb").read()
        open(path, "wb").write(blob[:len(blob) // 2] + blob[len(blob) // 2 + count:])
    return damage


def truncate(name, count):
    def damage(folder):
        os.truncate(os.path.join(folder, name), os.path.getsize(os.path.join(folder, name)) - count)
    return damage


def legacy_short_row(folder):
    """A folder without a journal (an older attnbench) whose train_final.csv ends in half a row."""
    os.remove(os.path.join(folder, "journal"))
    with open(os.path.join(folder, "train_final.csv"), "a") as f:
        f.write("reverse,additive,onednn\n")


def legacy_bad_number(folder):
    os.remove(os.path.join(folder, "journal"))
    path = os.path.join(folder, "train.csv")
    lines = open(path, encoding="utf-8").read().split("\n")
    cells = lines[1].split(",")
    cells[-1] = "3x"
    lines[1] = ",".join(cells)
    open(path, "w", encoding="utf-8").write("\n".join(lines))


DAMAGE = {
    "train truncated": (truncate("train.csv", 30), "train.csv:", "damaged"),
    "attention lost 10 bytes": (cut_middle("train_attention.csv", 10), "train_attention.csv:", "damaged"),
    "final lost a byte": (truncate("train_final.csv", 1), "train_final.csv:5", "damaged"),
    "legacy short row": (legacy_short_row, "train_final.csv:6", "cells"),
    "legacy bad number": (legacy_bad_number, "train.csv:2", "column 'entropy_norm'"),
}
READERS = {
    "merge": lambda run, out: ["merge", run, "--out", out],
    "plot": lambda run, out: ["plot", run],
    "report": lambda run, out: ["report", run],
}
# merge copies cells as text: a bad number is not its to judge.
CASES = [pytest.param(case, reader, id=f"{case.replace(' ', '_')}-{reader}") for case in sorted(DAMAGE)
         for reader in sorted(READERS) if (case, reader) != ("legacy bad number", "merge")]


@pytest.mark.parametrize("case,reader", CASES)
def test_damaged_train_folder_gives_file_line_and_exit_2(attnbench, tiny_train, tmp_path, case, reader):
    source, _ = tiny_train
    damage, where, reason = DAMAGE[case]
    folder = str(tmp_path / "damaged")
    shutil.copytree(source, folder)
    damage(folder)
    out = str(tmp_path / "out")
    result = attnbench.run(*READERS[reader](folder, out), timeout=TIMEOUT_S)
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert where in lines[0] and reason in lines[0], lines[0]
    assert not os.path.exists(out)


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
