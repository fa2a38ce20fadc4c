#!/usr/bin/python3
"""cast_conformance.py - our dtype casts (src/core/cast.c) against PyTorch's `.to()` on CPU.

Usage: /usr/bin/python3 tests/conformance/cast_conformance.py [--samples N] [--keep DIR]

The script compiles a small helper program from our sources into a temporary
directory (cc, or $CC): `cast-helper FROM TO FLAGS` reads raw elements of FROM
on stdin and writes them cast to TO on stdout, through ti_cast(). For every
pair of the dtypes PyTorch 1.13 has (float32, float64, float16, bfloat16,
int64, int32, int16, int8, uint8, bool) it feeds the same bytes to torch and
to the helper and compares the results byte for byte:

  - flags 0 against `x.to(dtype)` of a contiguous tensor (the vectorised
    kernels on this machine);
  - TI_CAST_NAN_SCALAR against the same conversion of a non-contiguous view
    (PyTorch's scalar loop).

Inputs: every float16 and bfloat16 bit pattern, every int8/uint8 value, float32
and float64 special values, values at and around the rounding boundaries of
each narrower format (ties to even, subnormals, overflow to inf, double
rounding through float32), integers around 2^24, 2^31, 2^53 and 2^63, and
N random bit patterns and random values per dtype (default 200000).
Exit status 0 when everything matches, 1 otherwise, 77 without torch.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("cast conformance: skipped (no torch for %s)" % sys.executable)
    sys.exit(77)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

HELPER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tinspect/cast.h"

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	ti_dtype from = ti_dtype_from_torch_name(argv[1]), to = ti_dtype_from_torch_name(argv[2]);
	unsigned flags = (unsigned)strtoul(argv[3], NULL, 0);
	size_t cap = 1 << 20, len = 0, got;
	unsigned char *in = malloc(cap);
	while (in && (got = fread(in + len, 1, cap - len, stdin)) > 0)
		if ((len += got) == cap)
			in = realloc(in, cap *= 2);
	size_t n = len / ti_dtype_size(from);
	unsigned char *out = malloc(n * ti_dtype_size(to) + 1);
	if (!in || !out)
		return 3;
	ti_error err;
	ti_error_clear(&err);
	if (ti_cast(from, in, to, out, n, flags, &err)) {
		fprintf(stderr, "cast-helper: %s\n", err.message);
		return 1;
	}
	return fwrite(out, ti_dtype_size(to), n, stdout) == n ? 0 : 4;
}
"""

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}
INT_VIEW = {2: torch.int16, 4: torch.int32, 8: torch.int64}
NAN_SCALAR = 0x1


def build_helper(workdir):
    source = os.path.join(workdir, "cast_helper.c")
    with open(source, "w") as f:
        f.write(HELPER)
    exe = os.path.join(workdir, "cast-helper")
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-O2", "-I" + os.path.join(ROOT, "include"),
           "-I" + os.path.join(ROOT, "src"), "-o", exe, source,
           os.path.join(ROOT, "src/core/cast.c"), os.path.join(ROOT, "src/core/dtype.c"),
           os.path.join(ROOT, "src/util/error.c"), "-lm"]
    subprocess.run(cmd, check=True)
    return exe


def from_bits(bits, dtype):
    """A tensor of dtype whose elements have the given bit patterns (python ints)."""
    size = torch.empty(0, dtype=dtype).element_size()
    view = INT_VIEW[size]
    width = 8 * size
    signed = [b - (1 << width) if b >= 1 << (width - 1) else b for b in bits]
    return torch.tensor(signed, dtype=view).view(dtype)


def float32_inputs(samples, gen):
    bits = [0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
            0xff800001, 0x7fa00000, 0x7fffffff, 0xffffffff, 0x7fc00001, 0x7f802000, 0x00000001,
            0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x477fe000, 0x477fefff,
            0x477ff000, 0x477ff001, 0x47800000, 0x38800000, 0x387fffff, 0x33000000, 0x33000001,
            0x337fffff, 0x33800000, 0x7f7f8000, 0x7f7f7fff, 0x7f7fc000]
    # the bits that bfloat16 (16) and float16 (13) drop, at their ties, for every exponent and sign
    low16 = [0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff]
    low13 = [0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff]
    for top in range(512):
        for odd in (0, 1):
            for low in low16:
                bits.append(top << 23 | odd << 16 | 0x2a << 17 | low)
            for low in low13:
                bits.append(top << 23 | odd << 13 | 0x15 << 14 | low)
    x = from_bits(bits, torch.float32)
    rand_bits = torch.randint(-(1 << 31), 1 << 31, (samples,), generator=gen, dtype=torch.int64)
    values = [
        rand_bits.to(torch.int32).view(torch.float32),
        (torch.rand(samples, generator=gen, dtype=torch.float64) * 1200 - 600).float(),
        (torch.rand(samples, generator=gen, dtype=torch.float64) * 2.0 ** 34 - 2.0 ** 33).float(),
        (torch.rand(samples, generator=gen, dtype=torch.float64) * 2.0 ** 66 - 2.0 ** 65).float(),
        torch.tensor([2.0 ** 31, -2.0 ** 31, 2.0 ** 31 - 128, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 255.5,
                      256.0, -0.5, -1.0, 65535.0, 65536.0, 32767.0, 32768.0, -32769.0], dtype=torch.float32),
    ]
    return torch.cat([x] + values)


def float64_inputs(samples, gen):
    bits = [0x0000000000000000, 0x8000000000000000, 0x7ff0000000000000, 0xfff0000000000000,
            0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0x7ff4000000000000,
            0x7fffffffffffffff, 0xffffffffffffffff, 0x0000000000000001, 0x000fffffffffffff,
            0x7fefffffffffffff, 0x47efffffe0000000, 0x47efffffe0000001, 0x36a0000000000000]
    x = from_bits(bits, torch.float64)
    f32 = float32_inputs(samples // 4, gen).double()
    # a float32 value plus or minus a little: rounding it to float32 first moves ties
    tiny = torch.rand(f32.numel(), generator=gen, dtype=torch.float64) * 2.0 ** -30
    nudged = torch.where(torch.isfinite(f32), f32 * (1 + tiny), f32)
    nudged_down = torch.where(torch.isfinite(f32), f32 * (1 - tiny), f32)
    rand_bits = torch.randint(-(1 << 63), (1 << 63) - 1, (samples,), generator=gen, dtype=torch.int64)
    values = [
        rand_bits.view(torch.float64),
        torch.rand(samples, generator=gen, dtype=torch.float64) * 1200 - 600,
        torch.rand(samples, generator=gen, dtype=torch.float64) * 2.0 ** 34 - 2.0 ** 33,
        torch.rand(samples, generator=gen, dtype=torch.float64) * 2.0 ** 66 - 2.0 ** 65,
        torch.tensor([1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -8 + 2.0 ** -40, 2.0 ** 32 + 7,
                      -(2.0 ** 32) - 7, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 31 - 0.5, -(2.0 ** 31) - 0.5],
                     dtype=torch.float64),
    ]
    return torch.cat([x, f32, nudged, nudged_down] + values)


def int_inputs(dtype, samples, gen):
    info = torch.iinfo(dtype)
    if info.bits <= 8:
        return torch.arange(info.min, info.max + 1, dtype=torch.int64).to(dtype)
    edges = []
    for p in (8, 11, 15, 16, 24, 25, 31, 32, 53, 54, 62, 63):
        for base in (1 << p, -(1 << p)):
            for d in range(-3, 4):
                edges.append(base + d)
            edges += [base + (1 << max(p - 9, 0)) + 1, base + (1 << max(p - 12, 0)) + 1,
                      base + (1 << max(p - 25, 0)) + 1]
    edges = [v for v in edges if info.min <= v <= info.max] + [info.min, info.max, 0, 1, -1]
    rand = torch.randint(info.min, info.max, (samples,), generator=gen, dtype=torch.int64)
    small = torch.randint(-70000, 70000, (samples // 4,), generator=gen, dtype=torch.int64)
    small = small.clamp(info.min, info.max)
    return torch.cat([torch.tensor(edges, dtype=torch.int64), rand, small]).to(dtype)


def inputs(name, samples, gen):
    if name == "float32":
        return float32_inputs(samples, gen)
    if name == "float64":
        return float64_inputs(samples, gen)
    if name in ("float16", "bfloat16"):
        return from_bits(list(range(1 << 16)), DTYPES[name])
    if name == "bool":
        return torch.tensor([0, 1, 1, 0], dtype=torch.bool)
    return int_inputs(DTYPES[name], samples, gen)


def raw(t):
    return t.contiguous().view(torch.uint8).numpy().tobytes() if t.dtype != torch.bool else \
        t.contiguous().to(torch.uint8).numpy().tobytes()


def non_contiguous_to(x, dtype):
    """x.to(dtype) through a strided view, which PyTorch converts element by element."""
    wide = torch.stack([x, x], 1)[:, 0]
    assert not wide.is_contiguous()
    return wide.to(dtype)


def describe(t, i):
    if t.dtype == torch.bool:
        return str(bool(t[i]))
    size = t.element_size()
    if t.dtype.is_floating_point:
        b = int(t[i:i + 1].view(INT_VIEW[size]).item()) & ((1 << (8 * size)) - 1)
        return "0x%0*x (%r)" % (2 * size, b, float(t[i]))
    return str(int(t[i]))


def compare(helper, src_name, x, dst_name, flags, expected):
    proc = subprocess.run([helper, src_name, dst_name, str(flags)], input=raw(x), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if proc.returncode:
        return ["helper failed: %s" % proc.stderr.decode(errors="replace").strip()]
    want = raw(expected)
    if proc.stdout == want:
        return []
    size = expected.element_size()
    got = torch.frombuffer(bytearray(proc.stdout), dtype=torch.uint8)
    if expected.dtype == torch.bool:
        got = got.to(torch.bool)
    else:
        got = got.view(expected.dtype)
    if got.numel() != expected.numel():
        return ["%d elements, want %d" % (got.numel(), expected.numel())]
    eq = torch.frombuffer(bytearray(proc.stdout), dtype=torch.uint8).view(-1, size) == \
        torch.frombuffer(bytearray(want), dtype=torch.uint8).view(-1, size)
    bad = (~eq.all(1)).nonzero().flatten().tolist()
    lines = ["%d of %d elements differ" % (len(bad), expected.numel())]
    for i in bad[:5]:
        lines.append("  %s -> got %s, want %s" % (describe(x, i), describe(got, i), describe(expected, i)))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200000)
    parser.add_argument("--keep", help="build the helper in this directory and keep it")
    args = parser.parse_args()
    workdir = args.keep or tempfile.mkdtemp(prefix="tinspect-cast-")
    os.makedirs(workdir, exist_ok=True)
    try:
        helper = build_helper(workdir)
        gen = torch.Generator().manual_seed(1234)
        failures = checked = 0
        for src_name in DTYPES:
            x = inputs(src_name, args.samples, gen)
            for dst_name, dst in DTYPES.items():
                for flags, expected in ((0, x.to(dst)), (NAN_SCALAR, non_contiguous_to(x, dst))):
                    checked += 1
                    problems = compare(helper, src_name, x, dst_name, flags, expected)
                    if problems:
                        failures += 1
                        print("FAIL %s -> %s (flags %d): %s" % (src_name, dst_name, flags, problems[0]))
                        for line in problems[1:]:
                            print(line)
        print("cast conformance: %d of %d conversions match torch %s" % (checked - failures, checked,
                                                                          torch.__version__))
        return 1 if failures else 0
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
