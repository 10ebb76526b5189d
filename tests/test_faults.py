"""Fault suite (issue 13): a run folder survives truncation at every byte offset, SIGKILL at
random moments, a full disk, two writers and hostile meta.json values. After each fault the
next command exits cleanly with one line, and after --resume every file is well-formed, no
committed row is lost and no (key, repetition) is doubled.

Run time on a quiet 2-core machine: about 3 minutes, most of it the truncation sweep (one
resume per byte offset, two at a time)."""
import collections
import concurrent.futures
import csv
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

BIN = os.environ["ATTNBENCH"]
DATA = ["timing.csv", "samples.csv", "entropy.csv"]
TINY = ["--scorer", "dot", "--src-len", "3,4", "--batch", "1", "--tgt-len", "1", "--emb-dim", "2", "--enc-dim", "2",
        "--dec-dim", "2", "--attn-dim", "2", "--vocab", "3", "--stages", "step", "--repetitions", "1",
        "--min-time", "0.0001", "--quiet"]
# More points, for faults that need a run in progress.
LONGER = ["--scorer", "dot,general", "--src-len", "3:14", "--batch", "1", "--tgt-len", "1", "--emb-dim", "2",
          "--enc-dim", "2", "--dec-dim", "2", "--attn-dim", "2", "--vocab", "3", "--stages", "step,cell",
          "--repetitions", "2", "--min-time", "0.002", "--quiet"]
# Rows enough to fill a 64 KiB disk.
FILLS_64K = ["--scorer", "all", "--src-len", "3:8", "--batch", "1", "--tgt-len", "1", "--emb-dim", "2", "--enc-dim", "2",
             "--dec-dim", "2", "--attn-dim", "2", "--vocab", "3", "--repetitions", "5", "--min-time", "0.0005", "--quiet"]
TIMING_KEY = 13  # scorer .. stage
ENTROPY_KEY = 11


def attnbench(*args, timeout=300):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def journal_records(text):
    """[(ends per data file, end of the line in the journal)] of the whole lines of a journal."""
    lines = text.split("\n")
    assert lines[0] == "attnbench-journal 1 " + " ".join(DATA), lines[0]
    records, at = [], len(lines[0]) + 1
    for seq, line in enumerate(lines[1:-1]):
        words = line.split(" ")
        body = line[: line.rfind(" ") + 1]
        if len(words) != 8 or words[0] != str(seq) or hashlib.sha256(body.encode()).hexdigest() != words[-1]:
            break
        at += len(line) + 1
        records.append(([int(w) for w in words[1:4]], at))
    return records


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    header = table[0]
    for n, row in enumerate(table[1:], start=2):
        assert len(row) == len(header), f"{path}:{n}: {len(row)} cells, header has {len(header)}"
    return header, table[1:]


def check_folder(folder, complete=True, reference=None):
    """Every file well-formed and exactly what the journal commits; no key doubled; with
    `reference`, the same keys as a complete run of the same grid."""
    journal = open(os.path.join(folder, "journal"), encoding="utf-8").read()
    records = journal_records(journal)
    assert records, "the journal commits nothing"
    ends, journal_end = records[-1]
    assert journal_end == len(journal.encode()), "the journal ends in a torn line"
    for name, end in zip(DATA, ends):
        data = open(os.path.join(folder, name), "rb").read()
        assert len(data) == end, f"{name}: {len(data)} bytes, the journal commits {end}"
    _, timing = rows(os.path.join(folder, "timing.csv"))
    _, samples = rows(os.path.join(folder, "samples.csv"))
    _, entropy = rows(os.path.join(folder, "entropy.csv"))
    timing_keys = collections.Counter(tuple(r[:TIMING_KEY]) for r in timing)
    sample_keys = collections.Counter(tuple(r[:TIMING_KEY + 1]) for r in samples)
    entropy_keys = collections.Counter(tuple(r[:ENTROPY_KEY]) for r in entropy)
    for counter, what in ((timing_keys, "timing key"), (sample_keys, "(key, repetition)"), (entropy_keys, "entropy key")):
        doubled = [k for k, n in counter.items() if n > 1]
        assert not doubled, f"{what} doubled: {doubled[:2]}"
    meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
    if complete:
        assert meta["status"] == "complete", meta["status"]
    if reference:
        assert set(timing_keys) == reference["timing"]
        assert set(sample_keys) == reference["samples"]
        assert set(entropy_keys) == reference["entropy"]
    return meta


def keys_of(folder):
    return {"timing": {tuple(r[:TIMING_KEY]) for r in rows(os.path.join(folder, "timing.csv"))[1]},
            "samples": {tuple(r[:TIMING_KEY + 1]) for r in rows(os.path.join(folder, "samples.csv"))[1]},
            "entropy": {tuple(r[:ENTROPY_KEY]) for r in rows(os.path.join(folder, "entropy.csv"))[1]}}


def one_line(result, code, *words):
    assert result.returncode == code, (result.returncode, result.stderr)
    errors = [line for line in result.stderr.splitlines() if "warning" not in line and "dropped" not in line]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]
    assert "Traceback" not in result.stderr and "json.exception" not in result.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("tiny") / "run")
    result = attnbench("run", *TINY, "--out", folder)
    assert result.returncode == 0, result.stderr
    check_folder(folder)
    return folder, keys_of(folder)


def resume_truncated(source, work, name, size):
    folder = os.path.join(work, f"{name}-{size}")
    shutil.copytree(source, folder)
    os.truncate(os.path.join(folder, name), size)
    result = attnbench("run", "--resume", folder, "--quiet", "--force")
    return folder, result


def test_truncation_at_every_byte_offset_then_resume(tiny_run, tmp_path):
    source, reference = tiny_run
    original = {name: open(os.path.join(source, name), "rb").read() for name in DATA + ["journal"]}
    records = journal_records(original["journal"].decode())
    jobs = [(name, size) for name in DATA + ["journal"] for size in range(len(original[name]))]

    def one(job):
        name, size = job
        folder, result = resume_truncated(source, str(tmp_path), *job)
        try:
            assert result.returncode == 0, (job, result.stderr)
            assert "Traceback" not in result.stderr
            check_folder(folder, reference=reference)
            # The records the damage left whole are kept byte for byte.
            if name == "journal":
                kept = [r for r in records if r[1] <= size]
            else:
                kept = [r for r in records if r[0][DATA.index(name)] <= size]
            if kept:
                for data_name, end in zip(DATA, kept[-1][0]):
                    assert open(os.path.join(folder, data_name), "rb").read()[:end] == original[data_name][:end], job
        finally:
            shutil.rmtree(folder)
        return job

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = list(pool.map(one, jobs))
    assert len(done) == len(jobs) > 1500


def test_a_removed_data_file_is_measured_again_without_doubles(tiny_run, tmp_path):
    source, reference = tiny_run
    for name in DATA:
        folder = str(tmp_path / name)
        shutil.copytree(source, folder)
        os.remove(os.path.join(folder, name))
        result = attnbench("run", "--resume", folder, "--quiet", "--force")
        assert result.returncode == 0, result.stderr
        check_folder(folder, reference=reference)


def test_truncated_meta_json_gives_one_line_and_changes_nothing(tiny_run, tmp_path):
    source, _ = tiny_run
    text = open(os.path.join(source, "meta.json"), "rb").read()
    folder = str(tmp_path / "run")
    shutil.copytree(source, folder)
    before = {name: open(os.path.join(folder, name), "rb").read() for name in DATA + ["journal"]}
    for size in range(0, len(text) - 2, 41):
        open(os.path.join(folder, "meta.json"), "wb").write(text[:size])
        one_line(attnbench("run", "--resume", folder, "--quiet", "--force"), 2, "meta.json")
    for name, data in before.items():
        assert open(os.path.join(folder, name), "rb").read() == data


def test_fifty_sigkills_then_resume(tmp_path):
    reference_folder = str(tmp_path / "reference")
    assert attnbench("run", *LONGER, "--out", reference_folder).returncode == 0
    reference = keys_of(reference_folder)
    folder = str(tmp_path / "killed")
    rng = random.Random(13)
    kills = 0
    started = False
    while kills < 50:
        args = ["run", "--resume", folder, "--quiet", "--force"] if started else ["run", *LONGER, "--out", folder]
        process = subprocess.Popen([BIN, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 0.6))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        _, err = process.communicate()
        assert b"Traceback" not in err
        started = started or os.path.exists(os.path.join(folder, "meta.json"))
        if not started and os.path.exists(folder):
            shutil.rmtree(folder)  # killed before meta.json: the start never happened
        elif process.returncode == 0:
            check_folder(folder, reference=reference)
            shutil.rmtree(folder)  # finished: start again, the kills must land somewhere
            started = False
    if started:
        result = attnbench("run", "--resume", folder, "--quiet", "--force")
        assert result.returncode == 0, result.stderr
        check_folder(folder, reference=reference)


@pytest.fixture
def small_tmpfs(tmp_path):
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)]).returncode:
        pytest.skip("needs root to mount a small tmpfs")
    yield mount
    subprocess.run(["umount", str(mount)])


def test_disk_full_fails_cleanly_and_resume_completes(small_tmpfs, tmp_path):
    reference_folder = str(tmp_path / "reference")
    assert attnbench("run", *FILLS_64K, "--out", reference_folder).returncode == 0
    folder = str(small_tmpfs / "run")
    result = attnbench("run", *FILLS_64K, "--out", folder)
    one_line(result, 1, "No space left on device")
    failed_file = result.stderr.split(": No space")[0].split()[-1]
    assert os.path.basename(failed_file) in DATA + ["journal"], result.stderr
    meta = check_folder(folder, complete=False)
    assert meta["status"] == "failed" and "No space left on device" in meta["error"], meta
    assert not [n for n in os.listdir(folder) if n.endswith(".tmp")]
    committed = {name: open(os.path.join(folder, name), "rb").read() for name in DATA}
    one_line(attnbench("run", "--resume", folder, "--quiet", "--force"), 1, "No space left on device")  # still full
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_tmpfs)], check=True)
    result = attnbench("run", "--resume", folder, "--quiet", "--force")
    assert result.returncode == 0, result.stderr
    check_folder(folder, reference=keys_of(reference_folder))
    for name, data in committed.items():  # nothing committed before the failure is lost
        assert open(os.path.join(folder, name), "rb").read()[:len(data)] == data


def test_a_second_writer_is_refused(tmp_path):
    folder = str(tmp_path / "run")
    first = subprocess.Popen([BIN, "run", *LONGER, "--out", folder], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(folder, "meta.json")) and time.time() < deadline:
        time.sleep(0.01)
    second = attnbench("run", "--resume", folder, "--quiet", "--force")
    third = attnbench("run", *LONGER, "--out", folder)
    assert first.wait(timeout=300) == 0, first.stderr.read()
    one_line(second, 2, "another attnbench is writing")
    assert third.returncode == 2, third.stderr
    check_folder(folder, reference=None)
    again = attnbench("run", "--resume", folder, "--quiet", "--force")  # the lock is gone with its holder
    assert again.returncode == 0, again.stderr


HOSTILE = [
    ("repetitions", 0, "field 'repetitions': must be ≥ 1, got 0"),
    ("repetitions", -3, "field 'repetitions': must be ≥ 1, got -3"),
    ("repetitions", "5", "field 'repetitions'"),
    ("min_time_s", -1, "field 'min_time_s': must be > 0"),
    ("min_time_s", "fast", "field 'min_time_s'"),
    ("grid", {"a": 1}, "field 'grid'"),
    ("grid", [], None),  # no points: nothing to resume, still a clean exit
    ("shard", "abc", "field 'shard'"),
    ("points", -1, "field 'points'"),
    ("build", "x", "field 'build'"),
    ("scenario", 7, "field 'scenario'"),
    ("resumed_utc", 3, "field 'resumed_utc'"),
    ("peer", 12, "field 'peer'"),
]
HOSTILE_POINT = [
    ("repetitions", 0, "field 'grid[0].repetitions': must be ≥ 1, got 0"),
    ("min_time_s", None, "field 'grid[0].min_time_s'"),
    ("scorers", 5, "field 'grid[0].scorers'"),
    ("scorers", ["nonsense"], "grid[0].scorer"),
    ("batch", 2, "field 'grid[0].batch': must be a string"),
    ("batch", "0", "grid[0].batch"),
    ("src_len", "99999999999999999999999", "grid[0].src_len"),
    ("stages", ["warp"], "field 'grid[0].stages'"),
]


def hostile(folder, edit):
    meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
    edit(meta)
    json.dump(meta, open(os.path.join(folder, "meta.json"), "w", encoding="utf-8"))


@pytest.mark.parametrize("field,value,message", HOSTILE + [("grid[0]." + f, v, m) for f, v, m in HOSTILE_POINT])
def test_hostile_meta_values_give_one_line_and_change_nothing(tiny_run, tmp_path, field, value, message):
    source, _ = tiny_run
    folder = str(tmp_path / "run")
    shutil.copytree(source, folder)
    if field.startswith("grid[0]."):
        hostile(folder, lambda m: m["grid"][0].__setitem__(field[len("grid[0]."):], value))
    else:
        hostile(folder, lambda m: m.__setitem__(field, value))
    before = {name: open(os.path.join(folder, name), "rb").read() for name in DATA + ["journal"]}
    result = attnbench("run", "--resume", folder, "--quiet", "--force")
    if message is None:
        assert result.returncode == 0, result.stderr
    else:
        one_line(result, 2, message)
        for name, data in before.items():
            assert open(os.path.join(folder, name), "rb").read() == data


def test_a_run_whose_start_failed_can_be_run_again(tmp_path):
    folder = str(tmp_path / "run")
    assert attnbench("run", *TINY, "--out", folder).returncode == 0
    os.remove(os.path.join(folder, "meta.json"))  # as when the disk was full at the start
    one_line(attnbench("run", "--resume", folder), 2, "meta.json: not found")
    result = attnbench("run", *TINY, "--out", folder)
    assert result.returncode == 0, result.stderr
    check_folder(folder)
