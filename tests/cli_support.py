"""Shared harness of the CLI test scripts: run the attnbench binary, register cases,
report one line per case and the closing `N passed, M failed` line.

Usage in a test script:
    import cli_support as cli
    @cli.case("list names every scorer")
    def _():
        r = cli.run_ok("list")
        ...
    if __name__ == "__main__":
        sys.exit(cli.main(sys.argv))
"""

import os
import re
import shlex
import subprocess
import sys
import time

TIMEOUT_S = 60
BINARY = None  # the attnbench under test, set by main()
CASES = []


class Failure(Exception):
    """A check failed: `command` is what was run (may be None), `message` what was wrong."""

    def __init__(self, command, message):
        super().__init__(message)
        self.command = command
        self.message = message


class Result:
    """What one run of the binary did."""

    def __init__(self, args, returncode, stdout, stderr):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    @property
    def command(self):
        return shlex.join(["attnbench"] + self.args)

    def fail(self, message):
        raise Failure(self.command, message)

    def brief(self):
        """The output, shortened, for failure messages."""
        def cut(text):
            text = text.strip()
            return repr(text if len(text) <= 300 else text[:300] + "...")
        return f"exit {self.returncode}, stdout {cut(self.stdout)}, stderr {cut(self.stderr)}"


def run(*args, env=None):
    """Runs the binary with `args` (and extra environment variables `env`)."""
    args = [str(a) for a in args]
    full_env = dict(os.environ, **env) if env else None
    try:
        done = subprocess.run([BINARY] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                              timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise Failure(shlex.join(["attnbench"] + args), f"did not finish within {TIMEOUT_S} s")
    return Result(args, done.returncode, done.stdout.decode("utf-8", "replace"),
                  done.stderr.decode("utf-8", "replace"))


class Background:
    """The binary running in the background with `args`, to be signalled while it works:
        with Background(["run", ...], timeout=30) as job:
            job.wait_until(lambda: rows(path) >= 1, "a timing row")
            job.proc.send_signal(signal.SIGINT)
            result, waited = job.finish()
    Leaving the block kills the process if it still runs."""

    def __init__(self, args, timeout):
        self.args = [str(a) for a in args]
        self.command = shlex.join(["attnbench"] + self.args)
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.proc = subprocess.Popen([BINARY] + self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        return False

    def wait_until(self, ready, what, poll=0.005):
        """Polls ready() until it holds; Failure when the process exits first or the deadline passes."""
        while not ready():
            if self.proc.poll() is not None:
                raise Failure(self.command, f"exited {self.proc.returncode} before {what}")
            if time.monotonic() > self.deadline:
                raise Failure(self.command, f"no {what} within {self.timeout} s")
            time.sleep(poll)

    def finish(self):
        """Waits for the exit; returns (Result, seconds waited). Failure when it outlives the timeout."""
        started = time.monotonic()
        try:
            stdout, stderr = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise Failure(self.command, f"still running {self.timeout} s after the signal")
        return (Result(self.args, self.proc.returncode, stdout.decode("utf-8", "replace"),
                       stderr.decode("utf-8", "replace")), time.monotonic() - started)


def run_ok(*args, env=None, require_stdout=False):
    """Runs and requires exit 0 (and, with require_stdout, output on stdout)."""
    r = run(*args, env=env)
    if r.returncode != 0:
        r.fail(f"expected exit 0; got {r.brief()}")
    if require_stdout and not r.stdout:
        r.fail("expected output on stdout, got none")
    return r


def one_error_line(r, patterns, code=2):
    """Requires exit `code`, nothing on stdout and exactly one stderr line matching every regex."""
    problems = []
    if r.returncode != code:
        problems.append(f"exit {r.returncode}, expected {code}")
    if r.stdout:
        problems.append(f"stdout not empty: {r.stdout[:200]!r}")
    lines = r.stderr.splitlines()
    if len(lines) != 1 or not r.stderr.endswith("\n"):
        problems.append(f"expected exactly one stderr line, got {len(lines)}: {r.stderr[:400]!r}")
    else:
        missing = [p for p in patterns if not re.search(p, r.stderr)]
        if missing:
            problems.append(f"stderr {r.stderr.strip()[:400]!r} does not match {missing}")
    if problems:
        r.fail("; ".join(problems))


def case(name):
    """Registers the decorated function as a case called `name`."""
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


def main(argv, setup=None, teardown=None):
    """Runs every case against the binary argv[1]; returns the exit code (1 if any failed)."""
    global BINARY
    if len(argv) != 2:
        print(f"usage: {argv[0]} /path/to/build/attnbench", file=sys.stderr)
        return 2
    BINARY = os.path.abspath(argv[1])
    if not os.access(BINARY, os.X_OK):
        print(f"{BINARY}: not an executable", file=sys.stderr)
        return 2
    passed = failed = 0
    start = time.monotonic()
    if setup:
        setup()
    try:
        for name, fn in CASES:
            try:
                fn()
            except Failure as failure:
                failed += 1
                where = f"`{failure.command}`: " if failure.command else ""
                print(f"FAIL {name}: {where}{failure.message}", flush=True)
            except Exception as error:  # a bug in the test itself, or output it could not parse
                failed += 1
                print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
            else:
                passed += 1
                print(f"ok   {name}", flush=True)
    finally:
        if teardown:
            teardown()
    print(f"({len(CASES)} cases in {time.monotonic() - start:.1f} s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
