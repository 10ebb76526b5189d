"""Fault suite (issue 13): a run folder survives truncation at every byte offset, SIGKILL at
random moments, a full disk, two writers and hostile meta.json values. After each fault the
next command exits cleanly with one line, and after --resume every file is well-formed, no
committed row is lost and no (key, repetition) is doubled.

Run time on a quiet 2-core machine: about 3 minutes, most of it the truncation sweep (one
resume per byte offset, two at a time). $ATTNBENCH_TRUNCATION_STRIDE=N (default 1) truncates at
every Nth byte offset only: .ci/run's sanitizer leg uses it, where a resume costs 5x as much."""
import collections
import concurrent.futures
import csv
import json
import os
import shutil
import subprocess

import pytest

import attnbench_lists  # scripts/ is on sys.path (tests/conftest.py)
import folder_faults  # tests/folder_faults.py: the checks both kinds of folder share
from folder_faults import hold, one_line

DATA = ["timing.csv", "samples.csv", "entropy.csv"]  # the journal's files, in its order
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
TIMEOUT_S = 300  # one command of this suite


def truncation_stride():
    """$ATTNBENCH_TRUNCATION_STRIDE: every how many byte offsets the truncation sweep cuts (default 1)."""
    text = os.environ.get("ATTNBENCH_TRUNCATION_STRIDE", "1")
    if not text.isdigit() or int(text) < 1:
        pytest.fail(f"ATTNBENCH_TRUNCATION_STRIDE: bad value '{text}': expected a whole number >= 1", pytrace=False)
    return int(text)


def key_width(file):
    """How many key columns `file` (timing.csv, entropy.csv) starts with: the binary's list."""
    return len(attnbench_lists.key_columns(None, file))


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
    folder_faults.check_journal(folder, DATA)
    _, timing = rows(os.path.join(folder, "timing.csv"))
    _, samples = rows(os.path.join(folder, "samples.csv"))
    _, entropy = rows(os.path.join(folder, "entropy.csv"))
    timing_key, entropy_key = key_width("timing.csv"), key_width("entropy.csv")
    timing_keys = collections.Counter(tuple(r[:timing_key]) for r in timing)
    sample_keys = collections.Counter(tuple(r[:timing_key + 1]) for r in samples)  # (key, repetition)
    entropy_keys = collections.Counter(tuple(r[:entropy_key]) for r in entropy)
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
    timing_key, entropy_key = key_width("timing.csv"), key_width("entropy.csv")
    return {"timing": {tuple(r[:timing_key]) for r in rows(os.path.join(folder, "timing.csv"))[1]},
            "samples": {tuple(r[:timing_key + 1]) for r in rows(os.path.join(folder, "samples.csv"))[1]},
            "entropy": {tuple(r[:entropy_key]) for r in rows(os.path.join(folder, "entropy.csv"))[1]}}


@pytest.fixture(scope="module")
def tiny_run(attnbench, tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("tiny") / "run")
    attnbench.run("run", *TINY, "--out", folder, timeout=TIMEOUT_S).ok()
    check_folder(folder)
    return folder, keys_of(folder)


def resume(attnbench, folder):
    return folder_faults.resume(attnbench, "run", folder)


def resume_truncated(attnbench, source, work, name, size):
    folder = os.path.join(work, f"{name}-{size}")
    shutil.copytree(source, folder)
    os.truncate(os.path.join(folder, name), size)
    return folder, resume(attnbench, folder)


def test_truncation_at_every_byte_offset_then_resume(attnbench, tiny_run, tmp_path):
    source, reference = tiny_run
    original = {name: open(os.path.join(source, name), "rb").read() for name in DATA + ["journal"]}
    records = folder_faults.journal_records(original["journal"].decode(), DATA)
    stride = truncation_stride()
    jobs = [(name, size) for name in DATA + ["journal"] for size in range(0, len(original[name]), stride)]

    def one(job):
        name, size = job
        folder, result = resume_truncated(attnbench, source, str(tmp_path), *job)
        try:
            assert result.returncode == 0, (job, result.stderr)
            assert "Traceback" not in result.stderr
            if name != "journal":  # a cut data file lost committed bytes
                folder_faults.warns_of_damage(result, "run", os.path.join(folder, name))
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
    assert len(done) == len(jobs) > 1500 // stride


def test_a_removed_data_file_is_measured_again_without_doubles(attnbench, tiny_run, tmp_path):
    source, reference = tiny_run
    for name in DATA:
        folder = str(tmp_path / name)
        shutil.copytree(source, folder)
        os.remove(os.path.join(folder, name))
        resume(attnbench, folder).ok()
        check_folder(folder, reference=reference)


def test_truncated_meta_json_gives_one_line_and_changes_nothing(attnbench, tiny_run, tmp_path):
    source, _ = tiny_run
    text = open(os.path.join(source, "meta.json"), "rb").read()
    folder = str(tmp_path / "run")
    shutil.copytree(source, folder)
    before = {name: open(os.path.join(folder, name), "rb").read() for name in DATA + ["journal"]}
    for size in range(0, len(text) - 2, 41):
        open(os.path.join(folder, "meta.json"), "wb").write(text[:size])
        one_line(resume(attnbench, folder), 2, "meta.json")
    for name, data in before.items():
        assert open(os.path.join(folder, name), "rb").read() == data


def test_fifty_sigkills_then_resume(attnbench, tmp_path):
    reference_folder = str(tmp_path / "reference")
    attnbench.run("run", *LONGER, "--out", reference_folder, timeout=TIMEOUT_S).ok()
    reference = keys_of(reference_folder)
    folder_faults.sigkills_then_resume(attnbench, "run", LONGER, str(tmp_path / "killed"), kills=50, seed=13,
                                       longest_s=0.6, check=lambda folder: check_folder(folder, reference=reference))


@pytest.fixture
def small_tmpfs(tmp_path):
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)]).returncode:
        pytest.skip("needs root to mount a small tmpfs")
    yield mount
    subprocess.run(["umount", str(mount)])


def test_disk_full_fails_cleanly_and_resume_completes(attnbench, small_tmpfs, tmp_path):
    reference_folder = str(tmp_path / "reference")
    attnbench.run("run", *FILLS_64K, "--out", reference_folder, timeout=TIMEOUT_S).ok()
    folder = str(small_tmpfs / "run")
    result = attnbench.run("run", *FILLS_64K, "--out", folder, timeout=TIMEOUT_S)
    one_line(result, 1, "No space left on device")
    failed_file = result.stderr.split(": No space")[0].split()[-1]
    assert os.path.basename(failed_file) in DATA + ["journal"], result.stderr
    meta = check_folder(folder, complete=False)
    assert meta["status"] == "failed" and "No space left on device" in meta["error"], meta
    assert not [n for n in os.listdir(folder) if n.endswith(".tmp")]
    committed = {name: open(os.path.join(folder, name), "rb").read() for name in DATA}
    one_line(resume(attnbench, folder), 1, "No space left on device")  # still full
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_tmpfs)], check=True)
    resume(attnbench, folder).ok()
    check_folder(folder, reference=keys_of(reference_folder))
    for name, data in committed.items():  # nothing committed before the failure is lost
        assert open(os.path.join(folder, name), "rb").read()[:len(data)] == data


def test_a_second_writer_is_refused(attnbench, tmp_path):
    folder = str(tmp_path / "run")
    first = folder_faults.started_writer(attnbench, "run", LONGER, folder)
    second = resume(attnbench, folder)
    third = attnbench.run("run", *LONGER, "--out", folder, timeout=TIMEOUT_S)
    assert first.wait(timeout=300) == 0, first.stderr.read()
    one_line(second, 2, "another attnbench is writing")
    assert third.returncode == 2, third.stderr
    check_folder(folder, reference=None)
    resume(attnbench, folder).ok()  # the lock is gone with its holder


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
    ("build", {"cpu_model": 5}, "field 'build.cpu_model': must be a string, got 5"),
    # Written by merge (--allow-mixed) and submit: checked alike.
    ("allow_mixed", "yes", "field 'allow_mixed': must be true or false, got \"yes\""),
    ("missing_shards", 2, "field 'missing_shards': must be a string, got 2"),
    ("merged_from", {"a": 1}, "field 'merged_from': must be a list of shards"),
    ("merged_from", [{"host": 3}], "field 'merged_from[0].host': must be a string, got 3"),
    ("slurm", [], "field 'slurm': must be an object"),
    ("slurm", {"shards": 0}, "field 'slurm.shards': must be a whole number from 1 to 1000000, got 0"),
    ("slurm", {"shards": 2, "submissions": [{"shards": [3]}]},
     "field 'slurm.submissions[0].shards[0]': must be a whole number from 1 to 2, got 3"),
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
    ("stages", ["train_step", 4], "field 'grid[0].stages': must be a non-empty list of stages"),
    ("name", 5, "field 'grid[0].name': must be a string, got 5"),
    ("peer", 5, "field 'grid[0].peer': must be a string, got 5"),
]


def hostile(folder, edit):
    meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
    edit(meta)
    json.dump(meta, open(os.path.join(folder, "meta.json"), "w", encoding="utf-8"))


HOSTILE_CASES = [pytest.param(f, v, m, id=f"{f}-{n}") for n, (f, v, m) in
                 enumerate(HOSTILE + [("grid[0]." + f, v, m) for f, v, m in HOSTILE_POINT])]


@pytest.mark.parametrize("field,value,message", HOSTILE_CASES)
def test_hostile_meta_values_give_one_line_and_change_nothing(attnbench, tiny_run, tmp_path, field, value, message):
    source, _ = tiny_run
    folder = str(tmp_path / "run")
    shutil.copytree(source, folder)
    if field.startswith("grid[0]."):
        hostile(folder, lambda m: m["grid"][0].__setitem__(field[len("grid[0]."):], value))
    else:
        hostile(folder, lambda m: m.__setitem__(field, value))
    before = {name: open(os.path.join(folder, name), "rb").read() for name in DATA + ["journal"]}
    result = resume(attnbench, folder)
    if message is None:
        assert result.returncode == 0, result.stderr
    else:
        one_line(result, 2, message)
        for name, data in before.items():
            assert open(os.path.join(folder, name), "rb").read() == data


def test_a_run_whose_start_failed_can_be_run_again(attnbench, tmp_path):
    folder = str(tmp_path / "run")
    attnbench.run("run", *TINY, "--out", folder, timeout=TIMEOUT_S).ok()
    os.remove(os.path.join(folder, "meta.json"))  # as when the disk was full at the start
    one_line(attnbench.run("run", "--resume", folder, timeout=TIMEOUT_S), 2, "meta.json: not found")
    attnbench.run("run", *TINY, "--out", folder, timeout=TIMEOUT_S).ok()
    check_folder(folder)


def test_a_truncated_shard_resumes_to_the_keys_of_an_unbroken_one(attnbench, tmp_path):
    """A shard (what `attnbench submit` runs and resumes) recovers like any run folder."""
    whole = str(tmp_path / "whole")
    attnbench.run("run", *LONGER, "--shard", "2/3", "--out", whole, timeout=TIMEOUT_S).ok()
    reference = keys_of(whole)
    assert len(reference["timing"]) > 4
    folder = str(tmp_path / "cut")
    shutil.copytree(whole, folder)
    os.truncate(os.path.join(folder, "samples.csv"), os.path.getsize(os.path.join(folder, "samples.csv")) // 2)
    resume(attnbench, folder).ok()
    meta = check_folder(folder, reference=reference)
    assert meta["shard"] == "2/3"


@pytest.mark.parametrize("mixed", [[], ["--allow-mixed"]], ids=["merge", "merge_allow_mixed"])
def test_merge_takes_its_out_folder_alone_and_commits_what_it_writes(attnbench, tiny_run, tmp_path, mixed):
    source, reference = tiny_run
    out = str(tmp_path / "out")
    os.mkdir(out)
    fd = hold(out)
    try:
        one_line(attnbench.run("merge", source, "--out", out, *mixed, timeout=TIMEOUT_S), 2,
                 "another attnbench is writing this folder")
        assert os.listdir(out) == []
    finally:
        os.close(fd)
    attnbench.run("merge", source, "--out", out, *mixed, timeout=TIMEOUT_S).ok()
    meta = check_folder(out)  # the journal commits every byte of the merged files
    assert meta["allow_mixed"] is bool(mixed)
    header, timing = rows(os.path.join(out, "timing.csv"))
    assert (header[-1] == "host") is bool(mixed)
    assert {tuple(r[:key_width("timing.csv")]) for r in timing} == reference["timing"]
    if mixed:
        assert {r[-1] for r in timing} == {meta["merged_from"][0]["host"]}


@pytest.mark.parametrize("slurm,message", [pytest.param(*case, id=f"slurm-{n}") for n, case in enumerate([
    ({"shards": "3"}, "field 'slurm.shards': must be a whole number from 1 to 1000000, got \"3\""),
    ({"shards": 2, "submissions": [{"shards": [1], "array_job": 7}]},
     "field 'slurm.submissions[0].array_job': must be a string, got 7"),
    ({"shards": 2, "array_parallel": 3}, "field 'slurm.array_parallel': must be a whole number from 1 to 2, got 3"),
])])
def test_status_of_a_hostile_submitted_meta_json_gives_one_line(attnbench, tmp_path, slurm, message):
    folder = tmp_path / "submitted"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"status": "submitted", "slurm": slurm}))
    one_line(attnbench.run("status", str(folder), timeout=TIMEOUT_S), 2, "meta.json", message)
