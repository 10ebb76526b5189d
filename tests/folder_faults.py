"""Fault checks shared by both kinds of run folder (src/driver/folder_kind.hpp): a `run` folder
(tests/test_faults.py, tests/test_readers.py) and a `train` folder (tests/test_train_faults.py).
Each takes the command that writes the folder ("run" or "train"); the kind's data files and
reference keys stay with its own tests. Not collected by pytest: the test files import it."""
import fcntl
import hashlib
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

TIMEOUT_S = 300  # one command (plot and report start Python and matplotlib)

# Per folder kind, its resume command and what that does again from a file the journal no longer
# matches: a reader's message (attnbench's and scripts/lib/run_folder.py's alike) ends
# "; with `RESUME` REDONE", the resume's own warning "; REDONE".
RESUME = {"run": "attnbench run --resume", "train": "attnbench train --resume"}
REDONE = {"run": "the points from there are measured again", "train": "the trainings from there are trained again"}


# ---------------------------------------------------------------------------- the journal

def journal_records(text, names):
    """[(ends per data file, end of the line in the journal)] of the whole lines of a journal over
    the data files `names`; the head must name exactly them."""
    lines = text.split("\n")
    assert lines[0] == "attnbench-journal 1 " + " ".join(names), lines[0]
    records, at = [], len(lines[0]) + 1
    for seq, line in enumerate(lines[1:-1]):
        words = line.split(" ")
        body = line[: line.rfind(" ") + 1]
        if len(words) != 2 + 2 * len(names) or words[0] != str(seq) or \
                hashlib.sha256(body.encode()).hexdigest() != words[-1]:
            break
        at += len(line) + 1
        records.append(([int(w) for w in words[1:1 + len(names)]], at))
    return records


def check_journal(folder, names):
    """The journal of `folder` commits something, ends in a whole line, and every data file
    (`names`, in its order) holds exactly the bytes it commits."""
    journal = open(os.path.join(folder, "journal"), encoding="utf-8").read()
    records = journal_records(journal, names)
    assert records, "the journal commits nothing"
    ends, journal_end = records[-1]
    assert journal_end == len(journal.encode()), "the journal ends in a torn line"
    for name, end in zip(names, ends):
        size = os.path.getsize(os.path.join(folder, name))
        assert size == end, f"{name}: {size} bytes, the journal commits {end}"


# ---------------------------------------------------------------------------- commands

def resume(attnbench, command, folder):
    """`attnbench COMMAND --resume FOLDER --quiet --force`."""
    return attnbench.run(command, "--resume", folder, "--quiet", "--force", timeout=TIMEOUT_S)


def warns_of_damage(result, kind, path):
    """A resume of a `kind` folder whose file `path` lost committed bytes exits 0 and warns, in
    one stderr line, that it does REDONE[kind] from the damaged line of that file on. The
    machine's timing warnings (a build that is not Release, an unfixed CPU governor: both say
    "timings") are not about the folder and are left aside."""
    assert result.returncode == 0, (result.returncode, result.stderr)
    warnings = [line for line in result.stderr.splitlines()
                if line.startswith("attnbench: warning: ") and "timings" not in line]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(f"attnbench: warning: {path}:") and " damaged: " in warnings[0], warnings[0]
    assert warnings[0].endswith(f"; {REDONE[kind]}"), warnings[0]


def one_line(result, code, *words):
    """Exit `code` and exactly one stderr line (warnings and "dropped" notes aside) holding every word."""
    assert result.returncode == code, (result.returncode, result.stderr)
    errors = [line for line in result.stderr.splitlines() if "warning" not in line and "dropped" not in line]
    assert len(errors) == 1, result.stderr
    for word in words:
        assert word in errors[0], errors[0]
    assert "Traceback" not in result.stderr and "json.exception" not in result.stderr


def hold(folder):
    """An exclusive flock on `folder`, as another writer holds it; close the result to release it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def started_writer(attnbench, command, args, folder):
    """`attnbench COMMAND ARGS --out FOLDER` (stderr a text pipe) started in the background and
    returned once its meta.json exists, or after 60 s: a writer holding FOLDER for a second one."""
    process = subprocess.Popen([attnbench.path, command, *args, "--out", folder], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(folder, "meta.json")) and time.time() < deadline:
        time.sleep(0.005)
    return process


def sigkills_then_resume(attnbench, command, args, folder, kills, seed, longest_s, check):
    """Starts `attnbench COMMAND ARGS --out FOLDER` and SIGKILLs it after a random wait of up to
    `longest_s` (random.Random(seed)); once meta.json exists, `COMMAND --resume FOLDER` takes
    its place, killed alike, until `kills` kills have landed. A process that finishes has
    check(FOLDER) run and the folder removed, so that the next kills land on a new start; at the
    end a last resume must exit 0 and pass check(FOLDER). No process may print a traceback."""
    rng = random.Random(seed)
    landed = 0
    started = False
    while landed < kills:
        argv = [command, "--resume", folder, "--quiet", "--force"] if started else [command, *args, "--out", folder]
        process = subprocess.Popen([attnbench.path, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, longest_s))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            landed += 1
        _, err = process.communicate()
        assert b"Traceback" not in err
        started = started or os.path.exists(os.path.join(folder, "meta.json"))
        if not started and os.path.exists(folder):
            shutil.rmtree(folder)  # killed before meta.json: the start never happened
        elif process.returncode == 0:
            check(folder)
            shutil.rmtree(folder)  # finished: start again, the kills must land somewhere
            started = False
    if started:
        resume(attnbench, command, folder).ok()
        check(folder)


# ---------------------------------------------------------------------------- damaged folders and their readers

def truncate(name, count):
    """Damage: data file `name` loses its last `count` bytes."""
    def damage(folder):
        path = os.path.join(folder, name)
        os.truncate(path, os.path.getsize(path) - count)
    return damage


def cut_middle(name, count):
    """Damage: data file `name` loses `count` bytes from its middle."""
    def damage(folder):
        path = os.path.join(folder, name)
        data = open(path, "rb").read()
        middle = len(data) // 2
        open(path, "wb").write(data[:middle] + data[middle + count:])
    return damage


def legacy(edit):
    """Damage: a folder without a journal (an older attnbench) whose `edit` breaks a file."""
    def damage(folder):
        os.remove(os.path.join(folder, "journal"))
        edit(folder)
    return damage


def bad_number(name):
    """An edit: the last cell of data file `name`'s first row becomes "3x"."""
    def edit(folder):
        path = os.path.join(folder, name)
        lines = open(path, encoding="utf-8").read().split("\n")
        cells = lines[1].split(",")
        cells[-1] = "3x"
        lines[1] = ",".join(cells)
        open(path, "w", encoding="utf-8").write("\n".join(lines))
    return edit


def damaged(source, tmp_path, damage):
    """A copy of folder `source` under tmp_path with damage(copy) done to it; returns its path."""
    folder = str(tmp_path / "damaged")
    shutil.copytree(source, folder)
    damage(folder)
    return folder


# The commands that read a folder, each as argv of (the damaged folder, an undamaged one of the
# same grid, a folder to write); `compare` reads `run` folders only.
READERS = {
    "compare": lambda folder, good, out: ["compare", good, folder],
    "merge": lambda folder, good, out: ["merge", folder, "--out", out],
    "plot": lambda folder, good, out: ["plot", folder],
    "report": lambda folder, good, out: ["report", folder],
}


def reader_cases(damages, readers):
    """(case, reader) of every damage (the keys of `damages`) with every reader but merge meeting
    "legacy bad number": merge copies cells as text, a bad number is not its to judge."""
    return [pytest.param(case, reader, id=f"{case.replace(' ', '_')}-{reader}") for case in sorted(damages)
            for reader in sorted(readers) if (case, reader) != ("legacy bad number", "merge")]


def reader_gives_file_line(attnbench, kind, good, tmp_path, damage, reader, where, reason):
    """Reader `reader` (READERS) of a copy of the `kind` folder `good` with `damage` done exits 2
    with one stderr line holding `where` and `reason`, and writes no --out folder. A "damaged"
    reason (a file the journal no longer matches) must end with what RESUME[kind] does."""
    folder = damaged(good, tmp_path, damage)
    out = str(tmp_path / "out")
    result = attnbench.run(*READERS[reader](folder, good, out), timeout=TIMEOUT_S)
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert where in lines[0] and reason in lines[0], lines[0]
    if reason == "damaged":
        assert lines[0].endswith(f"; with `{RESUME[kind]}` {REDONE[kind]}"), lines[0]
    assert not os.path.exists(out)
