"""`attnbench list --json` against what the binary really does: the file headers of a real
run, the stages it times, the Problem fields its --help offers, and the scorers it accepts.
The binary is $ATTNBENCH_BINARY (CTest sets it), else <repo>/build/attnbench."""

import csv
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import attnbench_lists  # noqa: E402

BINARY = attnbench_lists.default_binary()


def attnbench(*args):
    return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A real run of one tiny point, every stage, one scorer: its folder."""
    out = tmp_path_factory.mktemp("run") / "r"
    done = attnbench("run", "--scorer", "dot", "--src-len", 4, "--tgt-len", 2, "--repetitions", 1,
                     "--min-time", "0.001", "--quiet", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def header_and_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.mark.parametrize("file", ["timing.csv", "samples.csv", "entropy.csv"])
def test_file_columns_are_the_headers_a_run_writes(tiny_run, file):
    header, rows = header_and_rows(tiny_run / file)
    assert header == attnbench_lists.columns(BINARY, file)
    assert rows and all(len(row) == len(header) for row in rows)


def test_stages_are_the_stages_a_run_times_in_order(tiny_run):
    header, rows = header_and_rows(tiny_run / "timing.csv")
    timed = [row[header.index("stage")] for row in rows]
    assert timed == attnbench_lists.default_stage_names(BINARY)
    assert set(attnbench_lists.stage_names(BINARY)) - set(timed) == {"train_step"}  # opt-in


def test_sequence_stages_divide_ns_per_step_by_tgt_len(tiny_run):
    header, rows = header_and_rows(tiny_run / "timing.csv")
    sequence = set(attnbench_lists.sequence_stages(BINARY))
    assert sequence, "some stage is timed once per sequence"
    for row in rows:
        cell = dict(zip(header, row))
        tgt_len = int(cell["tgt_len"]) if cell["stage"] in sequence else 1
        assert float(cell["ns_per_step"]) == pytest.approx(float(cell["median_ns"]) / tgt_len, rel=1e-6)


def test_every_field_is_a_run_flag_with_its_default():
    run_help = attnbench("run", "--help").stdout
    probe_help = attnbench("probe", "--help").stdout
    for field in attnbench_lists.lists(BINARY)["fields"]:
        assert field["flag"] in run_help, field["flag"]
        if field["name"] != "scorer":
            assert f"SPEC [{field['default']}]" in run_help.split(field["flag"], 1)[1].splitlines()[0]
        assert field["flag"] == "--" + field["name"].replace("_", "-")
    assert "--batch" in probe_help


def test_enum_fields_accept_exactly_their_choices():
    lists = attnbench_lists.lists(BINARY)
    by_name = {f["name"]: f for f in lists["fields"]}
    for name, key in (("impl", "impls"), ("dtype", "dtypes"), ("init", "inits")):
        assert by_name[name]["type"] == "enum"
        assert by_name[name]["choices"] == lists[key]
        assert by_name[name]["default"] == lists[key][0]
        bad = attnbench("run", by_name[name]["flag"], "nonsense", "--dry-run")
        assert bad.returncode == 2 and "nonsense" in bad.stderr


def test_every_listed_scorer_is_accepted_and_no_other():
    for name in attnbench_lists.scorer_names(BINARY):
        assert attnbench("run", "--scorer", name, "--dry-run").returncode == 0, name
    assert attnbench("run", "--scorer", "not_a_scorer", "--dry-run").returncode == 2


def test_every_metric_has_a_unit_entry_and_a_definition():
    lists = attnbench_lists.lists(BINARY)
    assert [m["column"] for m in lists["metrics"]] == lists["files"]["entropy.csv"]["values"]
    for m in lists["metrics"]:
        assert m["definition"] and lists["units"][m["column"]] == m["unit"]
    assert lists["units"]["median_ns"] == "ns"


def test_every_listed_task_is_accepted_and_no_other():
    tasks = attnbench_lists.task_names(BINARY)
    assert "reverse" in tasks and "recall" in tasks
    for name in tasks:
        assert attnbench("train", "--task", name, "--dry-run").returncode == 0, name
    assert attnbench("train", "--task", "not_a_task", "--dry-run").returncode == 2
