#!/usr/bin/env python3
"""
Measures `tinspect convert` and `tinspect materialize` against the real
alternatives, in the same run, and prints a table and ratios.

    python3 bench/measure_convert.py --tinspect ./tinspect [--python /usr/bin/python3]
                                     [--runs 3] [--no-torch] CACHE_DIR

CACHE_DIR holds vit_l_16.pt (gen.py writes it). Outputs go to a temporary
folder in CACHE_DIR and are removed.

Convert (1.2 GB vit_l_16 state dict):
  - tinspect convert F -o out.safetensors          (format change)
  - tinspect convert F --dtype bfloat16 -o out.pt  (float32 -> bfloat16)
  - cp F out                                       (the floor: the same bytes, read and written)
  - cp F out && sync out                           (the same, flushed to disk as tinspect's output is)
  - PyTorch: torch.load(F); {k: v.to(torch.bfloat16)}; torch.save(out), whole process
Random fills (need no checkpoint: they run when vit_l_16.pt is missing too):
  - tinspect materialize on a description of one 2^30-element float32
    parameter with --fill randn, then --fill rand, placed on the CPU (4 GiB)
  - PyTorch: torch.randn(2**30), torch.rand(2**30), whole process
  and the ratio of the two throughputs, against the goal of at least PyTorch's.

Wall time is the best of N runs of the whole process (after one untimed
warm-up, so the page cache holds the input for every side alike); throughput
is the input's bytes (convert) or the elements (fills) per second. The
method's helpers are measure.py's.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402
from measure import bench_args, best_of  # noqa: E402

RANDN_ELEMENTS = 1 << 30

TORCH_CONVERT = """import sys, torch
sd = torch.load(sys.argv[1])
torch.save({k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in sd.items()}, sys.argv[2])"""
# torch.<fill>(2**30) in a whole process, as tinspect is timed
TORCH_FILL = "import torch\nx = torch.%s(%d)\nassert x.numel() == %d"
FILLS = ("randn", "rand")


def rate(nbytes, seconds):
    return "%7.0f MB/s" % (nbytes / seconds / 1e6)


def main():
    a = bench_args(3, tinspect_required=True)
    status = measure_convert(a)
    measure_fills(a)
    return status


def measure_convert(a):
    src = os.path.join(a.cache, "vit_l_16.pt")
    if not os.path.exists(src):
        print("measure_convert: %s is missing (bench/gen.py writes it); convert not measured" % src)
        return 0
    size = os.path.getsize(src)
    work = tempfile.mkdtemp(prefix="convert-bench.", dir=a.cache)
    try:
        out_st = os.path.join(work, "out.safetensors")
        out_pt = os.path.join(work, "out.pt")
        out_cp = os.path.join(work, "copy.pt")

        def clean():
            for f in (out_st, out_pt, out_cp):
                if os.path.exists(f):
                    os.unlink(f)

        print("== convert: %s (%.0f MB)" % (src, size / 1e6))
        rows = [
            ("tinspect convert -> safetensors", [a.tinspect, "convert", src, "-q", "-o", out_st]),
            ("tinspect convert --dtype bfloat16", [a.tinspect, "convert", src, "-q", "--dtype", "bfloat16", "-o", out_pt]),
            ("cp (the floor)", ["cp", src, out_cp]),
            # tinspect flushes its output to disk before renaming it into place: so does this
            ("cp + sync (the same durability)", ["sh", "-c", 'cp "$1" "$2" && sync "$2"', "sh", src, out_cp]),
        ]
        if not a.no_torch:
            rows.append(("torch load + .to(bf16) + save", [a.python, "-c", TORCH_CONVERT, src, out_pt]))
        times = {}
        for label, argv in rows:
            times[label] = best_of(argv, a.runs, cleanup=clean, who="measure_convert")
            print("   %-36s %9.0f ms  %s" % (label, times[label] * 1e3, rate(size, times[label])))
        cp, cps = times["cp (the floor)"], times["cp + sync (the same durability)"]
        for label in rows[:2]:
            t = times[label[0]]
            ok = record("%s / (cp + sync)" % label[0], t / cps, "x", "<=", 2)
            print("   %-36s %.2fx cp, %.2fx cp + sync (goal within 2x)%s" % (
                label[0], t / cp, t / cps, "  ok" if ok else "  ABOVE GOAL"))
        if not a.no_torch:
            tt = times["torch load + .to(bf16) + save"]
            t = times["tinspect convert --dtype bfloat16"]
            ok = record("convert --dtype bfloat16: torch / tinspect", tt / t, "x", ">=", 1)
            print("   torch / tinspect --dtype bfloat16: %.2fx (goal: ahead of torch)%s" % (tt / t, "  ok" if ok else "  BEHIND"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def measure_fills(a):
    """tinspect materialize --fill F against torch.F, 2^30 float32 elements each, in the same run."""
    os.makedirs(a.cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix="fill-bench.", dir=a.cache)
    try:
        model = os.path.join(work, "fill.json")
        with open(model, "w") as f:
            json.dump({"inputs": {"x": {"shape": [1, 1 << 15]}},
                       "modules": {"w": {"type": "Linear", "in_features": 1 << 15, "out_features": 1 << 15,
                                         "bias": False}}}, f)
        print("== random fills: %d float32 elements (%.1f GiB), whole process" % (
            RANDN_ELEMENTS, RANDN_ELEMENTS * 4 / 2**30))
        for fill in FILLS:
            t = best_of([a.tinspect, "materialize", model, "--fill", fill, "-q"], a.runs, who="measure_convert")
            label = "tinspect materialize --fill %s" % fill
            print("   %-36s %9.0f ms  %6.0f M elements/s" % (label, t * 1e3, RANDN_ELEMENTS / t / 1e6))
            if a.no_torch:
                print("   (torch side skipped: torch is not importable)")
                continue
            tt = best_of([a.python, "-c", TORCH_FILL % (fill, RANDN_ELEMENTS, RANDN_ELEMENTS)], a.runs, who="measure_convert")
            label = "torch.%s (whole process)" % fill
            print("   %-36s %9.0f ms  %6.0f M elements/s" % (label, tt * 1e3, RANDN_ELEMENTS / tt / 1e6))
            ok = record("materialize --fill %s: tinspect / torch throughput" % fill, tt / t, "x", ">=", 1)
            print("   tinspect / torch throughput, %s: %.2fx (goal: at least 1x)%s" % (
                fill, tt / t, "  ok" if ok else "  BEHIND"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
