#!/usr/bin/python3
"""PyTorch eager peer of `attnbench run`: the same grid, the same stages, rows with impl=torch.

    scripts/peer_torch.py --grid-from results/default/RUN --out results/torch/RUN
    scripts/peer_torch.py --scorer additive,dot --src-len 10,50 --threads 1,2 --out DIR
    build/attnbench compare results/default/RUN results/torch/RUN
    scripts/peer_torch.py --serve    # what `attnbench run --peer torch` starts: one point per stdin line

The model is scripts/torch_twin.py's `EncoderDecoder` (PyTorch's own init, seeded with the
point's seed), run under `torch.no_grad()` with `torch.set_num_threads(threads)` and the
scorer's keys computed once per sequence, as the lesson writes it. Each scorer x stage of a
point is timed like `attnbench run` times it with Google Benchmark: the first repetition
grows the iteration count until one repetition lasts --min-time, later ones reuse it; the
scorers x stages x repetitions run in a random (seeded) order so drift hits all alike; a
sample is the real time of one iteration. Rows go to DIR/timing.csv and DIR/samples.csv in
attnbench's schema (results/README.md), appended when the files exist with the same header;
a (point, scorer) whose rows DIR already holds is skipped. `flops` and `bytes` are
attnbench's cost model (src/driver/cost_model.cpp), ported below.

Only f32 is measured (other dtypes get `skipped` rows); --init is accepted for the point's
key but the peer always draws PyTorch's init (with --init torch the parameters are the ones
attnbench uses, value for value; with fast they differ, the shapes do not). --impl is not a
peer field: the peer's rows have impl=torch.

--serve speaks the protocol of `attnbench run --peer torch` (src/driver/peer_torch.hpp): once
torch is imported it writes one JSON line {"peer": "torch", "torch_version": ..., "python_version":
..., "blas": [paths], "warning": text or null}, then answers each request line {"point": {field:
text}, "scorers": [...], "stages": [...], "repetitions": N, "min_time": S, "skip": STATUS or null}
with one line {"timing": [[cells]], "samples": [[cells]]} (rows in the column order of
TIMING_KEY + TIMING_VALUES and TIMING_KEY + SAMPLE_VALUES; with "skip", skipped rows with that
status) or {"error": "one line"}; it ends at end of input. It writes no files: attnbench appends
the rows.
"""
from __future__ import annotations

import argparse
import csv
import gc
import io
import itertools
import json
import math
import os
import platform
import random
import signal
import sys
import time
from dataclasses import dataclass, fields
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_twin as twin  # noqa: E402  (the model, its scorers and attend())

import attnbench_lists  # noqa: E402  (the binary's lists: stages, columns)

# The binary's lists (`attnbench list --json`; the binary is $ATTNBENCH_BINARY or build/attnbench).
TIMING_KEY = attnbench_lists.key_columns(None, "timing.csv")
TIMING_VALUES = attnbench_lists.value_columns(None, "timing.csv")
SAMPLE_VALUES = attnbench_lists.value_columns(None, "samples.csv")
STAGES = attnbench_lists.stage_names()
DEFAULT_STAGES = attnbench_lists.default_stage_names()  # train_step only when named
SEQUENCE_STAGES = attnbench_lists.sequence_stages()  # ns_per_step = median_ns / tgt_len
IMPL = "torch"
MAX_ITERATIONS = 1_000_000_000  # Google Benchmark's kMaxIterations


# ------------------------------------------------------------------------------ grid points

@dataclass
class Point:
    """One grid point of `attnbench run` (Problem fields) and the scorers it runs."""

    scorers: List[str]
    batch: int = 2
    src_len: int = 10
    tgt_len: int = 5
    emb_dim: int = 16
    enc_dim: int = 16
    dec_dim: int = 20
    attn_dim: int = 32
    vocab: int = 100
    threads: int = 1
    dtype: str = "f32"
    seed: int = 0
    init: str = "fast"
    len_min: int = 0

    def probe(self, scorer: str) -> twin.Probe:
        """The twin's description of this point for one scorer (validation, source lengths)."""
        return twin.Probe(scorer=scorer, batch=self.batch, src_len=self.src_len, tgt_len=self.tgt_len,
                          emb_dim=self.emb_dim, enc_dim=self.enc_dim, dec_dim=self.dec_dim,
                          attn_dim=self.attn_dim, vocab=self.vocab, threads=self.threads, seed=self.seed,
                          len_min=self.len_min)

    def key(self, scorer: str, stage: str) -> List[str]:
        """The timing key columns of one row."""
        cells = {"scorer": scorer, "impl": IMPL, "stage": stage}
        return [cells[c] if c in cells else str(getattr(self, c)) for c in TIMING_KEY]

    def flags(self, scorer: str) -> str:
        """The Problem flags of one scorer at this point, in attnbench's repro order."""
        names = [f for f in attnbench_lists.field_names() if f not in ("scorer", "impl")]
        return f"--scorer {scorer} " + " ".join(f"{flag(n)} {getattr(self, n)}" for n in names)

    def describe(self) -> str:
        return " ".join(f"{f.name} {getattr(self, f.name)}" for f in fields(self) if f.name != "scorers")


PROBLEM_FIELDS = [f.name for f in fields(Point) if f.name != "scorers"]
INT_FIELDS = [f.name for f in fields(Point) if f.type in ("int", int)]


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


class InputError(ValueError):
    """Bad input: one line on stderr, exit 2."""


def as_int(field: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{flag(field)}: bad value '{text}': not a whole number") from None


def stage_list(text: str) -> List[str]:
    """The stages of a comma list, in STAGES order (as `attnbench run --stages` takes them)."""
    names = text.split(",")
    for name in names:
        if name not in STAGES:
            raise InputError(f"--stages: unknown stage '{name}'; known: {', '.join(STAGES)}")
    return [stage for stage in STAGES if stage in names]


def scorer_list(text: str) -> List[str]:
    names = list(twin.SCORERS) if text == "all" else text.split(",")
    for name in names:
        if name not in twin.SCORERS:
            raise InputError(f"--scorer: unknown scorer '{name}'; known: {', '.join(twin.SCORERS)}")
    return names


def make_point(values: Dict[str, str], scorers: List[str]) -> Point:
    """A Point from text values (missing fields keep attnbench's defaults); checked like the twin checks."""
    kwargs = {name: (as_int(name, text) if name in INT_FIELDS else text)
              for name, text in values.items() if name in PROBLEM_FIELDS}
    point = Point(scorers=scorers, **kwargs)
    if point.init not in ("fast", "torch"):
        raise InputError(f"--init: bad value '{point.init}': must be fast or torch")
    for scorer in scorers:
        try:
            twin.validate(point.probe(scorer))
        except ValueError as error:
            raise InputError(str(error)) from None
    return point


def grid_from_run(run: str) -> List[Point]:
    """The points of RUN/meta.json's "grid" (each a dict of Problem fields as text, plus "scorers")."""
    path = os.path.join(run, "meta.json") if os.path.isdir(run) else run
    try:
        with open(path, encoding="utf-8") as f:
            grid = json.load(f)["grid"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"--grid-from: cannot read the grid of {path}: {error}") from None
    return [make_point({k: str(v) for k, v in p.items() if k != "scorers"}, scorer_list(",".join(p["scorers"])))
            for p in grid]


def grid_from_flags(args: argparse.Namespace) -> List[Point]:
    """The cartesian product of the comma lists, the first field varying slowest; every point runs every scorer."""
    lists = {name: getattr(args, name).split(",") for name in PROBLEM_FIELDS}
    scorers = scorer_list(args.scorer)
    return [make_point(dict(zip(PROBLEM_FIELDS, values)), scorers)
            for values in itertools.product(*(lists[name] for name in PROBLEM_FIELDS))]


# ---------------------------------------------------- cost model (src/driver/cost_model.cpp)

Cost, linear_cost = twin.Cost, twin.linear_cost


def keys_cost(scorer, B, L, E, D, A) -> Cost:
    """The scorer's ScorerInfo keys_cost (its twin's)."""
    return twin.SCORERS[scorer].keys_cost(B, L, E, D, A)


def score_cost(scorer, B, L, E, D, A) -> Cost:
    """The scorer's ScorerInfo score_cost (its twin's; torch computes it the onednn way)."""
    return twin.SCORERS[scorer].score_cost(B, L, E, D, A)


def attend_cost(B, L, E) -> Cost:
    """cost_model.cpp attend(): masked softmax + context."""
    softmax = Cost(5 * B * L, 4 * 2 * B * L)
    context = Cost(2 * B * L * E, 4 * (B * L + B * L * E + B * E))
    return softmax + context


def gru_step_cost(rows, i, hidden) -> Cost:
    """cost_model.cpp gru_step()."""
    return linear_cost(rows, i, 3 * hidden) + linear_cost(rows, hidden, 3 * hidden) + Cost(10 * rows * hidden, 0)


def cell_cost(B, E, D, M) -> Cost:
    """cost_model.cpp cell()."""
    return gru_step_cost(B, M + E, D)


def output_cost(B, E, D, V) -> Cost:
    """cost_model.cpp output()."""
    return linear_cost(B, D + E, V)


def encoder_cost(B, L, D, M, h) -> Cost:
    """cost_model.cpp encoder()."""
    return 2 * L * gru_step_cost(B, M, h) + linear_cost(B, h, D) + Cost(0, 4 * B * L * M)


def stage_cost(p: Point, scorer: str, stage: str) -> Cost:
    """cost_model.cpp stage_cost(): one call of `stage` for `scorer` at p."""
    B, L, E, D, A = (float(x) for x in (p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim))
    V, M, T, h = (float(x) for x in (p.vocab, p.emb_dim, p.tgt_len, p.enc_dim // 2))
    if stage == "keys":
        return keys_cost(scorer, B, L, E, D, A)
    if stage == "score":
        return score_cost(scorer, B, L, E, D, A)
    if stage == "attend":
        return attend_cost(B, L, E)
    if stage == "step":
        return score_cost(scorer, B, L, E, D, A) + attend_cost(B, L, E)
    if stage == "cell":
        return cell_cost(B, E, D, M)
    if stage == "output":
        return output_cost(B, E, D, V)
    if stage == "encoder":
        return encoder_cost(B, L, D, M, h)
    if stage in ("decode", "train_step"):
        step = score_cost(scorer, B, L, E, D, A) + attend_cost(B, L, E) + cell_cost(B, E, D, M) + output_cost(B, E, D, V)
        decode = keys_cost(scorer, B, L, E, D, A) + T * step
        # train_step: the forward and a backward costed at twice it.
        return decode if stage == "decode" else 3 * (encoder_cost(B, L, D, M, h) + decode)
    raise ValueError(f"unknown stage '{stage}'")


# ------------------------------------------------------------- the stages, in the lesson's style

def keys(scorer: twin.TwinScorer, H: torch.Tensor):
    """The scorer's step-independent projection of the annotations, computed once per sequence."""
    return scorer.keys(H)


def score(scorer: twin.TwinScorer, s: torch.Tensor, K) -> torch.Tensor:
    """The twin scorer's forward(s, H) with its keys K = keys(scorer, H) cached: scores (B, L)."""
    return scorer.score(s, K)


class Rig(NamedTuple):
    """One scorer's model at a point, encoded, keys ready: what the stages run on."""

    model: twin.EncoderDecoder
    src: torch.Tensor
    tgt: torch.Tensor
    lengths: torch.Tensor
    H: torch.Tensor
    s: torch.Tensor
    K: torch.Tensor
    e: torch.Tensor
    context: torch.Tensor
    train_step: Optional[Callable[[], torch.Tensor]] = None


def train_loss(t: twin.Training) -> torch.Tensor:
    """F.cross_entropy over the teacher-forced decode, the keys computed once per sequence."""
    m = t.model
    H, s = m.encode(t.src)
    K = keys(m.scorer, H)
    logits = []
    for step in range(t.tgt.shape[1]):
        _, _, context = twin.attend(score(m.scorer, s, K), H, t.lengths)
        s = m.cell(torch.cat([m.tgt_emb(t.tgt[:, step]), context], 1), s)
        logits.append(m.out(torch.cat([s, context], 1)))
    stacked = torch.stack(logits, 1)
    return torch.nn.functional.cross_entropy(stacked.reshape(-1, stacked.shape[-1]), t.gold.reshape(-1))


def make_train_step(p: Point, scorer: str) -> Callable[[], torch.Tensor]:
    """attnbench's train_step on a model of its own (drawn as `attnbench grad` draws it, gold after tgt):
    forward, loss, backward, clip_grad_norm_(5), Adam(lr 1e-3); one warm-up step done."""
    training = twin.make_training(p.probe(scorer))
    optimizer = torch.optim.Adam(training.model.parameters(), lr=1e-3)

    def train_step() -> torch.Tensor:
        with torch.enable_grad():
            optimizer.zero_grad()
            loss = train_loss(training)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(training.model.parameters(), 5.0)
            optimizer.step()
        return loss

    train_step()
    return train_step


def make_rig(p: Point, scorer: str, train: bool = False) -> Rig:
    """The twin's model with PyTorch's init from the point's seed, encoded, one attention step done and one
    whole decode run (a warm-up, as attnbench's traced decode before timing); with `train`, the
    train_step stage's work too."""
    probe = p.probe(scorer)
    torch.manual_seed(p.seed)
    model = twin.EncoderDecoder(scorer, p.vocab, p.emb_dim, p.enc_dim, p.dec_dim, p.attn_dim, p.src_len)
    src = torch.randint(0, p.vocab, (p.batch, p.src_len))
    tgt = torch.randint(0, p.vocab, (p.batch, p.tgt_len))
    lengths = torch.tensor(probe.source_lengths())
    H, s = model.encode(src)
    K = keys(model.scorer, H)
    e, _, context = twin.attend(score(model.scorer, s, K), H, lengths)
    rig = Rig(model, src, tgt, lengths, H, s, K, e, context, make_train_step(p, scorer) if train else None)
    decode(rig)
    return rig


def decode(r: Rig) -> torch.Tensor:
    """Keys, then every step: score, masked softmax + context, GRU cell, output layer (teacher forcing)."""
    m = r.model
    K, s = keys(m.scorer, r.H), r.s
    for t in range(r.tgt.shape[1]):
        _, _, context = twin.attend(score(m.scorer, s, K), r.H, r.lengths)
        s = m.cell(torch.cat([m.tgt_emb(r.tgt[:, t]), context], 1), s)
        logits = m.out(torch.cat([s, context], 1))
    return logits


# The work of one call of each stage on a ready rig (what attnbench's point_bench.cpp times).
# A stage of the binary missing here gets skipped rows (no_work_status).
STAGE_WORKS: Dict[str, Callable[[Rig], Callable[[], object]]] = {
    "keys": lambda r: lambda: keys(r.model.scorer, r.H),
    "score": lambda r: lambda: score(r.model.scorer, r.s, r.K),
    "attend": lambda r: lambda: twin.attend(r.e, r.H, r.lengths),
    "step": lambda r: lambda: twin.attend(score(r.model.scorer, r.s, r.K), r.H, r.lengths),
    "cell": lambda r: lambda: r.model.cell(torch.cat([r.model.tgt_emb(r.tgt[:, 0]), r.context], 1), r.s),
    "output": lambda r: lambda: r.model.out(torch.cat([r.s, r.context], 1)),
    "encoder": lambda r: lambda: r.model.encode(r.src),
    "decode": lambda r: lambda: decode(r),
    "train_step": lambda r: r.train_step,  # built by make_rig(train=True)
}


def stage_work(r: Rig, stage: str) -> Callable[[], object]:
    """The work of one call of `stage` on a ready rig."""
    return STAGE_WORKS[stage](r)


def no_work_status(stage: str) -> str:
    return f"skipped: the torch peer has no work for stage {stage}"


# ----------------------------------------------------------------------------------- timing

def run_ns(work: Callable[[], object], iterations: int) -> int:
    """Real time of `iterations` calls, in ns (the garbage collector off, as timeit does)."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(iterations):
            work()
        return time.perf_counter_ns() - start
    finally:
        if gc_was_on:
            gc.enable()


def grow_iterations(work: Callable[[], object], min_time_ns: float):
    """Google Benchmark's rule (benchmark_runner.cc): from 1 iteration, grow until a run lasts min_time.

    Returns (iterations, ns of the last run), the last run being the first repetition's sample.
    """
    iterations = 1
    while True:
        ns = run_ns(work, iterations)
        if ns >= min_time_ns or iterations >= MAX_ITERATIONS:
            return iterations, ns
        multiplier = 10.0 if ns <= 0.1 * min_time_ns else min_time_ns * 1.4 / max(ns, 1)
        iterations = min(MAX_ITERATIONS, max(round(multiplier * iterations), iterations + 1))


class Sample(NamedTuple):
    repetition: int
    iterations: int
    ns: float  # real time of one iteration


def measure_point(p: Point, scorers: List[str], repetitions: int, min_time: float,
                  stages: List[str] = DEFAULT_STAGES) -> Dict[tuple, List[Sample]]:
    """Every scorer x stage x repetition of one point, in a seeded random order: {(scorer, stage): samples}."""
    torch.set_num_threads(p.threads)
    with torch.no_grad():
        rigs = {scorer: make_rig(p, scorer, "train_step" in stages) for scorer in scorers}
        jobs = [(scorer, stage) for scorer in scorers for stage in stages if stage in STAGE_WORKS]
        order = [(job, n) for job in jobs for n in range(repetitions)]
        random.Random(p.seed).shuffle(order)
        works = {job: stage_work(rigs[job[0]], job[1]) for job in jobs}
        iterations: Dict[tuple, int] = {}
        done: Dict[tuple, int] = {job: 0 for job in jobs}
        samples: Dict[tuple, List[Sample]] = {job: [] for job in jobs}
        for job, _ in order:
            if job not in iterations:
                iterations[job], ns = grow_iterations(works[job], min_time * 1e9)
            else:
                ns = run_ns(works[job], iterations[job])
            samples[job].append(Sample(done[job], iterations[job], ns / iterations[job]))
            done[job] += 1
    return samples


# ------------------------------------------------------------------------------------- rows

def number(x: float) -> str:
    """C's %.9g, as attnbench writes numbers."""
    return "%.9g" % x


def csv_line(cells: List[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


def summarize(ns: List[float]):
    """median, mean, stddev (n - 1), cv, min, max, as src/driver/statistics.cpp summarize()."""
    xs = sorted(ns)
    n = len(xs)
    median = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    mean = sum(xs) / n
    stddev = math.sqrt(sum((x - mean) * (x - mean) for x in xs) / (n - 1)) if n > 1 else 0.0
    cv = stddev / mean if mean != 0 else 0.0
    return median, mean, stddev, cv, xs[0], xs[-1]


def repro(p: Point, scorer: str, repetitions: int, min_time: float, stages: List[str] = DEFAULT_STAGES) -> str:
    only = "" if list(stages) == DEFAULT_STAGES else f" --stages {','.join(stages)}"
    return (f"scripts/peer_torch.py {p.flags(scorer)}{only} --repetitions {repetitions} "
            f"--min-time {number(min_time)}")


def timing_cells(p: Point, scorer: str, stage: str, samples: List[Sample], command: str) -> List[str]:
    median, mean, stddev, cv, lo, hi = summarize([s.ns for s in samples])
    cost = stage_cost(p, scorer, stage)
    per_step = median / p.tgt_len if stage in SEQUENCE_STAGES else median
    cells = {"repetitions": str(len(samples)), "iterations": str(sum(s.iterations for s in samples)),
             "median_ns": number(median), "mean_ns": number(mean), "stddev_ns": number(stddev), "cv": number(cv),
             "min_ns": number(lo), "max_ns": number(hi), "ns_per_step": number(per_step),
             "flops": number(cost.flops), "bytes": number(cost.bytes), "gflops": number(cost.flops / median),
             "gbps": number(cost.bytes / median), "status": "ok", "repro": command}
    return p.key(scorer, stage) + [cells.get(column, "") for column in TIMING_VALUES]


def skipped_cells(p: Point, scorer: str, status: str, command: str, stages: List[str] = DEFAULT_STAGES) -> List[List[str]]:
    cells = {"status": status, "repro": command}
    values = [cells.get(column, "") for column in TIMING_VALUES]
    return [p.key(scorer, stage) + values for stage in stages]


def point_cells(p: Point, scorers: List[str], repetitions: int, min_time: float, stages: List[str] = DEFAULT_STAGES,
                skip: Optional[str] = None) -> Tuple[List[List[str]], List[List[str]]]:
    """The timing and samples rows (as cells) of `scorers` at p: measured, or `skipped` rows with status `skip`
    (or because the peer measures f32 only)."""
    if skip is None and p.dtype != "f32":
        skip = f"skipped: the torch peer measures f32 only, not {p.dtype}"
    timing: List[List[str]] = []
    samples: List[List[str]] = []
    if skip is not None:
        for scorer in scorers:
            timing += skipped_cells(p, scorer, skip, repro(p, scorer, repetitions, min_time, stages), stages)
        return timing, samples
    measured = measure_point(p, scorers, repetitions, min_time, stages)
    for scorer in scorers:
        command = repro(p, scorer, repetitions, min_time, stages)
        for stage in stages:
            if stage not in STAGE_WORKS:
                timing += skipped_cells(p, scorer, no_work_status(stage), command, [stage])
                continue
            rows = sorted(measured[(scorer, stage)])
            timing.append(timing_cells(p, scorer, stage, rows, command))
            samples += [p.key(scorer, stage) + [str(s.repetition), str(s.iterations), number(s.ns)] for s in rows]
    return timing, samples


class RunFolder:
    """DIR/timing.csv and DIR/samples.csv: created with attnbench's headers, or appended to."""

    def __init__(self, path: str):
        self.timing = os.path.join(path, "timing.csv")
        self.samples = os.path.join(path, "samples.csv")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as error:
            raise InputError(f"--out: cannot create {path}: {error.strerror}") from None
        if not os.access(path, os.W_OK):
            raise InputError(f"--out: {path} is not writable")
        self.present = set()  # (key without stage) of the ok or skipped timing rows already there
        for file, header in ((self.timing, TIMING_KEY + TIMING_VALUES), (self.samples, TIMING_KEY + SAMPLE_VALUES)):
            if not os.path.exists(file) or os.path.getsize(file) == 0:
                with open(file, "w", encoding="utf-8") as f:
                    f.write(csv_line(header))
                continue
            with open(file, newline="", encoding="utf-8") as f:
                rows = list(csv.reader(f))
            if rows[0] != header:
                raise InputError(f"--out: {file} has another header than attnbench's; use a new folder")
            if file == self.timing:
                self.present = {tuple(row[:len(TIMING_KEY) - 1]) for row in rows[1:]}

    def holds(self, p: Point, scorer: str) -> bool:
        return tuple(p.key(scorer, "")[:-1]) in self.present

    def append(self, timing: str, samples: str) -> None:
        """Appends both, fsynced, with SIGINT and SIGTERM held back until both are written."""
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            for file, text in ((self.timing, timing), (self.samples, samples)):
                with open(file, "a", encoding="utf-8") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


# ------------------------------------------------------------------------------ command line

def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="peer_torch.py", description=__doc__.splitlines()[0])
    parser.add_argument("--grid-from", metavar="RUN", help="run the grid of RUN/meta.json (no Problem flags then)")
    parser.add_argument("--scorer", default=None, help="comma list of scorers, or all (default all)")
    defaults = Point(scorers=[])
    for name in PROBLEM_FIELDS:
        parser.add_argument(flag(name), dest=name, default=None, metavar="LIST",
                            help=f"comma list (default {getattr(defaults, name)})")
    parser.add_argument("--out", metavar="DIR", help="folder for timing.csv and samples.csv (default results/torch/<UTC time>)")
    parser.add_argument("--repetitions", type=int, default=5, metavar="N", help="repetitions per scorer x stage (default 5)")
    parser.add_argument("--min-time", type=float, default=0.05, metavar="S",
                        help="seconds each repetition runs at least (default 0.05)")
    parser.add_argument("--stages", default=",".join(DEFAULT_STAGES), metavar="LIST",
                        help="comma list of stages to time (default: %(default)s; train_step only when named)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--serve", action="store_true",
                        help="answer attnbench run --peer torch: one point per stdin line (JSON), rows on stdout")
    return parser


def points_of(args: argparse.Namespace) -> List[Point]:
    given = [flag(n) for n in ["scorer"] + PROBLEM_FIELDS if getattr(args, n) is not None]
    if args.grid_from:
        if given:
            raise InputError(f"--grid-from: cannot be combined with Problem flags ({', '.join(given)})")
        return grid_from_run(args.grid_from)
    defaults = Point(scorers=[])
    for name in PROBLEM_FIELDS:
        if getattr(args, name) is None:
            setattr(args, name, str(getattr(defaults, name)))
    if args.scorer is None:
        args.scorer = "all"
    return grid_from_flags(args)


def run(args: argparse.Namespace) -> int:
    if args.repetitions < 1:
        raise InputError(f"--repetitions: must be 1 or more, got {args.repetitions}")
    if not args.min_time > 0:
        raise InputError(f"--min-time: must be more than 0, got {args.min_time}")
    stages = stage_list(args.stages)
    points = points_of(args)
    out = args.out or os.path.join("results", "torch", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    folder = RunFolder(out)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    say(f"peer_torch: torch {torch.__version__}, {len(points)} points, {args.repetitions} repetitions, "
        f"--min-time {number(args.min_time)} s, into {out}")
    for n, p in enumerate(points, start=1):
        todo = [s for s in p.scorers if not folder.holds(p, s)]
        start = time.monotonic()
        timing, samples = point_cells(p, todo, args.repetitions, args.min_time, stages) if todo else ([], [])
        folder.append("".join(map(csv_line, timing)), "".join(map(csv_line, samples)))
        folder.present.update(tuple(p.key(s, "")[:-1]) for s in todo)
        skipped = [s for s in p.scorers if s not in todo]
        note = f" (already in {out}: {','.join(skipped)})" if skipped else ""
        say(f"[{n}/{len(points)}] {p.describe()} scorers {','.join(todo) or '-'}: "
            f"{time.monotonic() - start:.1f} s{note}")
    say(f"results: {out}")
    return 0


def blas_libraries() -> List[str]:
    """The BLAS libraries mapped into this process (torch's matmuls run on them), by real path."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if line.count("/")}
    except OSError:
        return []
    return sorted(path for path in paths if any(name in os.path.basename(path).lower() for name in ("blas", "mkl")))


def blas_warning(libraries: List[str]) -> Optional[str]:
    """A warning when torch's BLAS is Debian's unoptimized reference one (.../blas/libblas.so.3)."""
    reference = [path for path in libraries if os.path.basename(os.path.dirname(path)) == "blas"]
    if not reference:
        return None
    return (f"the torch peer's matmuls run on the reference BLAS {reference[0]} (unoptimized); for a fair "
            f"comparison install an optimized one, e.g. apt-get install libopenblas0-openmp")


def answer(request: dict) -> dict:
    """--serve: the rows of one request (see the module's doc), or {"error": ...}."""
    try:
        scorers = scorer_list(",".join(request["scorers"]))
        p = make_point({k: str(v) for k, v in request["point"].items()}, scorers)
        stages = stage_list(",".join(request["stages"]))
        repetitions, min_time = int(request["repetitions"]), float(request["min_time"])
        if repetitions < 1 or not min_time > 0:
            raise InputError(f"repetitions {repetitions} and min_time {min_time} must be positive")
        timing, samples = point_cells(p, scorers, repetitions, min_time, stages, request.get("skip"))
        return {"timing": timing, "samples": samples}
    except Exception as error:  # noqa: BLE001  (any failure is the answer: attnbench reports it)
        text = " ".join(str(error).split()) or type(error).__name__
        return {"error": f"{type(error).__name__}: {text}"}
    finally:
        gc.collect()  # the point's models go now, before attnbench measures its next point


def serve() -> int:
    """--serve: the hello line, then one answer line per request line on stdin, until end of input.

    The answers go to the original stdout; anything else that writes to fd 1 (a library's print) is sent to
    stderr, so that stdout carries the protocol alone.
    """
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def send(message: dict) -> None:
        answers.write(json.dumps(message, separators=(",", ":")) + "\n")
        answers.flush()

    libraries = blas_libraries()
    send({"peer": IMPL, "torch_version": torch.__version__, "python_version": platform.python_version(),
          "blas": libraries, "warning": blas_warning(libraries)})
    for line in sys.stdin:
        if line.strip():
            try:
                request = json.loads(line)
            except ValueError as error:
                send({"error": f"request is not JSON: {error}"})
                continue
            send(answer(request))
    return 0


def main(argv: Optional[list] = None) -> int:
    """Runs the command line; returns 0, 2 on bad input (one line on stderr), 130 on SIGINT."""
    args = make_parser().parse_args(argv)
    if args.serve:
        return serve()
    try:
        return run(args)
    except InputError as error:
        print(f"peer_torch: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("peer_torch: interrupted; finished points are in the files", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
