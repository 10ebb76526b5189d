#!/usr/bin/python3
"""Checks TorchGenerator::randn against torch.randn bit for bit.

Usage: /usr/bin/python3 tests/torch_randn_exact.py /path/to/build/tests/randn_dump

For each seed and each sequence of sizes, runs `randn_dump SEED N1 N2 ...` (one
generator, randn(N1), randn(N2), ... in order, each value at %.9g, which round-trips
float32) and does the same after torch.manual_seed(SEED). The sequences mix sizes
below 16 (double Box-Muller with a cached second sample), multiples of 16 and
ragged sizes (the last 16 values redrawn), small and large interleaved. Every value
must have the same float32 bit pattern. Prints each mismatching case with its first
differences, then `N values compared, M mismatches`; exits 0 only when M is 0 and
N is at least MIN_VALUES.
"""
from __future__ import annotations

import subprocess
import sys

import torch

MIN_VALUES = 20000
SEEDS = (0, 1, 2, 7, 42, 12345, 2**32 + 3)  # 2**32 + 3: PyTorch keeps the low 32 bits
SEQUENCES = (
    # Around the block size of 16 and its ragged tails, small and large alternating.
    (16, 17, 31, 32, 33, 1000, 4099),
    (1, 16, 3, 17, 5, 31, 2, 32, 15, 33, 7, 47, 8, 48, 1, 63, 64, 65),
    # Large tensors, ragged and not, with odd small draws that leave a cached normal.
    (4099, 1, 1000, 3, 10007, 15, 256, 257, 255, 1023, 1024, 20),
)


def torch_capability() -> str:
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def ours(binary: str, seed: int, sizes: tuple) -> list:
    out = subprocess.run([binary, str(seed), *map(str, sizes)], capture_output=True, text=True, check=True)
    return [float(token) for token in out.stdout.split()]


def main(argv: list) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    capability = torch_capability()
    print(f"torch {torch.__version__}, CPU capability {capability}")
    if capability != "AVX2":
        print("FAIL: TorchGenerator::randn reproduces torch's AVX2 kernel; this torch dispatches " + capability)
        return 1
    compared = mismatches = 0
    for seed in SEEDS:
        for sizes in SEQUENCES:
            got = torch.tensor(ours(argv[1], seed, sizes), dtype=torch.float32)
            torch.manual_seed(seed)
            want = torch.cat([torch.randn(n) for n in sizes])
            if got.numel() != want.numel():
                print(f"FAIL seed {seed} sizes {sizes}: {got.numel()} values, torch has {want.numel()}")
                mismatches += want.numel()
                continue
            differ = (got.view(torch.int32) != want.view(torch.int32)).nonzero().flatten().tolist()
            compared += want.numel()
            mismatches += len(differ)
            if differ:
                print(f"FAIL seed {seed} sizes {sizes}: {len(differ)} of {want.numel()} values differ")
                for i in differ[:5]:
                    print(f"  value {i}: ours {got[i].item()!r}, torch {want[i].item()!r}")
    print(f"{compared} values compared, {mismatches} mismatches")
    if compared < MIN_VALUES:
        print(f"FAIL: fewer than {MIN_VALUES} values compared")
        return 1
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
