"""Fixtures of the Python tests: the attnbench binary under test, its lists, a cache of expensive results
shared by the pytest processes of one build, and the helpers that run the binary.

The binary is `--attnbench PATH` or $ATTNBENCH_BINARY (CTest sets the variable); the test-only
randn_dump is `--randn-dump PATH` or $ATTNBENCH_RANDN_DUMP. Results computed once per build (sweeps,
figures, the PyTorch twin's outputs) live under `--cache-dir` or $ATTNBENCH_TEST_CACHE, else in the
session's temporary folder. `--ctest-case` (what CTest passes) requires that exactly one case was
selected and that it passed: a node id that no longer exists, or a skip, fails loudly.

    /usr/bin/python3 -m pytest tests --attnbench=build/attnbench -k probe

(Give the path after "=": pytest reads a separate argument as a test path before conftest.py adds the option.)
"""

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import attnbench_lists  # noqa: E402  (needs the path above)

TIMEOUT_S = 60  # one run of a command
SWEEP_TIMEOUT_S = 600  # one shared sweep (several points, every scorer)


def pytest_addoption(parser):
    group = parser.getgroup("attnbench")
    group.addoption("--attnbench", default=os.environ.get("ATTNBENCH_BINARY"),
                    help="the attnbench binary under test (default $ATTNBENCH_BINARY)")
    group.addoption("--randn-dump", default=os.environ.get("ATTNBENCH_RANDN_DUMP"),
                    help="the test-only randn_dump binary (default $ATTNBENCH_RANDN_DUMP)")
    group.addoption("--cache-dir", default=os.environ.get("ATTNBENCH_TEST_CACHE"),
                    help="where results shared by the cases of one build are kept (default $ATTNBENCH_TEST_CACHE, "
                         "else the session's temporary folder)")
    group.addoption("--ctest-case", action="store_true",
                    help="run by CTest: exactly one case must be selected, and pass")


def executable(config, option, variable, what):
    """The absolute path given by `option` (default $variable); a usage error when it is not an executable."""
    path = config.getoption(option)
    if not path:
        raise pytest.UsageError(f"{what}: give {option}=PATH or set ${variable}")
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        raise pytest.UsageError(f"{option} {path}: not an executable")
    return path


def binary_path(config):
    """The attnbench under test; collection needs it too (the parameters come from its lists)."""
    return executable(config, "--attnbench", "ATTNBENCH_BINARY", "the attnbench binary")


def pytest_configure(config):
    if config.getoption("--attnbench"):
        os.environ["ATTNBENCH_BINARY"] = os.path.abspath(config.getoption("--attnbench"))  # for the scripts run


def pytest_sessionfinish(session, exitstatus):
    """Under --ctest-case one CTest entry is one case: anything but exactly one passed case fails it."""
    if not session.config.getoption("--ctest-case") or exitstatus not in (0, pytest.ExitCode.NO_TESTS_COLLECTED):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter else 0
    others = {kind: len(reports) for kind, reports in (reporter.stats.items() if reporter else [])
              if kind not in ("passed", "", "warnings", "deselected") and reports}
    if passed != 1 or others:
        print(f"\n--ctest-case: expected exactly one passed case, got {passed} passed and {others or 'nothing else'}"
              f" (was the case renamed? rebuild to discover the cases again)", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---------------------------------------------------------------------------- running the binary

class Result:
    """What one run of a command did; `command` is how a user would type it."""

    def __init__(self, command, returncode, stdout, stderr):
        self.command = command
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def to_json(self):
        return {"command": self.command, "returncode": self.returncode, "stdout": self.stdout, "stderr": self.stderr}

    @classmethod
    def from_json(cls, data):
        return cls(data["command"], data["returncode"], data["stdout"], data["stderr"])

    def brief(self):
        """The command and its output, shortened, for failure messages."""
        def cut(text):
            text = text.strip()
            return repr(text if len(text) <= 300 else text[:300] + "...")
        return f"`{self.command}`: exit {self.returncode}, stdout {cut(self.stdout)}, stderr {cut(self.stderr)}"

    def fail(self, message):
        """Fails the case, naming this command."""
        pytest.fail(f"`{self.command}`: {message}", pytrace=False)

    def ok(self, require_stdout=False):
        """Requires exit 0 (and, with require_stdout, output on stdout); returns self."""
        assert self.returncode == 0, f"expected exit 0; got {self.brief()}"
        assert self.stdout or not require_stdout, f"`{self.command}`: expected output on stdout, got none"
        return self

    def one_error_line(self, patterns, code=2):
        """Requires exit `code`, nothing on stdout and exactly one stderr line matching every regex."""
        problems = []
        if self.returncode != code:
            problems.append(f"exit {self.returncode}, expected {code}")
        if self.stdout:
            problems.append(f"stdout not empty: {self.stdout[:200]!r}")
        lines = self.stderr.splitlines()
        if len(lines) != 1 or not self.stderr.endswith("\n"):
            problems.append(f"expected exactly one stderr line, got {len(lines)}: {self.stderr[:400]!r}")
        else:
            missing = [p for p in patterns if not re.search(p, self.stderr)]
            if missing:
                problems.append(f"stderr {self.stderr.strip()[:400]!r} does not match {missing}")
        assert not problems, f"`{self.command}`: " + "; ".join(problems)
        return self


def execute(argv, shown, env=None, timeout=TIMEOUT_S, cwd=None, stdin=None):
    """Runs argv (with extra environment variables `env`); `shown` is its name in messages."""
    argv = [str(a) for a in argv]
    command = shlex.join([shown] + argv[1:])
    try:
        done = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=dict(os.environ, **env) if env else None, timeout=timeout, check=False, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{command}` did not finish within {timeout} s")
    return Result(command, done.returncode, done.stdout.decode("utf-8", "replace"),
                  done.stderr.decode("utf-8", "replace"))


class Background:
    """A command running in the background, to be signalled while it works:
        with attnbench.background(["run", ...], timeout=30) as job:
            job.wait_until(lambda: rows(path) >= 1, "a timing row")
            job.proc.send_signal(signal.SIGINT)
            result, waited = job.finish()
    Leaving the block kills the process if it still runs."""

    def __init__(self, argv, shown, timeout):
        self.argv = [str(a) for a in argv]
        self.command = shlex.join([shown] + self.argv[1:])
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        return False

    def wait_until(self, ready, what, poll=0.005):
        """Polls ready() until it holds; fails when the process exits first or the deadline passes."""
        while not ready():
            if self.proc.poll() is not None:
                pytest.fail(f"`{self.command}` exited {self.proc.returncode} before {what}")
            if time.monotonic() > self.deadline:
                pytest.fail(f"`{self.command}`: no {what} within {self.timeout} s")
            time.sleep(poll)

    def finish(self):
        """Waits for the exit; returns (Result, seconds waited). Fails when it outlives the timeout."""
        started = time.monotonic()
        try:
            stdout, stderr = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`{self.command}` still running {self.timeout} s after the signal")
        return (Result(self.command, self.proc.returncode, stdout.decode("utf-8", "replace"),
                       stderr.decode("utf-8", "replace")), time.monotonic() - started)


class Attnbench:
    """The binary under test, run as a user runs it."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, env=None, timeout=TIMEOUT_S):
        return execute([self.path, *args], "attnbench", env=env, timeout=timeout)

    def run_ok(self, *args, env=None, require_stdout=False):
        return self.run(*args, env=env).ok(require_stdout)

    def background(self, args, timeout):
        return Background([self.path, *args], "attnbench", timeout)


@pytest.fixture(scope="session")
def binary(request):
    return binary_path(request.config)


@pytest.fixture(scope="session")
def attnbench(binary):
    return Attnbench(binary)


@pytest.fixture(scope="session")
def lists(binary):
    """`attnbench list --json` of the binary under test."""
    return attnbench_lists.lists(binary)


@pytest.fixture(scope="session")
def randn_dump(request):
    return executable(request.config, "--randn-dump", "ATTNBENCH_RANDN_DUMP", "the randn_dump binary")


# ---------------------------------------------------------------------------- results shared by one build

def writable_copy(source, target):
    """Copies a (cached, read-only) folder to `target`, every file and folder writable; returns target."""
    shutil.copytree(source, target, copy_function=shutil.copyfile)
    for folder, _, _ in os.walk(target):
        os.chmod(folder, 0o755)
    return target


def _set_read_only(path, read_only):
    """Files 0444 and folders 0555 (or 0644 and 0755) under path."""
    for folder, _, files in os.walk(path, topdown=not read_only):
        for name in files:
            target = os.path.join(folder, name)
            if not os.path.islink(target):
                os.chmod(target, 0o444 if read_only else 0o644)
        os.chmod(folder, 0o555 if read_only else 0o755)


def _git_commit():
    """The source tree's git_commit as `attnbench run` records it in meta.json (src/driver/run_meta.cpp):
    HEAD, "+dirty" when tracked files changed; "unknown" outside git. --resume refuses a folder whose
    git_commit differs, so a cached run made before a commit must not outlive it."""
    def git(*args):
        r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    head = git("rev-parse", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def _stamp(binary):
    """Identifies what the cached results depend on: the binary file, the source tree's git_commit and every
    script and test source."""
    digest = hashlib.sha256()
    info = os.stat(binary)
    digest.update(f"{binary} {info.st_ino} {info.st_size} {info.st_mtime_ns} {_git_commit()}".encode())
    for folder in (SCRIPTS, TESTS):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()


class BuildCache:
    """Results computed once per build and shared by every pytest process CTest starts (in parallel):
    entry `name` is the folder ROOT/name, made by make(folder) -> a JSON value under an exclusive flock of
    ROOT/name.lock, and kept while the binary, the git commit and the Python sources are unchanged. A
    failed make is recorded too: for FAILURE_KEPT_S the cases that need the entry fail at once with its
    message (one ctest run does not pay for it once per case); after that the next case makes it again.
    The folder is read-only: copy it (writable_copy) before changing anything in it."""

    FAILURE_KEPT_S = 900

    def __init__(self, root, binary):
        self.root = root
        self.stamp = _stamp(binary)
        os.makedirs(root, exist_ok=True)

    def get(self, name, make):
        """(folder, value) of entry `name`, made by make(folder) if no valid entry exists."""
        folder = os.path.join(self.root, name)
        done = os.path.join(self.root, name + ".done")
        with open(os.path.join(self.root, name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(done, encoding="utf-8") as f:
                    entry = json.load(f)
                if entry["stamp"] == self.stamp and "failure" not in entry:
                    return folder, entry["value"]
                if entry["stamp"] == self.stamp and time.time() - entry["when"] < self.FAILURE_KEPT_S:
                    pytest.fail(f"the shared result {name!r} failed in an earlier case: {entry['failure']}",
                                pytrace=False)
            except (OSError, ValueError, KeyError):
                pass
            if os.path.exists(done):
                os.remove(done)
            if os.path.exists(folder):
                _set_read_only(folder, False)
                shutil.rmtree(folder)
            os.makedirs(folder)
            try:
                entry = {"stamp": self.stamp, "value": make(folder)}
            except BaseException as error:
                _set_read_only(folder, False)
                shutil.rmtree(folder, ignore_errors=True)
                if isinstance(error, KeyboardInterrupt):
                    raise
                entry = {"stamp": self.stamp, "when": time.time(), "failure": f"{type(error).__name__}: {error}"}
                self._write(done, entry)
                raise
            _set_read_only(folder, True)
            self._write(done, entry)
            return folder, entry["value"]

    @staticmethod
    def _write(path, entry):
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(entry, f)
        os.replace(path + ".tmp", path)


@pytest.fixture(scope="session")
def cache(request, binary, tmp_path_factory):
    root = request.config.getoption("--cache-dir") or str(tmp_path_factory.mktemp("cache"))
    return BuildCache(os.path.abspath(root), binary)


# ---------------------------------------------------------------------------- parameters from the binary's lists

LISTED = {"scorer": "scorers", "impl": "impls", "init": "inits", "dtype": "dtypes"}


def listed(config, kind):
    """The names of one of the binary's lists (`scorers`, `impls`, `inits`, `dtypes`, `stages`)."""
    items = attnbench_lists.lists(binary_path(config))[kind]
    return [item["name"] if isinstance(item, dict) else item for item in items]


def pytest_generate_tests(metafunc):
    """A test taking `scorer`, `impl`, `init` or `dtype` runs once for each of the binary's."""
    for argument, kind in LISTED.items():
        if argument in metafunc.fixturenames:
            metafunc.parametrize(argument, listed(metafunc.config, kind))


@pytest.fixture(scope="session")
def key_names(binary):
    """timing.csv's key columns."""
    return attnbench_lists.key_columns(binary, "timing.csv")


@pytest.fixture(scope="session")
def stages(binary):
    """The stages a run times when --stages is not given (train_step only when named)."""
    return attnbench_lists.default_stage_names(binary)


@pytest.fixture(scope="session")
def cached_sweep(cache, attnbench):
    """cached_sweep(name, *args) -> (folder, Result): `attnbench run ARGS --out FOLDER`, exit 0 required, made
    once per build and shared (read-only: copy it before changing it). `name` names the entry: one per ARGS."""
    def get(name, *args):
        def make(entry):
            r = attnbench.run("run", *args, "--out", os.path.join(entry, "run"), timeout=SWEEP_TIMEOUT_S)
            return r.ok().to_json()
        entry, value = cache.get(name, make)
        return os.path.join(entry, "run"), Result.from_json(value)
    return get


@pytest.fixture(scope="session")
def copy_folder():
    """copy_folder(source, target): a writable copy of a cached folder."""
    return writable_copy
