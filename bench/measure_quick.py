#!/usr/bin/env python3
"""
bench/quick.sh's measurements: every figure in one run, commands taking
turns (so a busy machine slows each alike), medians of --runs (default 21).

The checkpoint of 20,000 float32 16x16 tensors is written without torch:
a safetensors file (standard library) that `tinspect convert` turns into a
torch.save zip, cached as CACHE/quick20k.pt.

Goals (the same as `make bench`'s where it has them):
  start-up             tinspect --version - /bin/true            <= 2 ms
  inspect 20k          tinspect --json / unzip -p data.pkl       <= 1.5x
  scan 20k             tinspect scan -q / unzip -l (every record) <= 2.5x
  shapes ResNet-50     tinspect shapes - tinspect --version       <= 5 ms
  memory GPT-2 small   tinspect memory (train, adam) - --version  <= 10 ms
Each must be within --slack (default 2) times its goal, or the run fails.

Needs only the standard library.
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import goals  # noqa: E402

TENSORS = 20000


def write_safetensors(path):
    """TENSORS float32 16x16 zero tensors named like a model's, in one safetensors file."""
    header, offset = {}, 0
    for i in range(TENSORS // 4):
        for j in range(4):
            header["blocks.%d.p%d" % (i, j)] = {"dtype": "F32", "shape": [16, 16],
                                                "data_offsets": [offset, offset + 1024]}
            offset += 1024
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + offset)


def checkpoint(tinspect, cache):
    pt = os.path.join(cache, "quick20k.pt")
    if os.path.exists(pt):
        return pt
    os.makedirs(cache, exist_ok=True)
    st = os.path.join(cache, "quick20k.safetensors")
    write_safetensors(st)
    r = subprocess.run([tinspect, "convert", st, "-o", pt + ".tmp.pt", "-q", "--force"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.unlink(st)
    if r.returncode != 0:
        raise SystemExit("quick bench: cannot write the checkpoint: %s" % r.stderr.decode().strip())
    os.replace(pt + ".tmp.pt", pt)
    return pt


def pickle_member(pt):
    out = subprocess.run(["unzip", "-Z1", pt], stdout=subprocess.PIPE, check=True).stdout.decode()
    return next(n for n in out.split() if n.endswith("/data.pkl"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinspect", default="./tinspect")
    ap.add_argument("--cache", default=os.path.join(HERE, ".cache"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--slack", type=float, default=2.0)
    a = ap.parse_args()
    ti = os.path.abspath(a.tinspect)
    pt = checkpoint(ti, a.cache)
    gpt2 = os.path.join(ROOT, "fixtures", "models", "gpt2_small.json")
    resnet = os.path.join(ROOT, "fixtures", "models", "resnet50.json")
    cmds = {
        "true": ["/bin/true"],
        "version": [ti, "--version"],
        "inspect": [ti, "inspect", pt, "--json"],
        "unzip -p": ["unzip", "-p", pt, pickle_member(pt)],
        "scan": [ti, "scan", "-q", pt],
        "unzip -l": ["unzip", "-l", pt],
        "shapes": [ti, "shapes", resnet, "--bind", "N=8"],
        "memory": [ti, "memory", gpt2, "--bind", "B=1", "--bind", "T=128", "--mode", "train",
                   "--optimizer", "adam"],
    }
    times = {k: [] for k in cmds}
    for r in range(a.runs + 1):
        for k, argv in cmds.items():
            t0 = time.perf_counter()
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            t = time.perf_counter() - t0
            if p.returncode not in (0, 1) or (k != "scan" and p.returncode != 0):
                raise SystemExit("quick bench: %s exited %d" % (" ".join(argv), p.returncode))
            if r:
                times[k].append(t)
    m = {k: statistics.median(v) for k, v in times.items()}
    rows = [
        ("start-up: tinspect --version minus /bin/true", (m["version"] - m["true"]) * 1e3, "ms", "<=", 2),
        ("inspect 20k tensors --json / unzip -p data.pkl", m["inspect"] / m["unzip -p"], "x", "<=", 1.5),
        ("scan 20k tensors / unzip -l", m["scan"] / m["unzip -l"], "x", "<=", 2.5),
        ("shapes ResNet-50 minus start-up", (m["shapes"] - m["version"]) * 1e3, "ms", "<=", 5),
        ("memory GPT-2 small (train, adam) minus start-up", (m["memory"] - m["version"]) * 1e3, "ms", "<=", 10),
    ]
    load = os.getloadavg()[0]
    print("quick bench: medians of %d, taking turns; load average %.1f on %d cores" % (
        a.runs, load, os.cpu_count() or 0))
    for k in cmds:
        print("  %-10s %8.1f ms" % (k, m[k] * 1e3))
    rowsj = [{"figure": f, "value": v, "unit": u, "op": op, "goal": g} for f, v, u, op, g in rows]
    print("\n".join(goals.table_lines(rowsj, a.slack)))
    missed = [r for r in rowsj if not goals.met(r["op"], r["value"], r["goal"], a.slack)]
    if missed:
        print("quick bench: %d figure(s) more than %gx past the goal" % (len(missed), a.slack))
        return 1
    print("quick bench: every figure within %gx of its goal" % a.slack)
    return 0


if __name__ == "__main__":
    sys.exit(main())
