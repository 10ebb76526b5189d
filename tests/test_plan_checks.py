"""Whole-plan checks and size overflow from the command line: one line, exit 2, nothing created;
a point too large to represent gets skipped rows in a run, never a signal."""
import csv

TWO61 = str(2 ** 61)


def assert_refused(result, *words):
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_probe_refuses_sizes_that_overflow(attnbench):
    for enc in (TWO61, str(2 ** 61 + 2)):
        assert_refused(attnbench.run("probe", "--scorer", "dot", "--batch", "2", "--src-len", "4", "--enc-dim", enc),
                       "problem too large", "64 bits")


def test_run_writes_skipped_rows_for_a_point_too_large(attnbench, tmp_path):
    out = tmp_path / "D"
    result = attnbench.run("run", "--scorer", "dot", "--src-len", TWO61, "--stages", "step", "--repetitions", "1",
                       "--min-time", "0.001", "--quiet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(open(out / "timing.csv")))
    assert len(rows) == 1
    assert rows[0]["status"].startswith("skipped: needs more bytes than 64 bits"), rows[0]["status"]


def test_dry_run_never_prints_wrapped_estimates(attnbench):
    result = attnbench.run("run", "--batch", "36028797018963968", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "-9223372036854775808" not in result.stdout
    assert " 0 GiB" not in result.stdout
    assert "skipped" in result.stdout


def test_dry_run_refuses_absurd_settings(attnbench):
    assert_refused(attnbench.run("run", "--repetitions", "1000000000", "--dry-run"), "--repetitions", "1000000000")
    assert_refused(attnbench.run("run", "--threads", "2000000000", "--dry-run"), "--threads", "2000000000")
    assert_refused(attnbench.run("run", "--min-time", "1e12", "--dry-run"), "--min-time")


def test_scenario_without_scorer_column_runs_every_scorer_and_is_checked_first(attnbench, tmp_path):
    scenario = tmp_path / "s.csv"
    scenario.write_text("batch\n2\n")
    result = attnbench.run("run", "--scenario", str(scenario), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "dot" in result.stdout and "all" not in result.stdout.split("total")[0].split("scorers")[1]


def test_scenario_rows_share_one_point_cap_and_nothing_is_created(attnbench, tmp_path):
    scenario = tmp_path / "big.csv"
    scenario.write_text("scorer,src_len,tgt_len\n" + "".join(f"dot,1:1000,{t}:{t + 999}\n" for t in (1, 2000)))
    out = tmp_path / "D"
    assert_refused(attnbench.run("run", "--scenario", str(scenario), "--out", str(out)), "big.csv:3", "in all")
    assert not out.exists()


def test_a_huge_cell_gives_a_short_single_line(attnbench, tmp_path):
    scenario = tmp_path / "huge.csv"
    scenario.write_text("scorer,batch\ndot," + "9" * 1000000 + "\n")
    result = attnbench.run("run", "--scenario", str(scenario), "--dry-run")
    assert_refused(result, "huge.csv:2", "batch")
    assert len(result.stderr) < 1000


def test_a_quoted_cell_with_newlines_names_its_first_line(attnbench, tmp_path):
    scenario = tmp_path / "quoted.csv"
    scenario.write_text('scorer,batch\ndot,2\n"d\not",2\n')
    assert_refused(attnbench.run("run", "--scenario", str(scenario), "--dry-run"), "quoted.csv:3", "\\n")
