"""A real one-node Slurm for the tests in this folder, private to the test session.

munged (as user munge), slurmctld and slurmd run from a temporary folder with their own
key, socket, state, spool, logs and ports; the clients find them through SLURM_CONF. The
finalizer cancels every job and stops exactly the processes the fixture started. When
Slurm cannot start, the tests fail with the reason (they are never skipped).

The attnbench binary is $ATTNBENCH (CTest sets it), else build/attnbench.
"""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
START_TIMEOUT_S = 30


@pytest.fixture(scope="session")
def attnbench():
    path = pathlib.Path(os.environ.get("ATTNBENCH", REPO / "build" / "attnbench"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"attnbench binary not found at {path} (set ATTNBENCH or build build/attnbench)")
    return str(path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path, lines=15):
    try:
        return "\n".join(pathlib.Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


class LocalSlurm:
    """Paths, environment and started processes of the private cluster."""

    def __init__(self, root):
        self.root = root
        self.conf = root / "slurm.conf"
        self.processes = []  # (name, Popen), in start order
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def run(self, *args, check=True):
        r = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            pytest.fail(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def start(self, name, args, log, **popen):
        out = open(log, "w")
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=self.env, **popen)
        out.close()
        self.processes.append((name, process))
        return process

    def fail_start(self, why):
        logs = "\n".join(f"--- {p.name}:\n{log_tail(p)}" for p in sorted((self.root / "log").glob("*")))
        pytest.fail(f"the local Slurm did not start: {why}\n{logs}")

    def all_jobs(self):
        """Every job Slurm lists, ended ones included (kept for MinJobAge)."""
        return self.run("squeue", "--noheader", "--states=all", "--array", "--format=%i").stdout.split()

    def active_tasks(self, job):
        r = self.run("squeue", "--noheader", "--array", "--jobs", job, "--format=%i %T", check=False)
        return [line.split() for line in r.stdout.splitlines() if line.strip()]

    def stop(self):
        if any(name == "slurmctld" and p.poll() is None for name, p in self.processes):
            subprocess.run(["scancel", "--full", "--user=root"], env=self.env, capture_output=True, timeout=30)
            deadline = time.time() + 20
            while time.time() < deadline:
                r = subprocess.run(["squeue", "--noheader"], env=self.env, capture_output=True, text=True, timeout=30)
                if r.returncode != 0 or not r.stdout.strip():
                    break
                time.sleep(0.5)
        for _, process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def write_conf(cluster, node):
    memory_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20) - 1024
    root = cluster.root
    cluster.conf.write_text(f"""\
ClusterName=attnbenchtest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
ReturnToService=2
KillWait=5
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={memory_mib} State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP
""")


def start_munge(cluster):
    """munged as user munge with a fresh 1024-byte key (mode 400) and its own socket."""
    munge = cluster.root / "munge"
    private = munge / "private"
    private.mkdir(parents=True)
    key = private / "munge.key"
    key.write_bytes(os.urandom(1024))
    for path, mode in ((munge, 0o755), (private, 0o700), (key, 0o400)):
        shutil.chown(path, "munge", "munge")
        path.chmod(mode)
    cluster.start("munged", ["munged", "--foreground", f"--key-file={key}", f"--socket={munge}/munge.socket",
                             f"--pid-file={private}/munged.pid", f"--seed-file={private}/munged.seed",
                             f"--log-file={private}/munged.log"],
                  cluster.root / "log" / "munged.out", user="munge", group="munge", extra_groups=[])
    deadline = time.time() + START_TIMEOUT_S
    while not (munge / "munge.socket").exists():
        if cluster.processes[-1][1].poll() is not None or time.time() > deadline:
            cluster.fail_start("munged did not create its socket")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def slurm():
    missing = [tool for tool in DAEMONS + CLIENTS if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"not installed: {', '.join(missing)} (scripts/packages.txt: slurmctld slurmd slurm-client munge)")
    if os.geteuid() != 0:
        pytest.fail("the local Slurm needs root (slurmd runs jobs as their users); run the tests as root")
    root = pathlib.Path(tempfile.mkdtemp(prefix="attnbench-slurm-"))
    root.chmod(0o755)  # munged, as user munge, must reach its socket
    for sub in ("state", "spool", "log", "run"):
        (root / sub).mkdir()
    cluster = LocalSlurm(root)
    try:
        node = socket.gethostname().split(".")[0]
        write_conf(cluster, node)
        start_munge(cluster)
        cluster.start("slurmctld", ["slurmctld", "-D", "-i", "-f", str(cluster.conf)], root / "log" / "slurmctld.out")
        cluster.start("slurmd", ["slurmd", "-D", "-f", str(cluster.conf)], root / "log" / "slurmd.out")
        deadline = time.time() + START_TIMEOUT_S
        state = ""
        while state != "idle":
            for name, process in cluster.processes:
                if process.poll() is not None:
                    cluster.fail_start(f"{name} exited with {process.returncode}")
            if time.time() > deadline:
                cluster.fail_start(f"node {node} not idle after {START_TIMEOUT_S} s (sinfo says '{state}')")
            time.sleep(0.3)
            r = cluster.run("sinfo", "--noheader", "--format=%t", check=False)
            state = r.stdout.strip()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
