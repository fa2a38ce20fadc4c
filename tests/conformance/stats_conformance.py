#!/usr/bin/env python3
"""stats_conformance.py - `tinspect FILE --device cpu --json` against PyTorch.

Usage: /usr/bin/python3 tests/conformance/stats_conformance.py ./tinspect [--device cuda]

With --device cuda (on a machine with a GPU), tinspect runs with --device
cuda and torch loads with map_location='cuda' and computes there.

For the fixtures (stats.pt, views.pt, training_ckpt.pt, resnet18_small.pt)
and checkpoints built here in PyTorch (float32, float16, bfloat16, float64,
int64, int8, uint8 and bool; NaN and infinities sprinkled; transposed,
sliced and offset views; tensors of 300,000 elements, across tinspect's
chunks of 2^18), every tensor's "stats" must agree with torch.load(...,
map_location='cpu') of the same file, where f = t[t.isfinite()] (all of t
for integers and bool):
  - min, max == f.min(), f.max() exactly (null when f is empty),
  - nan, posinf, neginf == t.isnan().sum(), (t == inf).sum(), (t == -inf).sum(),
  - zero_fraction == (t == 0).sum() / t.numel() exactly,
  - mean == f.double().mean() and std == f.double().std() (unbiased) to
    within 1e-12 and 1e-10 of f.double().abs().mean() (what the values'
    size allows a float64 sum to resolve); "inf" where torch's is inf
    (float64 squares past 1.8e308),
  - checksum == XXH64 (seed 0) of
    t.resolve_conj().resolve_neg().contiguous().reshape(-1).view(torch.uint8)
    .numpy().tobytes(), the man page's recipe, computed here by a plain
    Python XXH64 (the xxhash package is not installed).
--check-finite must exit 1 exactly for the files that hold NaN or inf.
Exits 1 on any disagreement.
"""
import json
import struct
import math
import os
import subprocess
import sys
import tempfile

import torch

M = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                      0x27D4EB2F165667C5)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def xxh64_round(acc, lane):
    return (rotl((acc + lane * P2) & M, 31) * P1) & M


def xxh64(data, seed=0):
    """XXH64 as the reference implementation (xxhash.h) defines it."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        lanes = memoryview(data).cast("B")
        while i + 32 <= n:
            a, b, c, d = struct.unpack_from("<4Q", lanes, i)
            v = [xxh64_round(v[0], a), xxh64_round(v[1], b), xxh64_round(v[2], c), xxh64_round(v[3], d)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = ((h ^ xxh64_round(0, x)) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ xxh64_round(0, struct.unpack_from("<Q", data, i)[0]), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, i)[0] * P1 & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5 & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


assert xxh64(b"") == 0xEF46DB3751D8E999 and xxh64(b"abc") == 0x44BC2CF5AD770999
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def flatten(obj, prefix, out):
    """Names as tinspect gives them: dotted paths through dicts, lists and tuples."""
    if isinstance(obj, torch.Tensor):
        out[prefix] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, (list, tuple)):
        for k, v in enumerate(obj):
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)


DEVICE = "cpu"


def checksum(t):
    t = t.resolve_conj().resolve_neg().contiguous().reshape(-1)
    return xxh64(t.view(torch.uint8).cpu().numpy().tobytes())


def check_tensor(path, name, t, s):
    where = f"{os.path.basename(path)}:{name}"
    if f"{checksum(t):016x}" != s["checksum"]:
        fail(f"{where}: checksum {s['checksum']}, want {checksum(t):016x}")
    if t.is_complex():
        if s["note"] != "checksum only" or s["min"] is not None:
            fail(f"{where}: complex wants a checksum only, got {s}")
        return
    floating = t.is_floating_point()
    f = t[t.isfinite()] if floating else t.reshape(-1)
    want_nan = int(t.isnan().sum()) if floating else 0
    want_pos = int((t == math.inf).sum()) if floating else 0
    want_neg = int((t == -math.inf).sum()) if floating else 0
    for key, want in (("nan", want_nan), ("posinf", want_pos), ("neginf", want_neg)):
        if s[key] != want:
            fail(f"{where}: {key} {s[key]}, want {want}")
    zf = int((t == 0).sum()) / t.numel() if t.numel() else None
    if s["zero_fraction"] != zf:
        fail(f"{where}: zero_fraction {s['zero_fraction']}, want {zf}")
    if f.numel() == 0:
        if any(s[k] is not None for k in ("min", "max", "mean", "std")):
            fail(f"{where}: no finite values, yet {s}")
        return
    lo, hi = f.min().item(), f.max().item()
    if isinstance(lo, bool):
        lo, hi = int(lo), int(hi)
    if s["min"] != lo or s["max"] != hi:
        fail(f"{where}: min/max {s['min']}/{s['max']}, want {lo}/{hi}")
    d = f.double()
    scale = d.abs().mean().item()
    mean = d.mean().item()
    if abs(s["mean"] - mean) > 1e-12 * scale:
        fail(f"{where}: mean {s['mean']!r}, want {mean!r}")
    if f.numel() > 1:
        std = d.std().item()
        if math.isinf(std):  # squares past float64's range: inf in both, a string in JSON
            if s["std"] != "inf":
                fail(f"{where}: std {s['std']!r}, want 'inf' as torch's")
        elif s["std"] is None or abs(s["std"] - std) > 1e-10 * scale:
            fail(f"{where}: std {s['std']!r}, want {std!r}")
    elif s["std"] is not None:
        fail(f"{where}: std of one value {s['std']}, want null")


def load(path):
    """torch.load of the whole file on DEVICE (weights_only=False where torch 2.x has the switch:
    the fixtures are ours, and tinspect reads them without running anything)."""
    try:
        return torch.load(path, map_location=DEVICE, weights_only=False)
    except TypeError:
        return torch.load(path, map_location=DEVICE)


def check_file(tinspect, path):
    run = subprocess.run([tinspect, path, "--device", DEVICE, "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"{path}: exit {run.returncode}: {run.stderr.strip()}")
        return 0
    doc = json.loads(run.stdout)
    tensors = {}
    flatten(load(path), "", tensors)
    count, nonfinite = 0, False
    for row in doc["tensors"]:
        t = tensors.get(row["name"])
        if t is None:
            fail(f"{path}: {row['name']} is not a tensor torch.load gives")
            continue
        check_tensor(path, row["name"], t, row["stats"])
        nonfinite |= t.is_floating_point() and not bool(t.isfinite().all())
        nonfinite |= t.is_complex() and not bool(t.isfinite().all())
        count += 1
    if count != len(tensors):
        fail(f"{path}: {count} tensors with stats, torch.load gives {len(tensors)}")
    rc = subprocess.run([tinspect, path, "--device", DEVICE, "--check-finite"], capture_output=True).returncode
    # complex NaN is not counted (a checksum only): --check-finite looks at real values
    want = 1 if any(t.is_floating_point() and not bool(t.isfinite().all()) for t in tensors.values()) else 0
    if rc != want:
        fail(f"{path}: --check-finite exits {rc}, want {want}")
    return count


def sprinkle(t):
    """NaN, inf, -inf and a zero at the ends and at tinspect's first chunk boundary (2^18)."""
    flat = t.view(-1)
    n = flat.numel()
    for i, v in ((0, math.nan), (n // 3, math.inf), ((1 << 18) % n, -math.inf), (((1 << 18) - 1) % n, 0.0),
                 (n - 1, math.nan)):
        flat[i] = v
    return t


def build(dirname):
    gen = torch.Generator().manual_seed(16)
    files = []
    big = torch.randn(300_000, generator=gen)
    state = {
        "f32": sprinkle(torch.randn(300_000, generator=gen) * 3 + 1000),
        "f16": sprinkle(torch.randn(300_000, generator=gen).half()),
        "bf16": sprinkle(torch.randn(300_000, generator=gen).bfloat16()),
        "f64": torch.randn(1000, generator=gen, dtype=torch.float64) * 1e300,
        "i64": torch.randint(-2**62, 2**62, (5000,), generator=gen, dtype=torch.int64),
        "i8": torch.randint(-128, 128, (777,), generator=gen, dtype=torch.int8),
        "u8": torch.randint(0, 256, (777,), generator=gen, dtype=torch.uint8),
        "mask": torch.rand(1001, generator=gen) > 0.7,
        "big": big,
        "big_t": big.reshape(600, 500).t(),
        "big_slice": big.reshape(600, 500)[7:590:3, 11:400:2],
        "one": torch.tensor([math.nan]),
        "zeros": torch.zeros(10, dtype=torch.bfloat16),
    }
    p = os.path.join(dirname, "mixed.pt")
    torch.save(state, p)
    files.append(p)
    clean = {"w": torch.randn(64, 64, generator=gen), "b": torch.zeros(64), "steps": torch.tensor(3)}
    p = os.path.join(dirname, "clean.pt")
    torch.save(clean, p)
    files.append(p)
    return files


def main():
    global DEVICE
    if len(sys.argv) == 4 and sys.argv[2] == "--device":
        DEVICE = sys.argv.pop(3)
        sys.argv.pop(2)
    if len(sys.argv) != 2:
        sys.exit("usage: stats_conformance.py ./tinspect [--device cuda]")
    tinspect = os.path.abspath(sys.argv[1])
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures")
    files = [os.path.join(root, f) for f in ("stats.pt", "views.pt", "training_ckpt.pt", "resnet18_small.pt")]
    tensors = 0
    with tempfile.TemporaryDirectory() as d:
        for path in files + build(d):
            tensors += check_file(tinspect, path)
    print(f"stats conformance ({DEVICE}): {len(files) + 2} checkpoints, {tensors} tensors, {len(failures)} disagreements with PyTorch")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
