#!/usr/bin/python3
"""A private one-node Slurm on this machine, for tests/slurm and the README's cluster example.

    scripts/local_slurm.py -- COMMAND [ARGS...]   # start Slurm, run COMMAND with SLURM_CONF set, stop Slurm

munged (as user munge, with a fresh 1024-byte key of mode 400), slurmctld and slurmd run
from a temporary folder with their own socket, state, spool, logs, PID files and free
ports; nothing system-wide (/etc/slurm, /etc/munge, /run) is read or written. The clients
(sbatch, squeue, ...) find the cluster through SLURM_CONF. The node is this host with all
its CPUs and its memory less 1 GiB (SelectType=select/cons_tres, CR_Core), in one default
partition `test`. Stopping cancels every job, then ends exactly the processes started here.
Needs root and the Debian packages slurmctld, slurmd, slurm-client and munge. Standard
library only. When Slurm cannot start: one line on stderr (with the daemons' log tails), exit 2;
else the exit code of COMMAND.
"""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
START_TIMEOUT_S = 30


class LocalSlurmError(RuntimeError):
    """Slurm could not start; the message says why, with the end of the daemons' logs."""


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
    """Start with start(), always end with stop(); `env` is os.environ plus SLURM_CONF."""

    def __init__(self):
        self.root = None
        self.conf = None
        self.node = socket.gethostname().split(".")[0]
        self.processes = []  # (name, Popen), in start order
        self.env = dict(os.environ)

    def start(self):
        missing = [tool for tool in DAEMONS + CLIENTS if shutil.which(tool) is None]
        if missing:
            raise LocalSlurmError(f"not installed: {', '.join(missing)} "
                                  "(scripts/packages.txt: slurmctld slurmd slurm-client munge)")
        if os.geteuid() != 0:
            raise LocalSlurmError("a local Slurm needs root (slurmd starts the jobs); run as root")
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="attnbench-slurm-"))
        self.root.chmod(0o755)  # munged, as user munge, must reach its socket
        for sub in ("state", "spool", "log", "run"):
            (self.root / sub).mkdir()
        self.conf = self.root / "slurm.conf"
        self.env["SLURM_CONF"] = str(self.conf)
        self._write_conf()
        self._start_munge()
        self._start("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._start("slurmd", ["slurmd", "-D", "-f", str(self.conf)])
        deadline = time.time() + START_TIMEOUT_S
        state = ""
        while state != "idle":
            for name, process in self.processes:
                if process.poll() is not None:
                    self._fail(f"{name} exited with {process.returncode}")
            if time.time() > deadline:
                self._fail(f"node {self.node} not idle after {START_TIMEOUT_S} s (sinfo says '{state}')")
            time.sleep(0.3)
            state = self.run("sinfo", "--noheader", "--format=%t").stdout.strip()

    def run(self, *args):
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=60)

    def stop(self):
        """Cancels every job, waits for them to end, then stops the daemons started here."""
        if any(name == "slurmctld" and p.poll() is None for name, p in self.processes):
            self.run("scancel", "--full", f"--user={os.getuid()}")
            deadline = time.time() + 20
            while time.time() < deadline:
                r = self.run("squeue", "--noheader")
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
        self.processes = []
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)

    def _start(self, name, args, **popen):
        with open(self.root / "log" / f"{name}.out", "w") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                       start_new_session=True, **popen)
        self.processes.append((name, process))
        return process

    def _fail(self, why):
        logs = "\n".join(f"--- {p.name}:\n{log_tail(p)}" for p in sorted((self.root / "log").glob("*")))
        raise LocalSlurmError(f"the local Slurm did not start: {why}\n{logs}")

    def _write_conf(self):
        memory_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20) - 1024
        root = self.root
        self.conf.write_text(f"""\
ClusterName=attnbenchlocal
SlurmctldHost={self.node}(127.0.0.1)
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
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={memory_mib} State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")

    def _start_munge(self):
        munge = self.root / "munge"
        private = munge / "private"
        private.mkdir(parents=True)
        key = private / "munge.key"
        key.write_bytes(os.urandom(1024))
        for path, mode in ((munge, 0o755), (private, 0o700), (key, 0o400)):
            shutil.chown(path, "munge", "munge")
            path.chmod(mode)
        process = self._start("munged", ["munged", "--foreground", f"--key-file={key}",
                                         f"--socket={munge}/munge.socket", f"--pid-file={private}/munged.pid",
                                         f"--seed-file={private}/munged.seed", f"--log-file={private}/munged.log"],
                              user="munge", group="munge", extra_groups=[])
        deadline = time.time() + START_TIMEOUT_S
        while not (munge / "munge.socket").exists():
            if process.poll() is not None or time.time() > deadline:
                self._fail("munged did not create its socket")
            time.sleep(0.1)


def main(argv):
    if len(argv) < 2 or argv[0] != "--":
        print("usage: scripts/local_slurm.py -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    cluster = LocalSlurm()
    try:
        cluster.start()
        print(f"local_slurm: node {cluster.node} idle; SLURM_CONF={cluster.conf}", file=sys.stderr)
        return subprocess.run(argv[1:], env=cluster.env).returncode
    except LocalSlurmError as e:
        print(f"local_slurm: {str(e).splitlines()[0]}", file=sys.stderr)
        print("\n".join(str(e).splitlines()[1:]), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
