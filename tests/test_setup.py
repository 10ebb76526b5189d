"""The set-up's own failures (scripts/lib/setup.sh): each prints one line `attnbench setup: ...`
saying what to do and exits 2; a configure that fails leaves no CMakeCache.txt behind.

Run: /usr/bin/python3 -m pytest tests/test_setup.py
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
SETUP = REPO / "scripts" / "lib" / "setup.sh"
MISSING = "attnbench-no-such-package"  # a name no Debian archive has


def setup_call(call: str, env: dict[str, str], user: str | None = None, setup: pathlib.Path = SETUP):
    """Runs `call` in a bash that sourced `setup` (as `user` if given), with `env` added."""
    script = f"set -euo pipefail; source {setup}; {call}"
    command = ["bash", "-c", script]
    if user:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"] + command
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def one_setup_line(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, f"exit {r.returncode}, stderr {r.stderr!r}"
    assert len(lines) >= 1 and lines[-1].startswith("attnbench setup: "), r.stderr
    return lines[-1]


@pytest.fixture
def readable_copy() -> pathlib.Path:
    """A folder every user can read (the clone may sit in root's home, which others cannot),
    holding a copy of scripts/lib/setup.sh and a package list naming one package no archive has."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="attnbench-setup-"))
    (folder / "scripts" / "lib").mkdir(parents=True)
    shutil.copy(SETUP, folder / "scripts" / "lib" / "setup.sh")
    (folder / "packages.txt").write_text(f"{MISSING}   # not in Debian\n")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield folder
    shutil.rmtree(folder)


def test_a_non_debian_system_is_told_what_to_install(tmp_path):
    os_release = tmp_path / "os-release"
    os_release.write_text('ID=fedora\nVERSION_ID="40"\n')
    r = setup_call("attnbench_install_packages", {"ATTNBENCH_OS_RELEASE": str(os_release)})
    line = one_setup_line(r)
    assert "this is not Debian (/etc/os-release says 'fedora')" in line and "scripts/packages.txt" in line
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
def test_a_user_without_root_or_sudo_is_told_to_ask_for_the_missing_packages(readable_copy):
    r = setup_call("attnbench_install_packages",
                   {"ATTNBENCH_PACKAGE_LIST": str(readable_copy / "packages.txt"), "HOME": "/"},
                   user="65534", setup=readable_copy / "scripts" / "lib" / "setup.sh")
    line = one_setup_line(r)
    assert f"packages are missing ({MISSING}) and installing them needs root" in line
    assert f"apt-get install --no-install-recommends {MISSING}" in line
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get install needs root")
def test_a_package_apt_cannot_find_is_named(readable_copy):
    r = setup_call("attnbench_install_packages", {"ATTNBENCH_PACKAGE_LIST": str(readable_copy / "packages.txt")})
    line = one_setup_line(r)
    assert line.startswith("attnbench setup: apt-get ")
    assert f"Unable to locate package {MISSING}" in line or "apt-get update failed" in line
    assert r.stderr.count("attnbench setup:") == 1


def test_an_unreadable_package_list_is_named(tmp_path):
    r = setup_call("attnbench_install_packages", {"ATTNBENCH_PACKAGE_LIST": str(tmp_path / "none.txt")})
    assert one_setup_line(r) == f"attnbench setup: cannot read the package list {tmp_path / 'none.txt'}"


def test_a_failed_configure_leaves_no_cache_and_the_next_run_configures_afresh(tmp_path):
    build = tmp_path / "build"
    r = setup_call(f"attnbench_build {build} -DCMAKE_CXX_COMPILER=/nonexistent/c++",
                   {"ATTNBENCH_PACKAGE_LIST": "/dev/null"})
    line = one_setup_line(r)
    assert f"cmake configure of {build} failed" in line
    assert not (build / "CMakeCache.txt").exists()
    # What a second run does first: configure again, this time with a real compiler.
    r = subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (build / "CMakeCache.txt").exists()
    shutil.rmtree(build)
