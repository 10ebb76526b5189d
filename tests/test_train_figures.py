"""scripts/plot.py and report.py on an `attnbench train` folder: curves, heatmaps, table, findings."""

import csv
import statistics
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def tiny_run(binary, out):
    subprocess.run([binary, "train", "--task", "reverse,recall", "--scorer", "additive,additive_linear", "--seed",
                    "1,2", "--steps", "20", "--eval-every", "10", "--eval-size", "32", "--src-len", "7",
                    "--long-len", "9", "--batch", "16", "--emb-dim", "8", "--enc-dim", "16", "--dec-dim", "16",
                    "--attn-dim", "16", "--out", str(out), "--quiet"], check=True, capture_output=True, timeout=300)


def test_plot_and_report_of_a_train_run(tmp_path, binary):
    run = tmp_path / "run"
    tiny_run(binary, run)
    r = subprocess.run([sys.executable, str(SCRIPTS / "plot.py"), str(run), "--format", "png"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    written = r.stdout.split()
    assert sorted(Path(p).name for p in written) == ["train_curves.png", "train_heatmaps.png"]
    assert all(Path(p).stat().st_size > 1000 for p in written)

    r = subprocess.run([sys.executable, str(SCRIPTS / "report.py"), str(run)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Does tanh matter? Does scaling matter?" in r.stdout
    assert "measured by: attnbench train --task reverse,recall" in r.stdout
    with open(run / "train_final.csv", newline="") as f:
        final = list(csv.DictReader(f))
    mean = statistics.fmean(float(row["seq_acc"]) for row in final
                            if row["task"] == "reverse" and row["scorer"] == "additive_linear")
    assert "reverse: seq_acc additive " in r.stdout
    assert f"vs additive_linear {mean:.3f}" in r.stdout
    assert "scaling: this run trains no dot/scaled_dot pair" in r.stdout
    assert (run / "report.html").stat().st_size > 1000
