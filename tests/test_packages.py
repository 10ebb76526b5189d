"""Every file the build and the Python scripts use comes from a package that the set-up
installs: scripts/packages.txt, the packages those depend on (recursively, Depends and
Pre-Depends), or the compiler's own package and its dependencies. A file that comes from
anywhere else was installed by hand on this machine, and a new machine would lack it.

Run: ATTNBENCH_BINARY=BUILD/attnbench /usr/bin/python3 -m pytest tests/test_packages.py
(CTest sets it; the binary's folder is the build folder, whose CMakeCache.txt is what configure found.)
"""

from __future__ import annotations

import ast
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGE_LIST = REPO / "scripts" / "packages.txt"
PYTHON_DIRS = ("scripts", "tests")


def listed_packages(path: pathlib.Path = PACKAGE_LIST) -> list[str]:
    """The package names of a packages.txt: words before '#', one or more a line."""
    return [word for line in path.read_text().splitlines() for word in line.split("#")[0].split()]


def installed_relations() -> tuple[dict[str, list[list[str]]], dict[str, list[str]]]:
    """From dpkg's database (no apt lists needed): for each installed package its
    Pre-Depends and Depends as lists of alternatives, and for each virtual name its providers."""
    fmt = "${db:Status-Abbrev}\t${Package}\t${Pre-Depends}\t${Depends}\t${Provides}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f=" + fmt], capture_output=True, text=True, check=True).stdout
    depends, providers = {}, {}
    for line in out.splitlines():
        status, name, pre, dep, provides = line.split("\t")
        if not status.startswith("ii"):
            continue
        relations = [r for r in (pre + "," + dep).split(",") if r.strip()]
        depends[name] = [[re.split(r"[\s(:]", alt.strip())[0] for alt in rel.split("|")] for rel in relations]
        for virtual in provides.split(","):
            if virtual.strip():
                providers.setdefault(re.split(r"[\s(:]", virtual.strip())[0], []).append(name)
    return depends, providers


def closure(roots: list[str]) -> set[str]:
    """The installed packages that `roots` need, roots included: every installed alternative of
    every Depends/Pre-Depends, virtual names resolved to their installed providers."""
    depends, providers = installed_relations()
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        for real in [name] if name in depends else providers.get(name, []):
            if real in seen:
                continue
            seen.add(real)
            todo.extend(alt for rel in depends[real] for alt in rel)
    return seen


def owning_packages(paths: list[str]) -> dict[str, str | None]:
    """For each path, the package dpkg says installed it (or the file it links to, or its
    merged-/usr twin); None where no package did. One dpkg-query for all paths."""
    candidates = {path: list(dict.fromkeys(c for real in (path, os.path.realpath(path))
                                           for c in (real, re.sub(r"^/usr/", "/", real))))
                  for path in paths}
    every = sorted({c for cs in candidates.values() for c in cs})
    out = subprocess.run(["dpkg-query", "-S", *every], capture_output=True, text=True).stdout if every else ""
    owner = {}
    for line in out.splitlines():
        packages, _, name = line.partition(": ")
        if not packages.startswith("diversion by"):
            owner[name] = packages.split(",")[0].split(":")[0].strip()
    return {path: next((owner[c] for c in cs if c in owner), None) for path, cs in candidates.items()}


def cmake_found_files(cache: pathlib.Path) -> list[tuple[str, str]]:
    """(entry, file) for each FILEPATH/PATH entry of a CMakeCache.txt under /usr that is a file,
    and for each package-config folder (an entry X_DIR) the XConfig.cmake or x-config.cmake in it."""
    found = []
    for line in cache.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.+-]+):(FILEPATH|PATH)=(/usr/.*)$", line)
        if not m:
            continue
        entry, value = m.group(1), m.group(3)
        if os.path.isfile(value):
            found.append((entry, value))
        elif entry.endswith("_DIR") and os.path.isdir(value):
            name = entry[: -len("_DIR")]
            found.extend((entry, os.path.join(value, f)) for f in (f"{name}Config.cmake", f"{name.lower()}-config.cmake")
                         if os.path.isfile(os.path.join(value, f)))
    return found


def imported_modules(source: pathlib.Path) -> set[str]:
    """Every module name an `import` or `from ... import` of `source` names (dotted, absolute)."""
    tree = ast.parse(source.read_text(), str(source))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names - {"__future__"}


def python_sources() -> list[pathlib.Path]:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "--", *PYTHON_DIRS], capture_output=True, text=True)
        files = [REPO / f for f in out.stdout.split()] if out.returncode == 0 else []
    except FileNotFoundError:  # no git on the machine
        files = []
    if not files:  # not a git checkout: every .py file of those folders
        files = [p for d in PYTHON_DIRS for p in (REPO / d).rglob("*.py")]
    return [f for f in files if f.suffix == ".py" and f.exists()]


def module_file(name: str) -> str | None:
    """The file `name` is loaded from under this interpreter with the project's folders on the
    path; None for a module built into the interpreter. Raises ModuleNotFoundError."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(name)
    return spec.origin if spec.origin and os.path.isfile(spec.origin) else None


@pytest.fixture(scope="module")
def cmake_cache() -> pathlib.Path:
    binary = os.environ.get("ATTNBENCH_BINARY")
    assert binary, "set ATTNBENCH_BINARY to the built attnbench of a configured build folder"
    return pathlib.Path(binary).resolve().parent / "CMakeCache.txt"


@pytest.fixture(scope="module")
def allowed_packages(cmake_cache) -> set[str]:
    roots = listed_packages()
    cache = cmake_cache
    compiler = re.search(r"^CMAKE_CXX_COMPILER:FILEPATH=(.*)$", cache.read_text(), re.M)
    toolchain = owning_packages([compiler.group(1)])[compiler.group(1)] if compiler else None
    return closure(roots + ([toolchain] if toolchain else []))


def test_package_list_names_only_known_packages():
    depends, providers = installed_relations()
    missing = [p for p in listed_packages() if p not in depends and p not in providers]
    assert not missing, f"scripts/packages.txt: not installed (run scripts/test, which installs them): {missing}"


def test_every_file_cmake_found_comes_from_a_listed_package(cmake_cache, allowed_packages):
    cache = cmake_cache
    found = cmake_found_files(cache)
    assert found, f"{cache}: no FILEPATH/PATH entry under /usr; is this a configured build folder?"
    owner = owning_packages([path for _, path in found])
    bad = [f"{entry}: {path} comes from {owner[path] or 'no package'}"
           for entry, path in found if owner[path] not in allowed_packages]
    assert not bad, "not installed by scripts/packages.txt (add its package there):\n" + "\n".join(bad)


def test_every_module_the_python_files_import_comes_from_a_listed_package(allowed_packages):
    sys.path[:0] = [str(REPO / d) for d in PYTHON_DIRS]
    bad, used = [], []  # used: (where, module, file) of every import from outside the project
    for source in python_sources():
        for name in sorted(imported_modules(source)):
            where = source.relative_to(REPO)
            try:
                path = module_file(name)
            except ModuleNotFoundError:
                bad.append(f"{where}: import {name}: not found by {sys.executable}")
                continue
            if path is not None and not pathlib.Path(path).resolve().is_relative_to(REPO):
                used.append((where, name, path))  # else built into the interpreter, or the project's own
    owner = owning_packages(sorted({path for _, _, path in used}))
    bad += [f"{where}: import {name}: {path} comes from {owner[path] or 'no package'}"
            for where, name, path in used if owner[path] not in allowed_packages]
    assert not bad, "not installed by scripts/packages.txt (add its package there):\n" + "\n".join(bad)
