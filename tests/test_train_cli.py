"""`attnbench train`: the files of a tiny sweep, bad input, --dry-run, SIGINT and --resume."""

import csv
import json
import signal
import subprocess
import time

import pytest

import attnbench_lists


@pytest.fixture(scope="module")
def files(binary):
    """The headers of train.csv, train_final.csv and train_attention.csv, and their key, from list --json."""
    names = ["train.csv", "train_final.csv", "train_attention.csv"]
    return {"key": attnbench_lists.key_columns(binary, "train.csv"),
            **{name: attnbench_lists.columns(binary, name) for name in names}}


# Small and quick: 2 scorers x 2 seeds, 20 steps, evaluations at 10 and 20.
def tiny(**changes):
    flags = {"task": "reverse", "scorer": "additive,additive_linear", "seed": "1,2", "steps": "20",
             "eval-every": "10", "eval-size": "64", "len-min": "5", "src-len": "8", "long-len": "10",
             "batch": "16", "emb-dim": "8", "enc-dim": "16", "dec-dim": "16", "attn-dim": "16"}
    flags.update({k.replace("_", "-"): v for k, v in changes.items()})
    return [a for k, v in flags.items() for a in ("--" + k, v)] + ["--quiet"]


TINY = tiny()


@pytest.fixture(scope="module")
def run(binary):
    def train(*args, timeout=300):
        return subprocess.run([binary, "train", *args], capture_output=True, text=True, timeout=timeout)
    return train


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_tiny_sweep_writes_the_schema(tmp_path, run, files):
    KEY, CURVE, FINAL = files["key"], files["train.csv"], files["train_final.csv"]
    out = tmp_path / "run"
    r = run(*TINY, "--out", str(out))
    assert r.returncode == 0, r.stderr
    curve, final = rows(out / "train.csv"), rows(out / "train_final.csv")
    assert curve[0] == CURVE
    assert final[0] == FINAL
    assert len(final) == 1 + 4 and len(curve) == 1 + 4 * 2
    assert [row[KEY.index("scorer")] for row in final[1:]] == ["additive", "additive", "additive_linear",
                                                              "additive_linear"]
    for row in final[1:]:
        cells = dict(zip(FINAL, row))
        assert cells["status"] == "ok" and cells["steps"] == "20"
        for name in ["token_acc", "seq_acc", "align_acc", "gold_mass", "entropy_norm", "seq_acc_long"]:
            assert 0.0 <= float(cells[name]) <= 1.0, name
        assert float(cells["ms_per_step"]) > 0
    assert [dict(zip(CURVE, row))["step"] for row in curve[1:3]] == ["10", "20"]
    assert (out / "meta.json").exists()
    attention = rows(out / "train_attention.csv")
    assert attention[0] == files["train_attention.csv"] and attention[0][len(KEY):] == [
        "t", "j", "weight", "source", "target"]
    first = [row for row in attention[1:] if row[:len(KEY)] == final[1][:len(KEY)]]
    n = 1 + max(int(row[-4]) for row in first)  # reverse: the source is as long as the target
    assert len(first) == (n + 1) * n and first[-1][-1] == "EOS"
    for t in range(n + 1):  # each output step's weights sum to 1
        assert abs(sum(float(row[-3]) for row in first if row[-5] == str(t)) - 1) < 1e-5


@pytest.mark.parametrize("flags, flag", [
    (["--task", "rot13"], "--task"),
    (["--len-min", "9", "--src-len", "8"], "--len-min"),
    (["--task", "recall", "--src-len", "4", "--len-min", "3"], "--src-len"),
    (["--lr", "0"], "--lr"),
    (["--lr", "-1"], "--lr"),
    (["--steps", "0"], "--steps"),
    (["--clip", "0"], "--clip"),
    (["--steps", "10", "--eval-every", "20"], "--eval-every"),
])
def test_bad_input_names_the_flag_and_writes_nothing(tmp_path, run, flags, flag):
    out = tmp_path / "run"
    r = run(*flags, "--out", str(out))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], r.stderr
    assert not out.exists()


@pytest.mark.parametrize("scenario, trainings", [
    ("train_default", 6), ("train_tanh", 24), ("train_scale", 36), ("train_all", 84)])
def test_shipped_scenarios_plan_their_trainings(run, scenario, trainings):
    r = run("--scenario", scenario, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"total: {trainings} trainings, about" in r.stdout
    assert " reverse " in r.stdout


def test_dry_run_estimates_and_writes_nothing(tmp_path, run):
    out = tmp_path / "run"
    r = run(*TINY, "--out", str(out), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "total: 4 trainings, about" in r.stdout
    assert not out.exists()


def test_sigint_then_resume_loses_and_doubles_nothing(tmp_path, binary, run, files):
    KEY = files["key"]
    out = tmp_path / "run"
    args = [*tiny(seed="1:4", steps="40", eval_every="20"), "--out", str(out)]
    p = subprocess.Popen([binary, "train", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    final = out / "train_final.csv"
    deadline = time.time() + 240
    while time.time() < deadline and (not final.exists() or len(rows(final)) < 2):
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    done = len(rows(final)) - 1
    assert 1 <= done < 8
    assert len(rows(out / "train.csv")) - 1 == 2 * done  # whole trainings only
    r = run("--resume", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    keys = [tuple(row[:len(KEY)]) for row in rows(final)[1:]]
    assert len(keys) == 8 and len(set(keys)) == 8
    curve_keys = [tuple(row[:len(KEY) + 1]) for row in rows(out / "train.csv")[1:]]
    assert len(curve_keys) == 16 and len(set(curve_keys)) == 16


def test_shards_merge_into_the_trainings_of_an_unsharded_run(tmp_path, binary, run, files):
    KEY = files["key"]
    whole = tmp_path / "whole"
    assert run(*TINY, "--out", str(whole)).returncode == 0
    shards = []
    for k in (1, 2):
        shard = tmp_path / f"shard{k}"
        r = run(*TINY, "--shard", f"{k}/2", "--out", str(shard))
        assert r.returncode == 0, r.stderr
        assert len(rows(shard / "train_final.csv")) - 1 == 2
        shards.append(str(shard))
    merged = tmp_path / "merged"
    r = subprocess.run([binary, "merge", *shards, "--out", str(merged)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "merged 2 folders" in r.stdout
    for name, key_len in (("train_final.csv", len(KEY)), ("train.csv", len(KEY) + 1),
                          ("train_attention.csv", len(KEY) + 2)):
        assert rows(merged / name)[0] == files[name]
        got = sorted(tuple(row[:key_len]) for row in rows(merged / name)[1:])
        assert got == sorted(tuple(row[:key_len]) for row in rows(whole / name)[1:]), name
    # Training is deterministic for a seed: the merged finals equal the unsharded ones but for the timings.
    timing = {"train_seconds", "ms_per_step", "tokens_per_s"}
    keep = [i for i, c in enumerate(files["train_final.csv"]) if c not in timing]
    assert sorted([row[i] for i in keep] for row in rows(merged / "train_final.csv")[1:]) == \
        sorted([row[i] for i in keep] for row in rows(whole / "train_final.csv")[1:])
    meta = json.loads((merged / "meta.json").read_text())
    assert meta["kind"] == "train" and meta["status"] == "complete"
    assert [s["shard"] for s in meta["merged_from"]] == ["1/2", "2/2"]
