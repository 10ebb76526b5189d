"""`attnbench merge` across machines: shards of different CPU models are refused unless
--allow-mixed, which then names the host in every row (and compare refuses such a run)."""
import csv
import json
import os
import pathlib
import subprocess

import pytest

GRID = ["--scorer", "dot", "--batch", "1", "--src-len", "4,6", "--attn-dim", "4", "--tgt-len", "2", "--emb-dim", "4",
        "--enc-dim", "4", "--dec-dim", "4", "--vocab", "8", "--stages", "step", "--repetitions", "2",
        "--min-time", "0.01", "--quiet"]


def attn(attnbench, *args):
    return subprocess.run([attnbench, *args], capture_output=True, text=True, timeout=300)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def two_machines(attnbench, tmp_path):
    """Shards 1/2 and 2/2 of one grid, the second relabelled as measured on another machine."""
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, out in enumerate(shards, 1):
        r = attn(attnbench, "run", *GRID, "--shard", f"{k}/2", "--out", str(out))
        assert r.returncode == 0, r.stderr
    meta_path = shards[1] / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["build"]["host"] = "node-b"
    meta["build"]["cpu_model"] = "Another CPU"
    meta_path.write_text(json.dumps(meta))
    return shards


def test_merge_refuses_shards_of_different_cpu_models(attnbench, two_machines, tmp_path):
    r = attn(attnbench, "merge", *map(str, two_machines), "--out", str(tmp_path / "merged"))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "build/cpu_model is \"Another CPU\"" in lines[0] and "--allow-mixed" in lines[0], lines[0]
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_shards_of_cpus_named_alike_with_different_ids(attnbench, two_machines, tmp_path):
    """A VM names a Zen 4 and a Zen 5 "AMD EPYC" alike: cpu_id tells them apart."""
    meta_path = two_machines[1] / "meta.json"
    meta = json.loads(meta_path.read_text())
    here = json.loads((two_machines[0] / "meta.json").read_text())["build"]
    meta["build"].update(cpu_model=here["cpu_model"], cpu_id="AuthenticAMD family 99 model 1 stepping 0")
    meta_path.write_text(json.dumps(meta))
    r = attn(attnbench, "merge", *map(str, two_machines), "--out", str(tmp_path / "merged"))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "build/cpu_id is \"AuthenticAMD family 99 model 1 stepping 0\"" in lines[0], lines[0]
    assert "--allow-mixed" in lines[0], lines[0]
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize("variable, field, values", [
    ("ATTNBENCH_FUSED_LOOPS", "fused_loops", ("best", "portable")),
    ("ATTNBENCH_FUSED_BF16_QUERY", "fused_bf16_query", ("bf16", "f32")),
])
def test_merge_refuses_shards_timed_with_other_fused_settings(attnbench, tmp_path, variable, field, values):
    """A shard timed with ATTNBENCH_FUSED_LOOPS=portable does not mix with one timed with the
    CPU's best loops (on a CPU without AVX2 both run the portable ones: nothing to refuse),
    nor one whose fused bf16 query multiplied in bf16 with one that multiplied in f32."""
    shards = [tmp_path / value for value in values]
    for k, (out, value) in enumerate(zip(shards, values), 1):
        env = dict(os.environ, **{variable: value})
        r = subprocess.run([attnbench, "run", *GRID, "--shard", f"{k}/2", "--out", str(out)], capture_output=True,
                           text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
    recorded = [json.loads((out / "meta.json").read_text())["build"][field] for out in shards]
    if recorded[0] == recorded[1]:
        pytest.skip(f"this CPU records {field} {recorded[0]} either way")
    r = attn(attnbench, "merge", *map(str, shards), "--out", str(tmp_path / "merged"))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f'build/{field} is "{recorded[1]}"' in lines[0] and "--allow-mixed" in lines[0], lines[0]
    assert "fused loops or fused bf16 query" in lines[0], lines[0]
    assert not (tmp_path / "merged").exists()
    assert attn(attnbench, "merge", *map(str, shards), "--out", str(tmp_path / "mixed"), "--allow-mixed").returncode == 0
    merged_from = json.loads((tmp_path / "mixed" / "meta.json").read_text())["merged_from"]
    assert [shard[field] for shard in merged_from] == recorded


def test_merge_allow_mixed_names_the_host_in_every_row(attnbench, two_machines, tmp_path):
    out = tmp_path / "merged"
    r = attn(attnbench, "merge", *map(str, two_machines), "--out", str(out), "--allow-mixed")
    assert r.returncode == 0, r.stderr
    here = json.loads((two_machines[0] / "meta.json").read_text())["build"]["host"]
    here_id = json.loads((two_machines[0] / "meta.json").read_text())["build"]["cpu_id"]
    for file in ("timing.csv", "samples.csv", "entropy.csv"):
        merged = rows(out / file)
        expected = [here] * len(rows(two_machines[0] / file)) + ["node-b"] * len(rows(two_machines[1] / file))
        assert [row["host"] for row in merged] == expected, file
    meta = json.loads((out / "meta.json").read_text())
    assert meta["allow_mixed"] is True
    assert [(m["host"], m["cpu_model"]) for m in meta["merged_from"]][1] == ("node-b", "Another CPU")
    assert all(m["cpu_id"] == here_id for m in meta["merged_from"]), meta["merged_from"]


def test_compare_refuses_a_run_measured_on_several_hosts(attnbench, two_machines, tmp_path):
    out = tmp_path / "merged"
    assert attn(attnbench, "merge", *map(str, two_machines), "--out", str(out), "--allow-mixed").returncode == 0
    r = attn(attnbench, "compare", str(out), "--baseline", "scorer=dot")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "rows measured on 2 hosts" in lines[0] and "node-b" in lines[0], lines[0]
