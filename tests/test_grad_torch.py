"""`attnbench grad --init torch` against PyTorch autograd, tensor by tensor; grad's bad input;
the train_step stage of `attnbench run`.

Run: ATTNBENCH_BINARY=/path/to/build/attnbench /usr/bin/python3 -m pytest tests/test_grad_torch.py

Each case runs the binary (subprocess) and scripts/torch_twin.py's run_grad (in process)
on the same flags: the same rows must come out in the same order, the loss must agree
to 1e-5 relative and every gradient tensor to 1e-4 x its largest |value| in PyTorch
(with a floor of 1e-4 x the largest gradient of the model, for a tensor whose gradient
is zero up to rounding: additive_linear's scorer.W, whose W s term cancels in the softmax).
"""
from __future__ import annotations

import csv
import os
import pathlib
import subprocess
import sys
from collections import defaultdict

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
import torch_twin  # noqa: E402  (needs the path above)
from torch_twin import Probe  # noqa: E402

LOSS_TOLERANCE = 1e-5
GRAD_TOLERANCE = 1e-4
ZERO_FLOOR = 1e-4

# (name, problem sizes, training flags); every case runs for every scorer.
CASES = {
    "small_K0": (dict(batch=2, src_len=5, tgt_len=3, emb_dim=8, enc_dim=12, dec_dim=10, attn_dim=6, vocab=13),
                 dict(adam_steps=0)),
    "masked_K3": (dict(batch=3, src_len=7, tgt_len=4, emb_dim=6, enc_dim=10, dec_dim=9, attn_dim=5, vocab=11,
                       len_min=2, seed=7),
                  dict(adam_steps=3, lr=0.01)),
    "lengths_K4_clipped_2t": (dict(batch=4, src_len=6, tgt_len=5, emb_dim=5, enc_dim=8, dec_dim=7, attn_dim=9,
                                   vocab=17, lengths=(6, 1, 3, 6), threads=2, seed=3),
                              dict(adam_steps=4, lr=0.02, clip=0.05)),
    "defaults_K3_2t": (dict(threads=2, tgt_len=5), dict(adam_steps=3)),
}


def binary() -> str:
    path = os.environ.get("ATTNBENCH_BINARY")
    if not path:
        pytest.fail("set ATTNBENCH_BINARY to the built attnbench binary")
    return path


def flags(sizes: dict, training: dict) -> list:
    out = ["grad", "--init", "torch"]
    for name, value in {**sizes, **training}.items():
        text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        out += ["--" + name.replace("_", "-"), text]
    return out


def parse(csv: str) -> dict:
    """name -> list of values in printed order; checks the header and the index column."""
    lines = csv.strip().split("\n")
    assert lines[0] == "name,i,value"
    tensors = defaultdict(list)
    for line in lines[1:]:
        name, i, value = line.split(",")
        assert int(i) == len(tensors[name]), f"{name}: index {i} out of order"
        tensors[name].append(float(value))
    return tensors


@pytest.mark.parametrize("case", list(CASES))
def test_grad_equals_torch_autograd(scorer: str, case: str) -> None:
    sizes, training = CASES[case]
    sizes = {"scorer": scorer, **sizes}
    ours = subprocess.run([binary()] + flags(sizes, training), capture_output=True, text=True, check=False)
    assert ours.returncode == 0, ours.stderr
    mine = parse(ours.stdout)
    theirs = parse(torch_twin.run_grad(Probe(**sizes), **training))
    assert list(mine) == list(theirs)  # same tensors, PyTorch's named_parameters() order
    loss_ours, loss_torch = mine.pop("loss")[0], theirs.pop("loss")[0]
    assert abs(loss_ours - loss_torch) <= LOSS_TOLERANCE * abs(loss_torch)
    largest = max(abs(x) for values in theirs.values() for x in values)
    assert largest > 0
    for name, expected in theirs.items():
        got = mine[name]
        assert len(got) == len(expected), name
        scale = max(max(abs(x) for x in expected), ZERO_FLOOR * largest)
        worst = max(abs(a - b) for a, b in zip(got, expected))
        assert worst <= GRAD_TOLERANCE * scale, f"{name}: worst {worst:.3g} > {GRAD_TOLERANCE} x {scale:.3g}"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--adam-steps", "-1"], "--adam-steps: must be a number 0 or more, got '-1'"),
        (["--lr", "0"], "--lr: must be a number more than 0, got '0'"),
        (["--lr", "-0.5"], "--lr: must be a number more than 0, got '-0.5'"),
        (["--lr", "fast"], "--lr: must be a number more than 0, got 'fast'"),
        (["--clip", "0"], "--clip: must be a number more than 0, got '0'"),
        (["--batch", "0"], "--batch"),
        (["--lengths", "3,9"], "--lengths: bad length '9'"),
        (["--impl", "fused"], "--impl"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(extra: list, message: str) -> None:
    run = subprocess.run([binary(), "grad", "--src-len", "4", "--batch", "2"] + extra, capture_output=True, text=True,
                         check=False)
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().split("\n")
    assert len(lines) == 1 and message in lines[0], run.stderr


def test_run_times_train_step_only_when_named(tmp_path) -> None:
    out = tmp_path / "run"
    run = subprocess.run([binary(), "run", "--scorer", "dot,general", "--batch", "2", "--src-len", "4", "--tgt-len",
                          "3", "--stages", "step,train_step", "--repetitions", "2", "--min-time", "0.001", "--quiet",
                          "--out", str(out)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    with open(out / "timing.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["scorer"], r["stage"]) for r in rows] == [("dot", "step"), ("dot", "train_step"),
                                                         ("general", "step"), ("general", "train_step")]
    for row in rows:
        assert row["status"] == "ok"
        per_step = float(row["median_ns"]) / (3 if row["stage"] == "train_step" else 1)
        assert abs(float(row["ns_per_step"]) - per_step) <= 1e-6 * per_step
    train = [r for r in rows if r["stage"] == "train_step"]
    assert all("--stages step,train_step" in r["repro"] for r in train)


def test_run_refuses_train_step_in_bf16(tmp_path) -> None:
    out = tmp_path / "run"
    run = subprocess.run([binary(), "run", "--stages", "train_step", "--dtype", "bf16", "--src-len", "4", "--out",
                          str(out)], capture_output=True, text=True, check=False)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip() == "attnbench: error: --stages: train_step trains in f32 only; the grid has --dtype bf16"
    assert not out.exists()
