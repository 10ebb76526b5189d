#!/usr/bin/python3
"""Every list of attnbench (scorers, stages, Problem fields, dtypes, impls, inits, the columns
of each output file, metrics, units), read from `attnbench list --json`: the one place the
Python side gets them. The C++ .def registries are the source (README: "Adding a stage / a
metric").

    lists(binary=None) -> dict         the whole object, `<binary> list --json` run once per process
    scorer_names(binary=None)          ["additive", ...]
    stage_names(binary=None)           ["keys", "score", ...] in report order
    sequence_stages(binary=None)       the stages timed once per sequence (ns_per_step = median / tgt_len)
    field_names(binary=None)           the Problem fields in flag order
    task_names(binary=None)            the tasks of `attnbench train`: ["copy", ...]
    columns(binary, "timing.csv")      key + values of that file (also samples.csv, entropy.csv,
                                       train.csv, train_final.csv, train_attention.csv)
    key_columns(binary, "timing.csv")  its key columns
    value_columns(binary, "timing.csv")
    folder_files(binary, "train")      the data files of a run folder of that kind ("run", "train"),
                                       in the journal's order
    row_key_width(binary, "train", "train.csv")  how many leading cells key a row of that file
                                       (train.csv: the training's key and step)

`binary` None means default_binary(): $ATTNBENCH_BINARY, else <repo>/build/attnbench.
A binary that cannot be run raises ListsError with one line saying why.
"""

import json
import os
import subprocess
from functools import lru_cache
from typing import Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ListsError(RuntimeError):
    """The binary could not give its lists (missing, failed, or not JSON)."""


def default_binary() -> str:
    """$ATTNBENCH_BINARY if set, else <repo>/build/attnbench."""
    return os.environ.get("ATTNBENCH_BINARY") or os.path.join(REPO, "build", "attnbench")


@lru_cache(maxsize=None)
def _lists(binary: str) -> Dict:
    try:
        done = subprocess.run([binary, "list", "--json"], capture_output=True, text=True, check=False)
    except OSError as e:
        raise ListsError(f"cannot run '{binary} list --json': {e.strerror}") from None
    if done.returncode != 0:
        raise ListsError(f"'{binary} list --json' failed (exit {done.returncode}): {done.stderr.strip()}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise ListsError(f"'{binary} list --json' printed no JSON: {e}") from None


def lists(binary: Optional[str] = None) -> Dict:
    """The object `attnbench list --json` prints (cached per binary path). Do not modify it."""
    return _lists(os.path.abspath(binary) if binary else default_binary())


def scorer_names(binary: Optional[str] = None) -> List[str]:
    return [s["name"] for s in lists(binary)["scorers"]]


def stage_names(binary: Optional[str] = None) -> List[str]:
    return [s["name"] for s in lists(binary)["stages"]]


def default_stage_names(binary: Optional[str] = None) -> List[str]:
    """The stages `attnbench run` times without --stages (train_step only when named)."""
    return [s["name"] for s in lists(binary)["stages"] if s["default"]]


def sequence_stages(binary: Optional[str] = None) -> List[str]:
    return [s["name"] for s in lists(binary)["stages"] if s["per"] == "sequence"]


def field_names(binary: Optional[str] = None) -> List[str]:
    return [f["name"] for f in lists(binary)["fields"]]


def task_names(binary: Optional[str] = None) -> List[str]:
    return [t["name"] for t in lists(binary)["tasks"]]


def key_columns(binary: Optional[str], file: str) -> List[str]:
    return list(lists(binary)["files"][file]["key"])


def value_columns(binary: Optional[str], file: str) -> List[str]:
    return list(lists(binary)["files"][file]["values"])


def folder_files(binary: Optional[str], kind: str) -> List[str]:
    return [f["name"] for f in lists(binary)["folders"][kind]]


def row_key_width(binary: Optional[str], kind: str, file: str) -> int:
    return next(f["row_key"] for f in lists(binary)["folders"][kind] if f["name"] == file)


def columns(binary: Optional[str], file: str) -> List[str]:
    """The header of `file` ("timing.csv"): its key columns, then its value columns."""
    return key_columns(binary, file) + value_columns(binary, file)


if __name__ == "__main__":
    import sys
    print(json.dumps(lists(sys.argv[1] if len(sys.argv) > 1 else None), indent=2))
