"""`attnbench submit --slurm`, `status` and `submit --resume` against the real local Slurm
of conftest.py: sharded runs hold exactly the keys of an unsharded one."""
import csv
import json
import pathlib
import re
import subprocess
import time

import attnbench_lists
import pytest

# Six points (src_len x attn_dim), two scorers, one stage: a few seconds per shard.
GRID = ["--scorer", "dot,general", "--batch", "1", "--src-len", "4,6,8", "--attn-dim", "4,8", "--tgt-len", "2",
        "--emb-dim", "4", "--enc-dim", "4", "--dec-dim", "4", "--vocab", "8", "--stages", "step"]
QUICK = ["--repetitions", "3", "--min-time", "0.01"]
SLOW = ["--repetitions", "3", "--min-time", "0.3"]  # long enough to cancel a shard while it runs


def attn(slurm, attnbench, *args, env=None, timeout=300):
    return subprocess.run([attnbench, *args], env=env or slurm.env, capture_output=True, text=True, timeout=timeout)


def keys(run_dir, file, key):
    with open(pathlib.Path(run_dir) / file, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows, f"{run_dir}/{file} has no rows"
    return sorted(tuple(row[c] for c in key) for row in rows)


def meta(run_dir):
    return json.loads((pathlib.Path(run_dir) / "meta.json").read_text())


def assert_same_keys(merged, unsharded):
    """The merged run and the unsharded one hold the same keys in every file (samples.csv: key and repetition)."""
    for file in ("timing.csv", "samples.csv", "entropy.csv"):
        key = attnbench_lists.key_columns(None, file) + (["repetition"] if file == "samples.csv" else [])
        assert keys(merged, file, key) == keys(unsharded, file, key), f"{file}: key sets differ"


def assert_one_error_line(r, pattern):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, f"exit {r.returncode}, stderr: {r.stderr}"
    assert len(lines) == 1, f"expected one line, got: {r.stderr}"
    assert re.search(pattern, lines[0]), f"'{lines[0]}' does not match {pattern}"
    assert r.stdout == "", f"stdout: {r.stdout}"


@pytest.fixture(scope="module")
def unsharded(attnbench, tmp_path_factory):
    out = tmp_path_factory.mktemp("unsharded") / "run"
    r = subprocess.run([attnbench, "run", *GRID, *QUICK, "--out", str(out), "--quiet"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture
def run_root(tmp_path):
    tmp_path.chmod(0o755)
    return tmp_path


def test_submit_wait_merges_exactly_the_keys_of_an_unsharded_run(slurm, attnbench, unsharded, run_root):
    out = run_root / "sharded run"  # a blank in the path: the scripts quote it
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "3", "--out", str(out), "--wait", *GRID, *QUICK)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"merged run complete: {out}" in r.stdout
    assert_same_keys(out, unsharded)
    m = meta(out)
    assert m["status"] == "complete"
    assert [s["shard"] for s in m["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert all(s["host"] and s["cpu_model"] for s in m["merged_from"])
    submission = m["slurm"]["submissions"]
    assert len(submission) == 1 and submission[0]["shards"] == [1, 2, 3]
    assert re.fullmatch(r"\d+", submission[0]["array_job"]) and re.fullmatch(r"\d+", submission[0]["merge_job"])
    for k in (1, 2, 3):
        assert meta(out / "shards" / str(k))["shard"] == f"{k}/3"
    status = attn(slurm, attnbench, "status", str(out))
    assert status.returncode == 0, status.stderr
    assert re.search(r"shards done 3, running 0, pending 0, failed 0; timing rows so far 12", status.stdout), status.stdout
    assert f"merged: {out} holds the whole run" in status.stdout


def test_status_reads_the_shard_folders_when_slurm_does_not_answer(slurm, attnbench, run_root):
    out = run_root / "folders"
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "2", "--out", str(out), "--wait", *GRID, *QUICK)
    assert r.returncode == 0, r.stdout + r.stderr
    (out / "shards" / "2" / "meta.json").unlink()  # as if shard 2 had never started
    status = attn(slurm, attnbench, "status", str(out), env=dict(slurm.env, PATH=str(run_root / "empty")))
    assert status.returncode == 0, status.stderr
    assert "Slurm did not answer (squeue, sacct): states from the shard folders" in status.stdout
    assert re.search(r"^1/2\s+done\s", status.stdout, re.M), status.stdout
    assert re.search(r"^2/2\s+pending\s.*\bmissing\b", status.stdout, re.M), status.stdout


def test_cancelled_shard_is_reported_by_status_and_finished_by_resume(slurm, attnbench, unsharded, run_root):
    out = run_root / "cancelled"
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "3", "--out", str(out), *GRID, *SLOW)
    assert r.returncode == 0, r.stdout + r.stderr
    array_job = meta(out)["slurm"]["submissions"][0]["array_job"]
    deadline = time.time() + 60
    running = []  # tasks that run and have started their shard's run folder
    while not running:
        assert time.time() < deadline, f"no task of job {array_job} started: {slurm.active_tasks(array_job)}"
        running = [task for task, state in slurm.active_tasks(array_job)
                   if state == "RUNNING" and (out / "shards" / task.split("_")[1] / "meta.json").exists()]
        time.sleep(0.05)
    cancelled = running[0]
    shard = int(cancelled.split("_")[1])
    slurm.check("scancel", cancelled)
    deadline = time.time() + 120
    while slurm.active_tasks(array_job):
        assert time.time() < deadline, f"job {array_job} still has tasks: {slurm.active_tasks(array_job)}"
        time.sleep(0.5)

    status = attn(slurm, attnbench, "status", str(out))
    assert status.returncode == 0, status.stderr
    line = next(l for l in status.stdout.splitlines() if l.startswith(f"{shard}/3 "))
    assert re.match(rf"{shard}/3\s+failed\s+{cancelled} CANCELLED", line), status.stdout
    assert re.search(r"shards done 2, running 0, pending 0, failed 1;", status.stdout), status.stdout
    assert f"resume with: attnbench submit --resume {out}" in status.stdout

    r = attn(slurm, attnbench, "submit", "--resume", str(out), "--wait", "--sbatch-arg=--comment=resumed")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"submitted shards {shard} of 3" in r.stdout
    m = meta(out)
    assert m["status"] == "complete"
    assert [s["shards"] for s in m["slurm"]["submissions"]] == [[1, 2, 3], [shard]]
    assert_same_keys(out, unsharded)
    resumed = meta(out / "shards" / str(shard))
    assert resumed["status"] == "complete" and len(resumed.get("resumed_utc", [])) == 1  # run --resume continued it
    second = m["slurm"]["submissions"][1]
    assert "Comment=resumed" in slurm.check("scontrol", "show", "job", second["array_job"]).stdout
    assert "Comment=resumed" in slurm.check("scontrol", "show", "job", second["merge_job"]).stdout


def test_submit_passes_resources_and_sbatch_options_to_slurm(slurm, attnbench, run_root):
    out = run_root / "options"
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "2", "--out", str(out), "--array-parallel", "1",
             "--time", "7", "--sbatch-arg=--comment=attnbench-test", "--sbatch-arg=--hold", *GRID, *QUICK,
             "--threads", "1,2")
    assert r.returncode == 0, r.stdout + r.stderr
    submission = meta(out)["slurm"]["submissions"][0]
    array_job = submission["array_job"]
    shown = slurm.check("scontrol", "show", "job", array_job).stdout
    slurm.check("scancel", array_job, submission["merge_job"])
    assert "ArrayTaskThrottle=1" in shown
    assert "TimeLimit=00:07:00" in shown
    assert "Comment=attnbench-test" in shown
    assert "JobHeldUser" in shown or "Priority=0" in shown
    assert re.search(r"CPUs/Task=2\b", shown), shown  # the grid's largest thread count
    script = (out / "slurm" / "shards.sbatch").read_text()
    assert "#SBATCH --cpus-per-task=2" in script
    assert 'export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-2}"' in script


def nothing_submitted(slurm, before):
    assert slurm.all_jobs() == before, "a job was submitted"


def test_submit_rejects_zero_shards(slurm, attnbench, run_root):
    before = slurm.all_jobs()
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "0", "--out", str(run_root / "x"), *GRID)
    assert_one_error_line(r, r"--shards: .*0")
    assert not (run_root / "x").exists()
    nothing_submitted(slurm, before)


def test_submit_rejects_more_shards_than_points(slurm, attnbench, run_root):
    before = slurm.all_jobs()
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "7", "--out", str(run_root / "x"), *GRID)
    assert_one_error_line(r, r"^attnbench: error: --shards 7: more shards than the grid's 6 points$")
    assert not (run_root / "x").exists()
    nothing_submitted(slurm, before)


def test_submit_without_sbatch_on_path(slurm, attnbench, run_root):
    before = slurm.all_jobs()
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "2", "--out", str(run_root / "x"), *GRID,
             env=dict(slurm.env, PATH=str(run_root / "empty")))
    assert_one_error_line(r, r"--slurm: sbatch not found on PATH")
    assert not (run_root / "x").exists()
    nothing_submitted(slurm, before)


def test_submit_to_a_partition_slurm_rejects_shows_its_message(slurm, attnbench, run_root):
    before = slurm.all_jobs()
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "2", "--out", str(run_root / "x"), "--partition",
             "nosuch", *GRID)
    assert_one_error_line(r, r"--partition nosuch: sbatch refused .*Invalid partition name specified")
    assert not (run_root / "x").exists()
    nothing_submitted(slurm, before)


def test_submit_refuses_an_out_that_exists(slurm, attnbench, run_root):
    before = slurm.all_jobs()
    (run_root / "x").mkdir()
    r = attn(slurm, attnbench, "submit", "--slurm", "--shards", "2", "--out", str(run_root / "x"), *GRID)
    assert_one_error_line(r, rf"--out {run_root / 'x'}: already exists")
    assert list((run_root / "x").iterdir()) == []
    nothing_submitted(slurm, before)


# Four tiny trainings (2 scorers x 2 seeds): a few seconds each.
TRAIN = ["--task", "reverse", "--scorer", "additive,additive_linear", "--seed", "1,2", "--steps", "10",
         "--eval-every", "10", "--eval-size", "16", "--len-min", "5", "--src-len", "6", "--long-len", "7", "--batch", "8",
         "--emb-dim", "4", "--enc-dim", "8", "--dec-dim", "8", "--attn-dim", "8"]


def test_submit_a_train_sweep_merges_its_trainings(slurm, attnbench, run_root):
    whole = run_root / "whole"
    r = subprocess.run([attnbench, "train", *TRAIN, "--out", str(whole), "--quiet"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    out = run_root / "trained"
    r = attn(slurm, attnbench, "submit", "--slurm", "--sweep", "train", "--shards", "2", "--out", str(out), "--wait",
             *TRAIN)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "plan: 4 trainings in 2 shards" in r.stdout
    for file in ("train_final.csv", "train.csv", "train_attention.csv"):
        key = attnbench_lists.key_columns(None, file)
        assert keys(out, file, key) == keys(whole, file, key), f"{file}: key sets differ"
    m = meta(out)
    assert m["status"] == "complete" and m["kind"] == "train"
    status = attn(slurm, attnbench, "status", str(out))
    assert "shards done 2, running 0, pending 0, failed 0; trainings finished so far 4" in status.stdout, status.stdout
