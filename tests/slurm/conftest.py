"""A real one-node Slurm for the tests in this folder, private to the test session
(scripts/local_slurm.py: its own munged, slurmctld and slurmd, key, socket, state, logs and
ports). The finalizer cancels every job and stops exactly the processes it started. When
Slurm cannot start, the tests fail with the reason; they are never skipped.

The attnbench binary is $ATTNBENCH_BINARY (CTest sets it), else build/attnbench.
"""
import os
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from local_slurm import LocalSlurm, LocalSlurmError  # noqa: E402


@pytest.fixture(scope="session")
def attnbench():
    path = pathlib.Path(os.environ.get("ATTNBENCH_BINARY", REPO / "build" / "attnbench"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"attnbench binary not found at {path} (set ATTNBENCH_BINARY or build build/attnbench)")
    return str(path)


class TestSlurm(LocalSlurm):
    """LocalSlurm with the queries the tests make."""

    def check(self, *args):
        r = self.run(*args)
        if r.returncode != 0:
            pytest.fail(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def all_jobs(self):
        """Every job Slurm lists, ended ones included (kept for MinJobAge, 300 s)."""
        return self.check("squeue", "--noheader", "--states=all", "--array", "--format=%i").stdout.split()

    def active_tasks(self, job):
        """[task id, state] of the tasks of `job` still pending or running."""
        r = self.run("squeue", "--noheader", "--array", "--jobs", job, "--format=%i %T")
        return [line.split() for line in r.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def slurm():
    cluster = TestSlurm()
    try:
        cluster.start()
    except LocalSlurmError as e:
        cluster.stop()
        pytest.fail(str(e))
    try:
        yield cluster
    finally:
        cluster.stop()
