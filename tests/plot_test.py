"""Plot and report tests: scripts/plot.py and scripts/report.py on a tiny run folder.

One real run (2 src_len x 2 attn_dim x threads 1,2 x every scorer, --repetitions 3 --min-time 0.002),
drawn once by plot.py and, separately, once by report.py, all made once per build and shared by the
cases. They check: every expected figure exists as PNG and SVG; each PNG is valid (signature, chunk
CRCs, IHDR size EXPECTED_PX, decodable) and not blank; each SVG parses as XML; two drawings give the
same bytes; report.html is self-contained (every src/href a data URI or a #fragment), embeds every
figure and has the Findings; headless Chromium loads all its images; a run that lacks a dimension
skips its figures with a note and says "not measured in this run"; a run with two impls gets the
impl comparison.

Needs Debian's /usr/bin/python3 (matplotlib) for the scripts and /usr/bin/chromium (the case fails,
naming `apt-get install chromium`, when it is missing).
"""

import base64
import csv
import os
import re
import shutil
import struct
import xml.etree.ElementTree as ET
import zlib

import pytest

from conftest import ROOT, execute, writable_copy

PLOT = os.path.join(ROOT, "scripts", "plot.py")
REPORT = os.path.join(ROOT, "scripts", "report.py")
PYTHON = "/usr/bin/python3"
CHROMIUM = "/usr/bin/chromium"

EXPECTED_PX = (1200, 600)  # plot.FIGURE_PX: every PNG's width and height, written here as the contract
FIGURES = ["step_vs_src_len", "time_vs_attn_dim", "thread_scaling", "entropy_vs_attn_dim", "drift",
           "score_std_vs_attn_dim", "cost_vs_entropy", "attention_heatmaps"]  # what the tiny run supports
SINGLE_DIM_FIGURES = ["step_vs_src_len", "time_vs_attn_dim", "thread_scaling", "entropy_vs_attn_dim",
                      "score_std_vs_attn_dim"]  # skipped by a run with one src_len, attn_dim and thread count
RUN_ARGS = ["--batch", "2", "--src-len", "8,16", "--attn-dim", "8,32", "--threads", "1,2", "--scorer", "all",
            "--repetitions", "3", "--min-time", "0.002", "--quiet"]
TIMEOUT_S = 180


def script_ok(binary, script, *args, cwd=None):
    """Runs scripts/<script> ARGS --attnbench BINARY under Debian's Python; requires exit 0."""
    return execute([PYTHON, script, *args, "--attnbench", binary], "scripts/" + os.path.basename(script),
                   timeout=TIMEOUT_S, cwd=cwd).ok()


# ----------------------------------------------------------------------------- shared folders

@pytest.fixture
def tiny_run(cached_sweep):
    """The tiny run folder (read-only)."""
    return cached_sweep("plot_test.run", *RUN_ARGS)[0]


@pytest.fixture
def plotted(cache, binary, tiny_run):
    """(folder, stdout, stderr): a copy of the tiny run drawn by plot.py (read-only)."""
    def make(entry):
        run = writable_copy(tiny_run, os.path.join(entry, "run"))
        r = script_ok(binary, PLOT, run)
        return [r.stdout, r.stderr]
    entry, (out, err) = cache.get("plot_test.plotted", make)
    return os.path.join(entry, "run"), out, err


@pytest.fixture
def reported(cache, binary, tiny_run):
    """(folder, stdout, stderr): another copy of the tiny run, given to report.py, which draws the figures
    itself (read-only)."""
    def make(entry):
        run = writable_copy(tiny_run, os.path.join(entry, "run"))
        r = script_ok(binary, REPORT, run)
        return [r.stdout, r.stderr]
    entry, (out, err) = cache.get("plot_test.reported", make)
    return os.path.join(entry, "run"), out, err


# ----------------------------------------------------------------------------- PNG

def png_chunks(data, path):
    """[(type, payload)] of a PNG file, checking its signature and every chunk's CRC."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        pytest.fail(f"{path}: not a PNG (signature {data[:8]!r})", pytrace=False)
    chunks, pos = [], 8
    while pos < len(data):
        if pos + 12 > len(data):
            pytest.fail(f"{path}: truncated chunk at byte {pos}", pytrace=False)
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        payload = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if zlib.crc32(kind + payload) != crc:
            pytest.fail(f"{path}: bad CRC in chunk {kind!r}", pytrace=False)
        chunks.append((kind, payload))
        pos += 12 + length
        if kind == b"IEND":
            break
    if not chunks or chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        pytest.fail(f"{path}: does not start with IHDR and end with IEND", pytrace=False)
    return chunks


def png_pixels(data, path):
    """(width, height, rows of pixel tuples) of an 8-bit non-interlaced PNG, unfiltered."""
    chunks = png_chunks(data, path)
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        pytest.fail(f"{path}: unexpected PNG format (depth {depth}, colour type {color}, interlace {interlace})", pytrace=False)
    raw = zlib.decompress(b"".join(p for k, p in chunks if k == b"IDAT"))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        pytest.fail(f"{path}: image data has {len(raw)} bytes, expected {height * (stride + 1)}", pytrace=False)
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
                pytest.fail(f"{path}: bad filter type {kind} in row {y}", pytrace=False)
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def check_png(data, path):
    """A valid PNG of EXPECTED_PX with more than one colour and at least 1% of pixels not the background."""
    width, height, channels, rows = png_pixels(data, path)
    if (width, height) != EXPECTED_PX:
        pytest.fail(f"{path}: {width}x{height} pixels, expected {EXPECTED_PX[0]}x{EXPECTED_PX[1]}", pytrace=False)
    counts = {}
    for row in rows[::3]:  # every third row is plenty to tell a drawing from a blank
        for x in range(0, len(row), channels):
            pixel = row[x:x + channels]
            counts[pixel] = counts.get(pixel, 0) + 1
    total = sum(counts.values())
    background = max(counts.values())
    if len(counts) < 2 or total - background < 0.01 * total:
        pytest.fail(f"{path}: blank: {len(counts)} distinct colours, {total - background} of {total} sampled "
                    f"pixels differ from the background", pytrace=False)


# ----------------------------------------------------------------------------- cases

def test_tiny_run_writes_every_run_file(tiny_run):
    for name in ("timing.csv", "samples.csv", "entropy.csv", "meta.json"):
        assert os.path.exists(os.path.join(tiny_run, name)), f"the run wrote no {name}"


def test_plot_writes_every_figure_as_png_and_svg(plotted):
    run, out, err = plotted
    figures = os.path.join(run, "figures")
    listed = set(out.split())
    for name in FIGURES:
        for fmt in ("png", "svg"):
            path = os.path.join(figures, f"{name}.{fmt}")
            assert os.path.isfile(path) and os.path.getsize(path) > 0, \
                f"missing or empty figure {path}; plot.py stderr: {err.strip()[:400]!r}"
            assert path in listed, f"plot.py did not print {path} on stdout: {out[:400]!r}"
    assert re.search(r"^skipped impl_comparison: .*single impl", err, re.M), \
        f"no one-line note on stderr for the skipped impl_comparison: {err!r}"


@pytest.mark.parametrize("name", FIGURES)
def test_png_valid_expected_size_not_blank(plotted, name):
    path = os.path.join(plotted[0], "figures", f"{name}.png")
    with open(path, "rb") as f:
        check_png(f.read(), path)


@pytest.mark.parametrize("name", FIGURES)
def test_svg_parses_as_xml(plotted, name):
    path = os.path.join(plotted[0], "figures", f"{name}.svg")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as error:
        pytest.fail(f"{path}: not XML: {error}")
    assert root.tag.endswith("svg"), f"{path}: root element {root.tag}, expected svg"


def test_report_writes_report_html_and_the_findings(reported):
    run, out, _ = reported
    assert os.path.isfile(os.path.join(run, "report.html")), "report.py wrote no report.html"
    for key in ("(a)", "(b)", "(c)", "(d)"):
        assert re.search(rf"^{re.escape(key)} ", out, re.M), f"stdout lacks finding {key}: {out[:600]!r}"
    flat = " ".join(out.split())  # the text is wrapped
    assert "drift is exactly 0" in flat and "fitted exponent" in flat, \
        f"the findings lack the tanh drift or the dot exponent: {out[:800]!r}"


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_figures_are_deterministic(plotted, reported, fmt):
    """plot.py's and report.py's drawings of the same run: the same bytes."""
    for name in FIGURES:
        with open(os.path.join(plotted[0], "figures", f"{name}.{fmt}"), "rb") as a, \
                open(os.path.join(reported[0], "figures", f"{name}.{fmt}"), "rb") as b:
            assert a.read() == b.read(), f"{name}.{fmt} differs between two drawings of the same run"


def read_report(reported):
    path = os.path.join(reported[0], "report.html")
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def test_report_self_contained_every_figure_embedded(reported):
    _, text = read_report(reported)
    for attr, value in re.findall(r"""\b(src|href)\s*=\s*["']?([^"'\s>]*)""", text, re.I):
        assert value.startswith("data:") or value.startswith("#"), \
            f"report.html references an external resource: {attr}={value[:120]!r}"
    for pattern in (r"<link\b", r"@import", r"url\((?!\s*['\"]?data:)", r"https?://"):
        match = re.search(pattern, text, re.I)
        assert not match, f"report.html has an external reference: {text[match.start():match.start() + 120]!r}"
    images = re.findall(r'<img\b[^>]*\bsrc="data:image/png;base64,([^"]+)"[^>]*\balt="([^"]+)"', text)
    names = [alt for _, alt in images]
    assert sorted(names) == sorted(FIGURES), f"embedded figures {names}, expected {FIGURES}"
    for payload, alt in images:  # each the very PNG on disk
        with open(os.path.join(reported[0], "figures", f"{alt}.png"), "rb") as f:
            assert base64.b64decode(payload) == f.read(), f"report.html's image {alt} is not figures/{alt}.png"
    assert 'id="findings"' in text and all(f"<h3>{k} " in text for k in ("(a)", "(b)", "(c)", "(d)")), \
        "report.html lacks the Findings section or one of (a) to (d)"


def test_report_renders_in_chromium_with_every_image(reported, tmp_path):
    path, _ = read_report(reported)
    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing: apt-get install chromium"
    profile = tmp_path / "chromium"
    r = execute([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom",
                 "file://" + os.path.abspath(path)], "chromium", timeout=120)
    body = re.search(r"<body\b[^>]*>", r.stdout)
    assert r.returncode == 0 and body, \
        f"chromium --dump-dom: exit {r.returncode}, no <body> in its output; stderr {r.stderr.strip()[-400:]!r}"
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(0))
    total = re.search(r'data-images-total="(\d+)"', body.group(0))
    assert loaded and total, f"the onload script did not run: {body.group(0)[:300]!r}"
    assert int(total.group(1)) > 0 and loaded.group(1) == total.group(1), \
        f"{loaded.group(1)} of {total.group(1)} images loaded in Chromium"


def derived_run(source, target, keep=lambda row: True, extra=lambda row: []):
    """A copy of the run `source` in `target` with only the CSV rows `keep` accepts, plus the rows `extra`
    makes from each."""
    os.makedirs(target)
    shutil.copyfile(os.path.join(source, "meta.json"), os.path.join(target, "meta.json"))
    for file in ("timing.csv", "samples.csv", "entropy.csv"):
        with open(os.path.join(source, file), newline="") as f:
            rows = list(csv.DictReader(f))
        header = list(rows[0].keys())
        with open(os.path.join(target, file), "w", newline="") as f:
            writer = csv.DictWriter(f, header, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                if keep(row):
                    writer.writerow(row)
                    for more in extra(row):
                        writer.writerow(more)
    return target


def test_single_point_run_skips_its_figures_not_measured(binary, tiny_run, tmp_path):
    """One src_len, attn_dim and thread count: those figures skipped with a note, (b) not measured."""
    run = derived_run(tiny_run, str(tmp_path / "single"), keep=lambda r: r["src_len"] == "8" and r["attn_dim"] == "8"
                      and r.get("threads", "1") == "1")
    r = script_ok(binary, REPORT, run)
    out, err = r.stdout, r.stderr
    for name in SINGLE_DIM_FIGURES:
        assert re.search(rf"^skipped {name}: .+", err, re.M), f"no skip note for {name} on stderr: {err!r}"
        assert not os.path.exists(os.path.join(run, "figures", f"{name}.png")), \
            f"{name}.png drawn for a run without the dimension"
    for name in ("drift", "cost_vs_entropy", "attention_heatmaps"):
        assert os.path.exists(os.path.join(run, "figures", f"{name}.png")), \
            f"{name}.png missing for the single-point run"
    b = re.search(r"^\(b\) .*?(?=^\(c\))", out, re.M | re.S)
    assert b and "not measured in this run" in " ".join(b.group(0).split()).lower(), \
        f"finding (b) does not say 'not measured in this run': {out[:900]!r}"
    with open(os.path.join(run, "report.html"), encoding="utf-8") as f:
        assert "not measured in this run" in f.read().lower(), "report.html does not say 'not measured in this run'"


def test_two_impls_get_the_impl_comparison(binary, lists, tiny_run, tmp_path):
    """A run with a second impl (rows copied with impl 'reference', twice the time) gets impl_comparison."""
    times = [column for column, unit in lists["units"].items() if unit == "ns"]

    def twice(row):
        if "impl" not in row:
            return []
        copy = dict(row, impl="reference")
        for column in times:
            if copy.get(column):
                copy[column] = repr(2 * float(copy[column]))
        return [copy]

    run = derived_run(tiny_run, str(tmp_path / "impls"), extra=twice)
    r = script_ok(binary, PLOT, run, "--format", "png")
    path = os.path.join(run, "figures", "impl_comparison.png")
    assert os.path.exists(path), f"no impl_comparison.png for a run with two impls; stderr {r.stderr!r}"
    with open(path, "rb") as f:
        check_png(f.read(), path)
    assert not os.path.exists(os.path.join(run, "figures", "drift.svg")), "--format png wrote an SVG"


@pytest.mark.parametrize("script", [PLOT, REPORT], ids=["plot", "report"])
def test_missing_run_folder_one_error_line(tmp_path, script):
    missing = str(tmp_path / "no_such_run")
    r = execute([PYTHON, script, missing], "scripts/" + os.path.basename(script))
    r.one_error_line([re.escape(missing)])
