"""A run folder (of `attnbench run` or `attnbench train`: the journal's head names its files)
read as attnbench reads it (results/README.md, "Crash safety"): only the bytes the journal commits, every committed record checked against the files' sha256, every row
checked against its header. Damage raises RunFolderError("file:line: reason"), never a
traceback or a silently wrong value. A folder without a journal (an older attnbench) is read
whole."""
import csv
import hashlib
import io
import json
import os

JOURNAL = "journal"
HEAD = "attnbench-journal 1 "
# What the resume command of each kind of folder (meta.json's "kind"; none: a run) does from a
# damaged record on: the words attnbench's own readers end a damage message with
# (src/driver/folder_kind.cpp; tests/folder_faults.py checks that both say the same).
REDONE = {"run": "with `attnbench run --resume` the points from there are measured again",
          "train": "with `attnbench train --resume` the trainings from there are trained again"}


class RunFolderError(ValueError):
    """A damaged or unreadable run folder; str() is "file:line: reason"."""


def _journal_records(text, files):
    """[(ends,)] of the whole, checked lines of journal text (a torn tail stops it)."""
    lines = text.split("\n")
    records = []
    for seq, line in enumerate(lines[1:-1]):
        words = line.split(" ")
        body = line[: line.rfind(" ") + 1]
        if (len(words) != 2 + 2 * len(files) or words[0] != str(seq)
                or hashlib.sha256(body.encode()).hexdigest() != words[-1]
                or not all(w.isdigit() for w in words[1:1 + len(files)])):
            break
        records.append(([int(w) for w in words[1:1 + len(files)]], words[1 + len(files):1 + 2 * len(files)]))
    return records


def _kind(folder):
    """meta.json's "kind" when it says "train", else "run" (as attnbench reads it; a meta.json
    that cannot be read is a run's here: the damage message is about another file)."""
    try:
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return "run"
    return "train" if isinstance(meta, dict) and meta.get("kind") == "train" else "run"


def committed(folder):
    """{file name: its committed bytes} of the folder's data files; raises RunFolderError."""
    journal_path = os.path.join(folder, JOURNAL)
    if not os.path.exists(journal_path):
        return None
    try:
        with open(journal_path, "rb") as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RunFolderError(f"{journal_path}:1: cannot read ({error})") from None
    head = text.split("\n", 1)[0]
    if not head.startswith(HEAD) or "\n" not in text:
        raise RunFolderError(f"{journal_path}:1: not an attnbench journal")
    files = head[len(HEAD):].split(" ")
    data = {}
    for name in files:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                data[name] = f.read()
        except OSError:
            data[name] = b""
    records = _journal_records(text, files)
    if not records:
        raise RunFolderError(f"{journal_path}:2: the run never started (its journal commits nothing)")
    ends = [0] * len(files)
    for seq, (new_ends, hashes) in enumerate(records):
        for i, name in enumerate(files):
            blob = data[name]
            segment = blob[ends[i]:new_ends[i]]
            if new_ends[i] < ends[i] or new_ends[i] > len(blob) or hashlib.sha256(segment).hexdigest() != hashes[i]:
                line = blob[:min(ends[i], len(blob))].count(b"\n") + 1
                raise RunFolderError(f"{os.path.join(folder, name)}:{line}: damaged: the bytes differ from the "
                                     f"journal's record {seq}; {REDONE[_kind(folder)]}")
        ends = new_ends
    return {name: data[name][:end] for name, end in zip(files, ends)}


def read_rows(folder, name, parse=None):
    """The committed rows of NAME as dicts (parse(column, text) applied to each cell, its
    ValueError becoming "file:line: column 'c': reason"); [] when the file is missing."""
    return read_table(folder, name, parse)[1]


def read_table(folder, name, parse=None):
    """(header, rows) of NAME as read_rows reads it; ([], []) when the file is missing."""
    path = os.path.join(folder, name)
    texts = committed(folder)
    if texts is None:
        if not os.path.exists(path):
            return [], []
        with open(path, "rb") as f:
            blob = f.read()
    else:
        blob = texts.get(name, b"")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as error:
        line = blob[:error.start].count(b"\n") + 1
        raise RunFolderError(f"{path}:{line}: not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        header = next(reader, None)
        if header is None:
            raise RunFolderError(f"{path}:1: empty file, expected a header line")
        for cells in reader:
            if len(cells) != len(header):
                raise RunFolderError(f"{path}:{reader.line_num}: expected {len(header)} cells as in the header, "
                                     f"got {len(cells)}")
            row = {}
            for column, cell in zip(header, cells):
                try:
                    row[column] = parse(column, cell) if parse else cell
                except ValueError as error:
                    raise RunFolderError(f"{path}:{reader.line_num}: column '{column}': {error}") from None
            rows.append(row)
    except csv.Error as error:
        raise RunFolderError(f"{path}:{reader.line_num}: malformed CSV ({error})") from None
    return header, rows


def read_meta(folder):
    """RUN/meta.json as a dict; RunFolderError "meta.json:LINE: reason" when it does not parse."""
    path = os.path.join(folder, "meta.json")
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except OSError as error:
        raise RunFolderError(f"{path}:1: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise RunFolderError(f"{path}:1: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise RunFolderError(f"{path}:{error.lineno}: does not parse ({error.msg})") from None
    if not isinstance(meta, dict):
        raise RunFolderError(f"{path}:1: not a run's meta.json (not an object)")
    return meta


def append_point(folder, texts):
    """Appends one point's rows ({file name: text}; files not named gain nothing) to a run
    folder that has a journal and commits them with one journal line, as attnbench does:
    uncommitted tails are cut first, and the folder's flock is held meanwhile. Raises
    RunFolderError when another writer holds the folder or a file is damaged."""
    import fcntl
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderError(f"{folder}: another attnbench is writing this folder; wait for it to end") from None
        committed(folder)  # damage raises here
        journal_path = os.path.join(folder, JOURNAL)
        with open(journal_path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        files = lines[0][len(HEAD):].split(" ")
        records = _journal_records(text, files)
        ends = records[-1][0]
        os.truncate(journal_path, sum(len(line) + 1 for line in lines[:1 + len(records)]))
        new_ends, hashes = [], []
        for name, end in zip(files, ends):
            path = os.path.join(folder, name)
            os.truncate(path, end)
            data = texts.get(name, "").encode("utf-8")
            with open(path, "ab") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            new_ends.append(end + len(data))
            hashes.append(hashlib.sha256(data).hexdigest())
        body = " ".join([str(len(records))] + [str(e) for e in new_ends] + hashes) + " "
        with open(journal_path, "a", encoding="utf-8") as f:
            f.write(body + hashlib.sha256(body.encode()).hexdigest() + "\n")
            f.flush()
            os.fsync(f.fileno())
    finally:
        os.close(fd)
