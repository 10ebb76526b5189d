#!/usr/bin/python3
"""PyTorch twin of `attnbench probe --init torch`: the same model, the same numbers.

Run it as the binary is run and it prints the same CSV (values agree to float32
rounding), e.g.

    /usr/bin/python3 scripts/torch_twin.py probe --init torch --scorer dot --steps 3

or import it (tests/torch_crosscheck.py does) and call `run_probe(Probe(...))`.
Only `--init torch` exists here: the binary's `fast` stream is not PyTorch's.

Creation order. Every probe starts with `torch.manual_seed(seed)`; then:

One step (`--steps 0`):
    H = torch.randn(B, L, E)
    s = torch.randn(B, D)
    scorer = make_scorer(name, E, D, A, L)   # its parameters, in the order listed below

Whole decode (`--steps T`), `EncoderDecoder.__init__` creates, in this order:
    src_emb = nn.Embedding(vocab, emb_dim)
    tgt_emb = nn.Embedding(vocab, emb_dim)
    encoder = nn.GRU(emb_dim, enc_dim // 2, batch_first=True, bidirectional=True)
    bridge  = nn.Linear(enc_dim // 2, dec_dim)
    scorer  = make_scorer(name, enc_dim, dec_dim, attn_dim, src_len)
    cell    = nn.GRUCell(emb_dim + enc_dim, dec_dim)
    out     = nn.Linear(dec_dim + enc_dim, vocab)
then src = torch.randint(0, vocab, (B, L)) and tgt = torch.randint(0, vocab, (B, T)).

Scorer parameters (without bias unless said), as `attnbench list` shows them:
    additive, additive_linear: W = Linear(D, A), U = Linear(E, A), v = Linear(A, 1)
    dot, scaled_dot:           W = Linear(D, A), U = Linear(E, A)
    general:                   W = Linear(E, D)
    location:                  W_a = Linear(D, L)
    mlp:                       U = Linear(E, A), W = Linear(D, A) with bias, v = Linear(A, 1)

Gradients (`grad`, what `attnbench grad` prints): the decode's draws with T = --tgt-len,
then gold = torch.randint(0, vocab, (B, T)); the loss is
F.cross_entropy(logits (B*T, V), gold (B*T)) over the teacher-forced decode; K = --adam-steps
optimizer steps (forward, backward, clip_grad_norm_(--clip), Adam(--lr)), then one more
forward and backward, whose loss and (unclipped) gradients are printed as `name,i,value`.

Source lengths: `--lengths` if given, else lengths[b] = L - (L - len_min) * b // (B - 1)
(len_min 0 means L; every length is L when B == 1). Scores at j >= lengths[b] are -inf.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, fields
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class Cost(NamedTuple):
    """Work of one call of a stage, as src/driver/cost_model.cpp counts it."""

    flops: float
    bytes: float

    def __add__(self, other):
        return Cost(self.flops + other.flops, self.bytes + other.bytes)

    def __rmul__(self, k):
        return Cost(k * self.flops, k * self.bytes)


def linear_cost(rows, i, o) -> Cost:
    """core/stage_cost.hpp linear_cost(): dst (rows, o) = src (rows, i) x W^T; weights, input and output once."""
    return Cost(2 * rows * i * o, 4 * (i * o + rows * i + rows * o))


class TwinScorer(nn.Module):
    """A scorer: keys(H) once per sequence, score(s, K) per step; forward(s, H) is both.
    keys_cost and score_cost are its ScorerInfo's (torch runs the onednn way), in (B, L, E, D, A)."""

    def forward(self, s: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
        """Scores (B, L) of state s (B, D) against annotations H (B, L, E)."""
        return self.score(s, self.keys(H))

    def keys(self, H: torch.Tensor) -> torch.Tensor:
        return self.U(H)

    @staticmethod
    def keys_cost(B, L, E, D, A) -> Cost:
        """variants/projected_keys.hpp projected_keys_cost()."""
        return linear_cost(B * L, E, A)


class AdditiveScorer(TwinScorer):
    """Bahdanau: e_tj = v . tanh(W s + U h_j); without tanh it is the lesson's ablation."""

    def __init__(self, enc_dim: int, dec_dim: int, attn_dim: int, use_tanh: bool = True):
        super().__init__()
        self.W = nn.Linear(dec_dim, attn_dim, bias=False)
        self.U = nn.Linear(enc_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)
        self.use_tanh = use_tanh

    def score(self, s: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        z = self.W(s)[:, None, :] + K
        if self.use_tanh:
            z = torch.tanh(z)
        return self.v(z).squeeze(-1)

    @staticmethod
    def score_cost_of(B, L, E, D, A, use_tanh) -> Cost:
        """variants/additive.cpp additive_score_cost(), impl onednn."""
        elementwise = (2 if use_tanh else 1) * B * L * A
        return linear_cost(B, D, A) + Cost(elementwise, 4 * 2 * B * L * A) + linear_cost(B * L, A, 1)


class MlpScorer(TwinScorer):
    """OpenNMT-py's mlp: e_tj = v . tanh(W s + b + U h_j); created as GlobalAttention does: U, W (bias), v."""

    def __init__(self, enc_dim: int, dec_dim: int, attn_dim: int):
        super().__init__()
        self.U = nn.Linear(enc_dim, attn_dim, bias=False)
        self.W = nn.Linear(dec_dim, attn_dim, bias=True)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def score(self, s: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        return self.v(torch.tanh(self.W(s)[:, None, :] + K)).squeeze(-1)

    @staticmethod
    def score_cost(B, L, E, D, A) -> Cost:
        """variants/mlp.cpp mlp_score_cost(), impl onednn."""
        query = linear_cost(B, D, A) + Cost(B * A, 4 * A)
        return query + Cost(2 * B * L * A, 4 * 2 * B * L * A) + linear_cost(B * L, A, 1)


class DotScorer(TwinScorer):
    """Dot product of projections: e_tj = (W s) . (U h_j), divided by sqrt(A) when scaled."""

    def __init__(self, enc_dim: int, dec_dim: int, attn_dim: int, scaled: bool = False):
        super().__init__()
        self.W = nn.Linear(dec_dim, attn_dim, bias=False)
        self.U = nn.Linear(enc_dim, attn_dim, bias=False)
        self.divisor = math.sqrt(attn_dim) if scaled else 1.0

    def score(self, s: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        return (K @ self.W(s)[:, :, None]).squeeze(-1) / self.divisor

    @staticmethod
    def score_cost_of(B, L, E, D, A, scaled) -> Cost:
        """variants/dot.cpp dot_score_cost()."""
        return linear_cost(B, D, A) + Cost(2 * B * L * A + (B * L if scaled else 0), 4 * (B * L * A + B * L))


class GeneralScorer(TwinScorer):
    """Luong's general: e_tj = s . (W h_j); it has no attn_dim."""

    def __init__(self, enc_dim: int, dec_dim: int):
        super().__init__()
        self.W = nn.Linear(enc_dim, dec_dim, bias=False)

    def keys(self, H: torch.Tensor) -> torch.Tensor:
        return self.W(H)

    def score(self, s: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        return (K @ s[:, :, None]).squeeze(-1)

    @staticmethod
    def keys_cost(B, L, E, D, A) -> Cost:
        return linear_cost(B * L, E, D)

    @staticmethod
    def score_cost(B, L, E, D, A) -> Cost:
        return Cost(2 * B * L * D, 4 * (B * L * D + B * D + B * L))


class LocationScorer(TwinScorer):
    """Luong's location: e_tj = (W_a s)_j, position only; it never looks at H and has no keys."""

    def __init__(self, dec_dim: int, src_len: int):
        super().__init__()
        self.W_a = nn.Linear(dec_dim, src_len, bias=False)

    def keys(self, H: torch.Tensor) -> None:
        return None

    def score(self, s: torch.Tensor, K: None) -> torch.Tensor:
        return self.W_a(s)

    @staticmethod
    def keys_cost(B, L, E, D, A) -> Cost:
        return Cost(0, 0)

    @staticmethod
    def score_cost(B, L, E, D, A) -> Cost:
        return linear_cost(B, D, L)


class Twin(NamedTuple):
    """One scorer of the binary: make(E, D, A, L) creates its module (parameters in the binary's
    order); keys_cost and score_cost (B, L, E, D, A) -> Cost are its cost formulas."""

    make: Callable
    keys_cost: Callable
    score_cost: Callable


def _twin(make, cls, **options) -> Twin:
    score_cost = cls.score_cost_of if options else cls.score_cost
    return Twin(make, cls.keys_cost, lambda B, L, E, D, A: score_cost(B, L, E, D, A, *options.values()))


# Every scorer by name; tests/test_scorer_lists.py checks these names against `attnbench list --json`.
SCORERS = {
    "additive": _twin(lambda E, D, A, L: AdditiveScorer(E, D, A, use_tanh=True), AdditiveScorer, use_tanh=True),
    "additive_linear": _twin(lambda E, D, A, L: AdditiveScorer(E, D, A, use_tanh=False), AdditiveScorer,
                             use_tanh=False),
    "dot": _twin(lambda E, D, A, L: DotScorer(E, D, A, scaled=False), DotScorer, scaled=False),
    "scaled_dot": _twin(lambda E, D, A, L: DotScorer(E, D, A, scaled=True), DotScorer, scaled=True),
    "general": _twin(lambda E, D, A, L: GeneralScorer(E, D), GeneralScorer),
    "location": _twin(lambda E, D, A, L: LocationScorer(D, L), LocationScorer),
    "mlp": _twin(lambda E, D, A, L: MlpScorer(E, D, A), MlpScorer),
}


def make_scorer(name: str, enc_dim: int, dec_dim: int, attn_dim: int, src_len: int) -> TwinScorer:
    """The twin of scorer `name`, its parameters drawn now in the binary's order."""
    return SCORERS[name].make(enc_dim, dec_dim, attn_dim, src_len)


def attend(e: torch.Tensor, H: torch.Tensor, lengths: torch.Tensor):
    """Masks e (B, L) in place past each length with -inf; returns (e, weights, context (B, E))."""
    e.masked_fill_(torch.arange(e.shape[1])[None, :] >= lengths[:, None], -math.inf)
    weights = F.softmax(e, dim=-1)
    context = torch.bmm(weights[:, None, :], H).squeeze(1)
    return e, weights, context


class EncoderDecoder(nn.Module):
    """The harness's model: BiGRU encoder, tanh bridge, attention, GRUCell decoder, output layer."""

    def __init__(self, scorer: str, vocab: int, emb_dim: int, enc_dim: int, dec_dim: int, attn_dim: int,
                 src_len: int):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, emb_dim)
        self.tgt_emb = nn.Embedding(vocab, emb_dim)
        self.encoder = nn.GRU(emb_dim, enc_dim // 2, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(enc_dim // 2, dec_dim)
        self.scorer = make_scorer(scorer, enc_dim, dec_dim, attn_dim, src_len)
        self.cell = nn.GRUCell(emb_dim + enc_dim, dec_dim)
        self.out = nn.Linear(dec_dim + enc_dim, vocab)

    def encode(self, src: torch.Tensor):
        """Returns annotations H (B, L, E) and s_0 = tanh(bridge(backward final state)) (B, D).

        Padded positions are encoded too (no packing); only attention masks them.
        """
        H, h_n = self.encoder(self.src_emb(src))
        return H, torch.tanh(self.bridge(h_n[1]))

    def step(self, s: torch.Tensor, H: torch.Tensor, lengths: torch.Tensor, y: torch.Tensor):
        """One decode step from s_{t-1} and input tokens y (B,): (scores, weights, context, s_t, logits)."""
        scores, weights, context = attend(self.scorer(s, H), H, lengths)
        s = self.cell(torch.cat([self.tgt_emb(y), context], 1), s)
        logits = self.out(torch.cat([s, context], 1))
        return scores, weights, context, s, logits


@dataclass
class Probe:
    """One `attnbench probe --init torch` invocation; defaults are the binary's."""

    scorer: str = "additive"
    batch: int = 2
    src_len: int = 10
    tgt_len: int = 5
    emb_dim: int = 16
    enc_dim: int = 16
    dec_dim: int = 20
    attn_dim: int = 32
    vocab: int = 100
    threads: int = 1
    seed: int = 0
    len_min: int = 0
    lengths: Optional[tuple] = None  # one valid length per example; None: from len_min
    steps: int = 0  # 0: one attention step; T: the whole decode for T steps

    def flags(self) -> list:
        """The binary's command-line flags for this probe, e.g. ['--init', 'torch', '--scorer', 'dot', ...]."""
        out = ["--init", "torch"]
        for field in fields(self):
            if field.name != "lengths":
                out += ["--" + field.name.replace("_", "-"), str(getattr(self, field.name))]
        if self.lengths is not None:
            out += ["--lengths", ",".join(str(n) for n in self.lengths)]
        return out

    def source_lengths(self) -> list:
        """Valid length of each example: --lengths, or linear from src_len down to len_min."""
        if self.lengths is not None:
            return list(self.lengths)
        lo = self.len_min or self.src_len
        if self.batch < 2:
            return [self.src_len] * self.batch
        return [self.src_len - (self.src_len - lo) * b // (self.batch - 1) for b in range(self.batch)]


def validate(p: Probe) -> None:
    """Raises ValueError naming the flag when a value is out of range, as the binary does."""
    if p.scorer not in SCORERS:
        raise ValueError(f"--scorer: unknown scorer '{p.scorer}'; known: {', '.join(SCORERS)}")
    for name in ("batch", "src_len", "tgt_len", "emb_dim", "enc_dim", "dec_dim", "attn_dim", "vocab", "threads"):
        if getattr(p, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')}: must be a positive whole number, got {getattr(p, name)}")
    if p.enc_dim % 2:
        raise ValueError(f"--enc-dim: must be even (2 x the encoder's hidden size), got {p.enc_dim}")
    if not 0 <= p.len_min <= p.src_len:
        raise ValueError(f"--len-min: must be between 1 and --src-len ({p.src_len}), or 0, got {p.len_min}")
    if not 0 <= p.seed < 2**64:
        raise ValueError(f"--seed: must be a whole number in 0..2^64-1, got {p.seed}")
    if p.steps < 0:
        raise ValueError(f"--steps: must be 0 or more, got {p.steps}")
    if p.lengths is not None:
        if len(p.lengths) != p.batch:
            raise ValueError(f"--lengths: got {len(p.lengths)} lengths for --batch {p.batch}; give one per example")
        if any(not 1 <= n <= p.src_len for n in p.lengths):
            raise ValueError(f"--lengths: each must be a whole number in 1..{p.src_len} (--src-len)")


class Record(NamedTuple):
    """One printed tensor: name, step column (None: no such column), values as (B, n)."""

    tensor: str
    step: Optional[str]
    values: torch.Tensor


def one_step_records(p: Probe) -> list:
    """Scores, weights and context of one attention step on random H and s (assumes the seed is set)."""
    H = torch.randn(p.batch, p.src_len, p.enc_dim)
    s = torch.randn(p.batch, p.dec_dim)
    scorer = make_scorer(p.scorer, p.enc_dim, p.dec_dim, p.attn_dim, p.src_len)
    scores, weights, context = attend(scorer(s, H), H, torch.tensor(p.source_lengths()))
    return [Record("scores", None, scores), Record("weights", None, weights), Record("context", None, context)]


def decode_records(p: Probe) -> list:
    """Annotations, s_0, then per step scores, weights, context, state, logits (assumes the seed is set)."""
    model = EncoderDecoder(p.scorer, p.vocab, p.emb_dim, p.enc_dim, p.dec_dim, p.attn_dim, p.src_len)
    src = torch.randint(0, p.vocab, (p.batch, p.src_len))
    tgt = torch.randint(0, p.vocab, (p.batch, p.steps))
    lengths = torch.tensor(p.source_lengths())
    H, s = model.encode(src)
    records = [Record("annotations", "", H.reshape(p.batch, -1)), Record("state", "0", s)]
    for t in range(p.steps):
        scores, weights, context, s, logits = model.step(s, H, lengths, tgt[:, t])
        names = ("scores", "weights", "context", "state", "logits")
        records += [Record(n, str(t + 1), v) for n, v in zip(names, (scores, weights, context, s, logits))]
    return records


def decode_loss(model: EncoderDecoder, src, tgt, gold, lengths) -> torch.Tensor:
    """F.cross_entropy over the teacher-forced decode: logits (B, T, V) against gold (B, T)."""
    H, s = model.encode(src)
    logits = []
    for t in range(tgt.shape[1]):
        s, step_logits = model.step(s, H, lengths, tgt[:, t])[3:]
        logits.append(step_logits)
    stacked = torch.stack(logits, 1)
    return F.cross_entropy(stacked.reshape(-1, stacked.shape[-1]), gold.reshape(-1))


@dataclass
class Training:
    """The training inputs of one batch, drawn after the model as `attnbench grad` draws them."""

    model: EncoderDecoder
    src: torch.Tensor
    tgt: torch.Tensor
    gold: torch.Tensor
    lengths: torch.Tensor

    def loss(self) -> torch.Tensor:
        return decode_loss(self.model, self.src, self.tgt, self.gold, self.lengths)


def make_training(p: Probe) -> Training:
    """Seeds, then draws the model, src (B, L), tgt (B, T) and gold (B, T), T = p.tgt_len."""
    torch.manual_seed(p.seed)
    model = EncoderDecoder(p.scorer, p.vocab, p.emb_dim, p.enc_dim, p.dec_dim, p.attn_dim, p.src_len)
    src = torch.randint(0, p.vocab, (p.batch, p.src_len))
    tgt = torch.randint(0, p.vocab, (p.batch, p.tgt_len))
    gold = torch.randint(0, p.vocab, (p.batch, p.tgt_len))
    return Training(model, src, tgt, gold, torch.tensor(p.source_lengths()))


def train_step(training: Training, optimizer: torch.optim.Optimizer, clip: float) -> float:
    """One step on the batch: forward, loss, backward, clip_grad_norm_, Adam; returns the loss."""
    optimizer.zero_grad()
    loss = training.loss()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(training.model.parameters(), clip)
    optimizer.step()
    return loss.item()


def run_grad(p: Probe, adam_steps: int = 0, lr: float = 1e-3, clip: float = 5.0) -> str:
    """The CSV `attnbench grad --init torch` prints: `loss,0,L` then every `grad.<name>,i,value`."""
    validate(p)
    if adam_steps < 0:
        raise ValueError(f"--adam-steps: must be 0 or more, got {adam_steps}")
    torch.set_num_threads(p.threads)
    training = make_training(p)
    optimizer = torch.optim.Adam(training.model.parameters(), lr=lr)
    for _ in range(adam_steps):
        train_step(training, optimizer, clip)
    optimizer.zero_grad()
    loss = training.loss()
    loss.backward()
    lines = ["name,i,value", f"loss,0,{loss.item():.9g}"]
    for name, param in training.model.named_parameters():
        lines.extend(f"grad.{name},{i},{x:.9g}" for i, x in enumerate(param.grad.reshape(-1).tolist()))
    return "\n".join(lines) + "\n"


def format_csv(records: list, header: list) -> str:
    """Long-format CSV, one row `tensor[,t],b,i,value` per element, values as C's %.9g."""
    lines = [",".join(header)]
    for record in records:
        prefix = record.tensor if record.step is None else f"{record.tensor},{record.step}"
        for b, row in enumerate(record.values.tolist()):
            lines.extend(f"{prefix},{b},{i},{x:.9g}" for i, x in enumerate(row))
    return "\n".join(lines) + "\n"


def run_probe(p: Probe) -> str:
    """The CSV `attnbench probe` prints for p under --init torch; raises ValueError on bad input."""
    validate(p)
    torch.set_num_threads(p.threads)
    torch.manual_seed(p.seed)
    with torch.no_grad():
        if p.steps > 0:
            return format_csv(decode_records(p), ["tensor", "t", "b", "i", "value"])
        return format_csv(one_step_records(p), ["tensor", "b", "i", "value"])


def parse_lengths(text: str) -> tuple:
    """'10,7,4' -> (10, 7, 4); argparse turns the ValueError into a usage error."""
    return tuple(int(item) for item in text.split(","))


def make_parser() -> argparse.ArgumentParser:
    """The `probe` subcommand with the binary's flags and defaults."""
    parser = argparse.ArgumentParser(prog="torch_twin.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    probe = commands.add_parser("probe", help="print what `attnbench probe --init torch` prints")
    defaults = Probe()
    for field in fields(Probe):
        if field.type in ("int", int):
            probe.add_argument("--" + field.name.replace("_", "-"), type=int, default=getattr(defaults, field.name))
    probe.add_argument("--scorer", default=defaults.scorer, help="one of: " + ", ".join(SCORERS))
    probe.add_argument("--dtype", default="f32", help="f32 only")
    probe.add_argument("--init", default="fast", help="torch only (the binary's default, fast, is refused)")
    probe.add_argument("--lengths", type=parse_lengths, help="comma list of valid source lengths, e.g. 10,7")
    grad = commands.add_parser("grad", help="print what `attnbench grad --init torch` prints")
    for name in ("batch", "src_len", "tgt_len", "emb_dim", "enc_dim", "dec_dim", "attn_dim", "vocab", "threads",
                 "seed", "len_min", "adam_steps"):
        grad.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name, 0))
    grad.add_argument("--lr", type=float, default=1e-3)
    grad.add_argument("--clip", type=float, default=5.0)
    grad.add_argument("--scorer", default=defaults.scorer, help="one of: " + ", ".join(SCORERS))
    grad.add_argument("--init", default="fast", help="torch only")
    grad.add_argument("--lengths", type=parse_lengths, help="comma list of valid source lengths, e.g. 10,7")
    return parser


def main(argv: Optional[list] = None) -> int:
    """Runs the command line; returns 0, or 2 (message on stderr) for input the twin cannot reproduce."""
    args = vars(make_parser().parse_args(argv))
    command = args.pop("command")
    init, dtype = args.pop("init"), args.pop("dtype", "f32")
    try:
        if init != "torch":
            raise ValueError(f"--init: the twin reproduces only --init torch, got '{init}'")
        if dtype != "f32":
            raise ValueError(f"--dtype: unsupported data type '{dtype}'; supported: f32")
        if command == "grad":
            training = {name: args.pop(name) for name in ("adam_steps", "lr", "clip")}
            csv = run_grad(Probe(**args), **training)
        else:
            csv = run_probe(Probe(**args))
    except ValueError as error:
        print(f"torch_twin: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
