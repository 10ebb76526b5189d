"""`attnbench train`: the files of a tiny sweep, bad input, --dry-run, SIGINT and --resume."""

import csv
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

BINARY = os.environ.get("ATTNBENCH_BINARY", "build/attnbench")

KEY = ["task", "scorer", "impl", "dtype", "threads", "batch", "len_min", "src_len", "emb_dim", "enc_dim",
       "dec_dim", "attn_dim", "lr", "clip", "seed"]
CURVE = KEY + ["step", "seconds", "train_loss", "eval_loss", "token_acc", "seq_acc", "align_acc", "gold_mass",
               "entropy_norm"]
FINAL = KEY + ["status", "steps", "train_seconds", "ms_per_step", "tokens_per_s", "eval_loss", "token_acc",
               "seq_acc", "align_acc", "gold_mass", "entropy_norm", "drift", "seq_acc_long", "align_acc_long"]
# Small and quick: 2 scorers x 2 seeds, 20 steps, evaluations at 10 and 20.
def tiny(**changes):
    flags = {"task": "reverse", "scorer": "additive,additive_linear", "seed": "1,2", "steps": "20",
             "eval-every": "10", "eval-size": "64", "len-min": "5", "src-len": "8", "long-len": "10",
             "batch": "16", "emb-dim": "8", "enc-dim": "16", "dec-dim": "16", "attn-dim": "16"}
    flags.update({k.replace("_", "-"): v for k, v in changes.items()})
    return [a for k, v in flags.items() for a in ("--" + k, v)] + ["--quiet"]


TINY = tiny()


def run(*args, timeout=300):
    return subprocess.run([BINARY, "train", *args], capture_output=True, text=True, timeout=timeout)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_tiny_sweep_writes_the_schema(tmp_path):
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
    assert attention[0] == KEY + ["t", "j", "weight", "source", "target"]
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
def test_bad_input_names_the_flag_and_writes_nothing(tmp_path, flags, flag):
    out = tmp_path / "run"
    r = run(*flags, "--out", str(out))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], r.stderr
    assert not out.exists()


@pytest.mark.parametrize("scenario, trainings", [
    ("train_default", 6), ("train_tanh", 24), ("train_scale", 36), ("train_all", 60)])
def test_shipped_scenarios_plan_their_trainings(scenario, trainings):
    r = run("--scenario", scenario, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"total: {trainings} trainings, about" in r.stdout
    assert " reverse " in r.stdout


def test_dry_run_estimates_and_writes_nothing(tmp_path):
    out = tmp_path / "run"
    r = run(*TINY, "--out", str(out), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "total: 4 trainings, about" in r.stdout
    assert not out.exists()


def test_sigint_then_resume_loses_and_doubles_nothing(tmp_path):
    out = tmp_path / "run"
    args = [*tiny(seed="1:4", steps="40", eval_every="20"), "--out", str(out)]
    p = subprocess.Popen([BINARY, "train", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
