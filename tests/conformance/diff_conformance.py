#!/usr/bin/env python3
"""diff_conformance.py - `tinspect diff --values --json` against PyTorch.

Usage: /usr/bin/python3 tests/conformance/diff_conformance.py ./tinspect

Builds pairs of checkpoints in real PyTorch (the same, perturbed values,
added/removed/renamed, a shape change, a dtype change, tied against untied,
float16 and bfloat16, non-contiguous views saved in a torch zip, safetensors
against a torch zip) and requires, for every tensor both hold with the same
shape:
  - bit_identical == torch.equal(a, b) (same dtype; no NaN in these pairs),
  - max_abs == (a.double() - b.double()).abs().max() exactly (float64 on
    both sides: no tolerance),
  - max_rel == ((a-b).abs() / b.abs()).max() in float64, to 1e-15 relative,
    where tinspect's rule for b == 0 applies (0 when a == b, else inf),
  - the exit status and not_close agree with torch.isclose(a, b, rtol, atol),
and that added, removed, renamed, shape, dtype and ties are what the pair
was built to have. Exits 1 on any disagreement.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import torch

ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
            torch.float64: "F64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL", torch.int8: "I8"}
failures = []


def save_safetensors(tensors, path):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
        data = raw.numpy().tobytes()
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def expected_rel(a, b):
    d = (a - b).abs()
    rel = d / b.abs()
    rel[(a == b)] = 0.0
    return rel.max().item() if rel.numel() else 0.0


def check(name, tinspect, sd_a, sd_b, fmt_a="pt", fmt_b="pt", atol=0.0, rtol=0.0, want=None, tmp=None):
    pa, pb = os.path.join(tmp, name + "_a." + fmt_a), os.path.join(tmp, name + "_b." + fmt_b)
    for sd, p, fmt in ((sd_a, pa, fmt_a), (sd_b, pb, fmt_b)):
        if fmt == "pt":
            torch.save(sd, p)
        else:
            save_safetensors(sd, p)
    args = [tinspect, "diff", "--values", "--json", pa, pb]
    if atol or rtol:
        args += ["--atol", repr(atol), "--rtol", repr(rtol)]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode not in (0, 1):
        failures.append(f"{name}: exit {run.returncode}: {run.stderr.strip()}")
        return
    doc = json.loads(run.stdout)
    rows = {t["name"]: t for t in doc["tensors"]}
    any_diff = False
    for key, a in sd_a.items():
        if not isinstance(a, torch.Tensor) or key not in sd_b:
            continue
        b = sd_b[key]
        row = rows.get(key)
        if row is None:
            failures.append(f"{name}: no row for {key}")
            continue
        if a.shape != b.shape:
            if "shape" not in row["changes"]:
                failures.append(f"{name}: {key}: shape change not reported")
            any_diff = True
            continue
        if a.dtype != b.dtype:
            any_diff = True
        v = row.get("values")
        if v is None:
            failures.append(f"{name}: {key}: values not compared: {row.get('not_compared')}")
            continue
        ad, bd = a.double(), b.double()
        if a.dtype == b.dtype and v["bit_identical"] != torch.equal(a, b):
            failures.append(f"{name}: {key}: bit_identical {v['bit_identical']}, torch.equal {torch.equal(a, b)}")
        want_abs = (ad - bd).abs().max().item() if a.numel() else 0.0
        if v["max_abs"] != want_abs:
            failures.append(f"{name}: {key}: max_abs {v['max_abs']!r}, torch {want_abs!r}")
        want_rel = expected_rel(ad, bd)
        got_rel = v["max_rel"]
        got_rel = math.inf if got_rel == "inf" else got_rel
        if not (got_rel == want_rel or abs(got_rel - want_rel) <= 1e-15 * abs(want_rel)):
            failures.append(f"{name}: {key}: max_rel {got_rel!r}, torch {want_rel!r}")
        close = torch.isclose(ad, bd, rtol=rtol, atol=atol)
        if v["not_close"] != int((~close).sum()):
            failures.append(f"{name}: {key}: not_close {v['not_close']}, torch.isclose says {int((~close).sum())}")
        any_diff |= not bool(close.all())
    for k, n in (want or {}).items():
        if doc["summary"][k] != n:
            failures.append(f"{name}: summary {k} {doc['summary'][k]}, want {n}")
    any_diff |= any(doc["summary"][k] for k in ("added", "removed", "renamed", "ties", "other_values"))
    if run.returncode != int(any_diff):
        failures.append(f"{name}: exit {run.returncode}, torch says {'different' if any_diff else 'same'}")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    tinspect = os.path.abspath(sys.argv[1])
    torch.manual_seed(0)
    base = {"a": torch.randn(64, 33), "b": torch.randn(7), "c": torch.randint(-5, 5, (10,)),
            "h": torch.randn(50).half(), "bf": torch.randn(50).bfloat16(), "z": torch.zeros(4)}
    with tempfile.TemporaryDirectory() as tmp:
        n = 0

        def pair(name, a, b, **kw):
            nonlocal n
            n += 1
            check(name, tinspect, a, b, tmp=tmp, **kw)

        pair("same", base, {k: v.clone() for k, v in base.items()}, want={"values": 0})
        p = {k: v.clone() for k, v in base.items()}
        p["a"] = p["a"] + torch.randn(64, 33) * 1e-4
        p["h"][3] += 0.5
        p["bf"][7] = -p["bf"][7]
        p["z"][1] = 1e-3
        pair("perturbed", base, p, want={"values": 4})
        pair("perturbed_rtol", base, p, atol=1e-3, rtol=1e-2)
        pair("perturbed_loose", base, p, atol=2.0, rtol=0.0)
        r = {k: v.clone() for k, v in base.items()}
        r["renamed"] = r.pop("b")
        del r["c"]
        r["new"] = torch.ones(3)
        r["a"] = torch.randn(64, 34)
        r["h"] = base["h"].float()
        pair("structure", base, r, want={"renamed": 1, "removed": 1, "added": 1, "shape": 1, "dtype": 1})
        emb = torch.randn(6, 5)
        pair("ties", {"e": emb, "w": emb}, {"e": emb.clone(), "w": emb.clone()}, want={"ties": 1})
        big = torch.randn(12, 20)
        views = {"t": big.t(), "s": big[1:11:3, 2:19:4], "r": big[5], "e": big.expand(2, 12, 20)[1]}
        pair("views_vs_safetensors", views, {k: v.contiguous() for k, v in views.items()}, fmt_b="safetensors",
             want={"values": 0})
        pv = {k: v.contiguous().clone() for k, v in views.items()}
        pv["t"][3, 4] += 1.0
        pv["s"][0, 0] -= 0.25
        pair("views_perturbed", views, pv, fmt_a="pt", fmt_b="safetensors", want={"values": 2})
        pair("safetensors_vs_pt", {k: v for k, v in base.items()}, p, fmt_a="safetensors")
        pair("dtype_cast", {"x": torch.randn(100)}, {"x": torch.randn(100).half()}, want={"dtype": 1})
        xs = torch.randn(100)
        pair("dtype_cast_exact", {"x": xs.half().float()}, {"x": xs.half()}, want={"dtype": 1, "values": 0})
        pair("bf16_vs_float", {"x": xs.bfloat16()}, {"x": xs}, fmt_b="safetensors")
        pair("int_vs_float", {"x": torch.arange(10)}, {"x": torch.arange(10).double() + 0.5})
    for f in failures:
        print("FAIL", f)
    print(f"diff conformance: {n} pairs, {len(failures)} disagreements with PyTorch")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
