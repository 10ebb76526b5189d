#!/usr/bin/python3
"""Registers every pytest case of tests/ as one CTest entry, as gtest_discover_tests does for GoogleTest.

Usage (the build runs it after attnbench, randn_dump or a Python file changes):
    ctest_cases.py --python PY --attnbench BIN --randn-dump BIN --work DIR --output FILE.cmake

Runs `pytest --collect-only -q` (the parameters come from `attnbench list --json`, so the binary must be
built) and writes FILE.cmake: per node id an add_test() that runs `PY -m pytest --ctest-case NODEID`
(exactly that case must run and pass) with the binaries, the shared cache and pytest's temporary folder
under DIR in its environment. Any collection problem, an empty collection (pytest's exit 5) included,
is one error line, exit 1 and no FILE.cmake: CTest then runs the single failing entry pytest_NOT_BUILT.
"""

import argparse
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 1500  # a case may wait for, then make, a shared sweep (tests/conftest.py: BuildCache)


def cmake_quote(text):
    """A CMake bracket argument holding `text` verbatim."""
    level = "=" * 1
    while f"]{level}]" in text:
        level += "="
    return f"[{level}[{text}]{level}]"


def collect(python, env):
    """The node ids pytest collects in tests/."""
    done = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", TESTS], cwd=TESTS, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    ids = [line.strip() for line in done.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if done.returncode == 5 or (done.returncode == 0 and not ids):
        sys.exit(f"ctest_cases.py: pytest collected no cases in {TESTS}:\n{done.stdout}")
    if done.returncode != 0:
        sys.exit(f"ctest_cases.py: pytest --collect-only failed (exit {done.returncode}):\n{done.stdout}")
    if len(set(ids)) != len(ids):
        sys.exit(f"ctest_cases.py: pytest collected a node id twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    return ids


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag in ("--python", "--attnbench", "--randn-dump", "--work", "--output"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    if os.path.exists(args.output):
        os.remove(args.output)  # a failed discovery leaves no stale list behind
    temp_root = os.path.join(args.work, "tmp")
    os.makedirs(temp_root, exist_ok=True)
    variables = {"ATTNBENCH_BINARY": os.path.abspath(args.attnbench),
                 "ATTNBENCH_RANDN_DUMP": os.path.abspath(args.randn_dump),
                 "ATTNBENCH_TEST_CACHE": os.path.join(os.path.abspath(args.work), "cache"),
                 "PYTEST_DEBUG_TEMPROOT": os.path.abspath(temp_root),
                 "PYTHONDONTWRITEBYTECODE": "1"}
    ids = collect(args.python, dict(os.environ, **variables))
    environment = cmake_quote(";".join(f"{name}={value}" for name, value in variables.items()))
    lines = [f"# {len(ids)} pytest cases of {TESTS}, written by tests/ctest_cases.py"]
    for node in ids:
        name = cmake_quote(node)
        lines.append(f"add_test({name} {cmake_quote(args.python)} -m pytest -q --ctest-case {name})")
        lines.append(f"set_tests_properties({name} PROPERTIES WORKING_DIRECTORY {cmake_quote(TESTS)} "
                     f"ENVIRONMENT {environment} TIMEOUT {TIMEOUT_S} LABELS python)")
    with open(args.output + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.output + ".tmp", args.output)
    print(f"ctest_cases.py: {len(ids)} pytest cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
