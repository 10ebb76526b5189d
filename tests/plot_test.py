#!/usr/bin/python3
"""Plot and report tests: scripts/plot.py and scripts/report.py on a tiny run folder made here.

Usage: plot_test.py /path/to/build/attnbench

Makes one real run (2 src_len x 2 attn_dim x threads 1,2 x every scorer, --repetitions 3
--min-time 0.002) in a temporary folder, then checks: every expected figure exists as PNG and
SVG; each PNG is valid (signature, chunk CRCs, IHDR size EXPECTED_PX, decodable) and not blank;
each SVG parses as XML; a second drawing gives the same bytes; report.html is self-contained
(every src/href a data URI or a #fragment), embeds every figure and has the Findings; headless
Chromium loads all its images; a run that lacks a dimension skips its figures with a note and
says "not measured in this run"; a run with two impls gets the impl comparison.

Needs Debian's /usr/bin/python3 (matplotlib) for the scripts and /usr/bin/chromium (the test
fails, naming `apt-get install chromium`, when it is missing). The last line is `N passed,
M failed`; the exit code is 1 when any case failed. About 30 s on two cores.
"""

import base64
import csv
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

import cli_support as cli
from cli_support import Failure

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT = os.path.join(SOURCE, "scripts", "plot.py")
REPORT = os.path.join(SOURCE, "scripts", "report.py")
PYTHON = "/usr/bin/python3"
CHROMIUM = "/usr/bin/chromium"

EXPECTED_PX = (1200, 600)  # plot.FIGURE_PX: every PNG's width and height, written here as the contract
FIGURES = ["step_vs_src_len", "time_vs_attn_dim", "thread_scaling", "entropy_vs_attn_dim", "drift",
           "score_std_vs_attn_dim", "cost_vs_entropy", "attention_heatmaps"]  # what the tiny run supports
SINGLE_DIM_FIGURES = ["step_vs_src_len", "time_vs_attn_dim", "thread_scaling", "entropy_vs_attn_dim",
                      "score_std_vs_attn_dim"]  # skipped by a run with one src_len, attn_dim and thread count
RUN_ARGS = ["run", "--batch", "2", "--src-len", "8,16", "--attn-dim", "8,32", "--threads", "1,2", "--scorer", "all",
            "--repetitions", "3", "--min-time", "0.002", "--quiet"]
TIMEOUT_S = 180

TMP = None
RUN = None  # the tiny run folder, made by the first case


def execute(command, timeout=TIMEOUT_S):
    """Runs a command; returns (exit code, stdout, stderr) as text."""
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise Failure(None, f"`{' '.join(command)}` did not finish within {timeout} s")
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def execute_ok(command):
    code, out, err = execute(command)
    if code != 0:
        raise Failure(None, f"`{' '.join(command)}`: exit {code}, stderr {err.strip()[-600:]!r}")
    return out, err


def plot(*args):
    return execute_ok([PYTHON, PLOT] + [str(a) for a in args] + ["--attnbench", cli.BINARY])


def report(*args):
    return execute_ok([PYTHON, REPORT] + [str(a) for a in args] + ["--attnbench", cli.BINARY])


# ----------------------------------------------------------------------------- PNG

def png_chunks(data, path):
    """[(type, payload)] of a PNG file, checking its signature and every chunk's CRC."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Failure(None, f"{path}: not a PNG (signature {data[:8]!r})")
    chunks, pos = [], 8
    while pos < len(data):
        if pos + 12 > len(data):
            raise Failure(None, f"{path}: truncated chunk at byte {pos}")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        payload = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if zlib.crc32(kind + payload) != crc:
            raise Failure(None, f"{path}: bad CRC in chunk {kind!r}")
        chunks.append((kind, payload))
        pos += 12 + length
        if kind == b"IEND":
            break
    if not chunks or chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        raise Failure(None, f"{path}: does not start with IHDR and end with IEND")
    return chunks


def png_pixels(data, path):
    """(width, height, rows of pixel tuples) of an 8-bit non-interlaced PNG, unfiltered."""
    chunks = png_chunks(data, path)
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        raise Failure(None, f"{path}: unexpected PNG format (depth {depth}, colour type {color}, interlace {interlace})")
    raw = zlib.decompress(b"".join(p for k, p in chunks if k == b"IDAT"))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise Failure(None, f"{path}: image data has {len(raw)} bytes, expected {height * (stride + 1)}")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            elif kind != 0:
                raise Failure(None, f"{path}: bad filter type {kind} in row {y}")
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def check_png(data, path):
    """A valid PNG of EXPECTED_PX with more than one colour and at least 1% of pixels not the background."""
    width, height, channels, rows = png_pixels(data, path)
    if (width, height) != EXPECTED_PX:
        raise Failure(None, f"{path}: {width}x{height} pixels, expected {EXPECTED_PX[0]}x{EXPECTED_PX[1]}")
    counts = {}
    for row in rows[::3]:  # every third row is plenty to tell a drawing from a blank
        for x in range(0, len(row), channels):
            pixel = row[x:x + channels]
            counts[pixel] = counts.get(pixel, 0) + 1
    total = sum(counts.values())
    background = max(counts.values())
    if len(counts) < 2 or total - background < 0.01 * total:
        raise Failure(None, f"{path}: blank: {len(counts)} distinct colours, {total - background} of {total} sampled "
                      f"pixels differ from the background")


# ----------------------------------------------------------------------------- cases

def case_run():
    """The tiny run itself (every other case uses it)."""
    global RUN
    folder = os.path.join(TMP, "run")
    execute_ok([cli.BINARY] + RUN_ARGS + ["--out", folder])
    for name in ("timing.csv", "samples.csv", "entropy.csv", "meta.json"):
        if not os.path.exists(os.path.join(folder, name)):
            raise Failure(None, f"the run wrote no {name}")
    RUN = folder


def need_run():
    if RUN is None:
        raise Failure(None, "no run folder (the run case failed)")
    return RUN


def case_plot_writes_every_figure():
    run = need_run()
    out, err = plot(run)
    figures = os.path.join(run, "figures")
    listed = set(out.split())
    for name in FIGURES:
        for fmt in ("png", "svg"):
            path = os.path.join(figures, f"{name}.{fmt}")
            if not os.path.isfile(path) or os.path.getsize(path) == 0:
                raise Failure(None, f"missing or empty figure {path}; plot.py stderr: {err.strip()[:400]!r}")
            if path not in listed:
                raise Failure(None, f"plot.py did not print {path} on stdout: {out[:400]!r}")
    if not re.search(r"^skipped impl_comparison: .*single impl", err, re.M):
        raise Failure(None, f"no one-line note on stderr for the skipped impl_comparison: {err!r}")
    shutil.copytree(figures, os.path.join(TMP, "figures_first"))


def case_pngs_valid():
    figures = os.path.join(need_run(), "figures")
    for name in FIGURES:
        path = os.path.join(figures, f"{name}.png")
        with open(path, "rb") as f:
            check_png(f.read(), path)


def case_svgs_parse():
    figures = os.path.join(need_run(), "figures")
    for name in FIGURES:
        path = os.path.join(figures, f"{name}.svg")
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as error:
            raise Failure(None, f"{path}: not XML: {error}")
        if not root.tag.endswith("svg"):
            raise Failure(None, f"{path}: root element {root.tag}, expected svg")


def case_report():
    run = need_run()
    out, err = report(run)
    path = os.path.join(run, "report.html")
    if not os.path.isfile(path):
        raise Failure(None, "report.py wrote no report.html")
    for key in ("(a)", "(b)", "(c)", "(d)"):
        if not re.search(rf"^{re.escape(key)} ", out, re.M):
            raise Failure(None, f"stdout lacks finding {key}: {out[:600]!r}")
    flat = " ".join(out.split())  # the text is wrapped
    if "drift is exactly 0" not in flat or "fitted exponent" not in flat:
        raise Failure(None, f"the findings lack the tanh drift or the dot exponent: {out[:800]!r}")


def case_figures_deterministic():
    """report.py redrew RUN/figures: the same bytes as plot.py's first drawing."""
    first = os.path.join(TMP, "figures_first")
    if not os.path.isdir(first):
        raise Failure(None, "no first drawing (the plot case failed)")
    for name in FIGURES:
        for fmt in ("png", "svg"):
            with open(os.path.join(first, f"{name}.{fmt}"), "rb") as a, \
                    open(os.path.join(need_run(), "figures", f"{name}.{fmt}"), "rb") as b:
                if a.read() != b.read():
                    raise Failure(None, f"{name}.{fmt} differs between two drawings of the same run")


def read_report():
    path = os.path.join(need_run(), "report.html")
    if not os.path.isfile(path):
        raise Failure(None, "no report.html (the report case failed)")
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def case_report_self_contained():
    _, text = read_report()
    for attr, value in re.findall(r"""\b(src|href)\s*=\s*["']?([^"'\s>]*)""", text, re.I):
        if not (value.startswith("data:") or value.startswith("#")):
            raise Failure(None, f"report.html references an external resource: {attr}={value[:120]!r}")
    for pattern in (r"<link\b", r"@import", r"url\((?!\s*['\"]?data:)", r"https?://"):
        match = re.search(pattern, text, re.I)
        if match:
            raise Failure(None, f"report.html has an external reference: {text[match.start():match.start() + 120]!r}")
    images = re.findall(r'<img\b[^>]*\bsrc="data:image/png;base64,([^"]+)"[^>]*\balt="([^"]+)"', text)
    names = [alt for _, alt in images]
    if sorted(names) != sorted(FIGURES):
        raise Failure(None, f"embedded figures {names}, expected {FIGURES}")
    for payload, alt in images:  # each the very PNG on disk (checked by the PNG case)
        with open(os.path.join(need_run(), "figures", f"{alt}.png"), "rb") as f:
            if base64.b64decode(payload) != f.read():
                raise Failure(None, f"report.html's image {alt} is not figures/{alt}.png")
    if 'id="findings"' not in text or not all(f"<h3>{k} " in text for k in ("(a)", "(b)", "(c)", "(d)")):
        raise Failure(None, "report.html lacks the Findings section or one of (a) to (d)")


def case_report_renders_in_chromium():
    path, _ = read_report()
    if not os.access(CHROMIUM, os.X_OK):
        raise Failure(None, f"{CHROMIUM} is missing: apt-get install chromium")
    profile = tempfile.mkdtemp(prefix="chromium_", dir=TMP)
    code, out, err = execute([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                              "--no-first-run", "--disable-background-networking", "--disable-component-update",
                              "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=5000",
                              "--dump-dom", "file://" + os.path.abspath(path)], timeout=120)
    body = re.search(r"<body\b[^>]*>", out)
    if code != 0 or not body:
        raise Failure(None, f"chromium --dump-dom: exit {code}, no <body> in its output; stderr {err.strip()[-400:]!r}")
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(0))
    total = re.search(r'data-images-total="(\d+)"', body.group(0))
    if not loaded or not total:
        raise Failure(None, f"the onload script did not run: {body.group(0)[:300]!r}")
    if int(total.group(1)) == 0 or loaded.group(1) != total.group(1):
        raise Failure(None, f"{loaded.group(1)} of {total.group(1)} images loaded in Chromium")


def derived_run(name, keep=lambda row: True, extra=lambda row: []):
    """A copy of the tiny run with only the CSV rows `keep` accepts, plus the rows `extra` makes from each."""
    src, dst = need_run(), os.path.join(TMP, name)
    os.makedirs(dst)
    shutil.copy(os.path.join(src, "meta.json"), dst)
    for file in ("timing.csv", "samples.csv", "entropy.csv"):
        with open(os.path.join(src, file), newline="") as f:
            rows = list(csv.DictReader(f))
        header = list(rows[0].keys())
        with open(os.path.join(dst, file), "w", newline="") as f:
            writer = csv.DictWriter(f, header, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                if keep(row):
                    writer.writerow(row)
                    for more in extra(row):
                        writer.writerow(more)
    return dst


def case_single_point_skips():
    """One src_len, attn_dim and thread count: those figures skipped with a note, (b) not measured."""
    run = derived_run("single", keep=lambda r: r["src_len"] == "8" and r["attn_dim"] == "8"
                      and r.get("threads", "1") == "1")
    out, err = execute_ok([PYTHON, REPORT, run, "--attnbench", cli.BINARY])
    for name in SINGLE_DIM_FIGURES:
        if not re.search(rf"^skipped {name}: .+", err, re.M):
            raise Failure(None, f"no skip note for {name} on stderr: {err!r}")
        if os.path.exists(os.path.join(run, "figures", f"{name}.png")):
            raise Failure(None, f"{name}.png drawn for a run without the dimension")
    for name in ("drift", "cost_vs_entropy", "attention_heatmaps"):
        if not os.path.exists(os.path.join(run, "figures", f"{name}.png")):
            raise Failure(None, f"{name}.png missing for the single-point run")
    b = re.search(r"^\(b\) .*?(?=^\(c\))", out, re.M | re.S)
    if not b or "not measured in this run" not in " ".join(b.group(0).split()).lower():
        raise Failure(None, f"finding (b) does not say 'not measured in this run': {out[:900]!r}")
    with open(os.path.join(run, "report.html"), encoding="utf-8") as f:
        if "not measured in this run" not in f.read().lower():
            raise Failure(None, "report.html does not say 'not measured in this run'")


def case_impl_comparison():
    """A run with a second impl (rows copied with impl 'reference', twice the time) gets impl_comparison."""
    def twice(row):
        if "impl" not in row:
            return []
        copy = dict(row, impl="reference")
        for column in ("ns", "median_ns", "mean_ns", "min_ns", "max_ns", "ns_per_step"):
            if copy.get(column):
                copy[column] = repr(2 * float(copy[column]))
        return [copy]

    run = derived_run("impls", extra=twice)
    out, err = execute_ok([PYTHON, PLOT, run, "--format", "png", "--attnbench", cli.BINARY])
    path = os.path.join(run, "figures", "impl_comparison.png")
    if not os.path.exists(path):
        raise Failure(None, f"no impl_comparison.png for a run with two impls; stderr {err!r}")
    with open(path, "rb") as f:
        check_png(f.read(), path)
    if os.path.exists(os.path.join(run, "figures", "drift.svg")):
        raise Failure(None, "--format png wrote an SVG")


def case_bad_folder():
    missing = os.path.join(TMP, "no_such_run")
    for script in (PLOT, REPORT):
        code, out, err = execute([PYTHON, script, missing])
        if code != 2 or len(err.strip().splitlines()) != 1 or missing not in err:
            raise Failure(None, f"{os.path.basename(script)} on a missing folder: exit {code}, stderr {err!r} "
                          f"(expected exit 2 and one line naming the folder)")


CASES = [
    ("run", case_run),
    ("plot writes every figure as PNG and SVG", case_plot_writes_every_figure),
    ("PNGs valid, EXPECTED_PX, not blank", case_pngs_valid),
    ("SVGs parse as XML", case_svgs_parse),
    ("report writes report.html and the findings", case_report),
    ("figures deterministic", case_figures_deterministic),
    ("report self-contained, every figure embedded", case_report_self_contained),
    ("report renders in Chromium with every image", case_report_renders_in_chromium),
    ("single point: figures skipped, not measured", case_single_point_skips),
    ("impl comparison with two impls", case_impl_comparison),
    ("bad run folder: exit 2", case_bad_folder),
]


def make_tmp():
    global TMP
    TMP = tempfile.mkdtemp(prefix="attnbench_plot_test_")


if __name__ == "__main__":
    cli.CASES.extend(CASES)
    sys.exit(cli.main(sys.argv, setup=make_tmp, teardown=lambda: shutil.rmtree(TMP, ignore_errors=True)))
