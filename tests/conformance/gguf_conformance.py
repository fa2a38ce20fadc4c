#!/usr/bin/env python3
"""gguf_conformance.py - tinspect's GGUF reader and writer against an independent parser.

usage: python3 tests/conformance/gguf_conformance.py ./tinspect

The parser is Hugging Face's @huggingface/gguf (npm), pinned by
tests/conformance/gguf/package-lock.json and installed with `npm ci` into
build/conformance-gguf/ (git-ignored) the first time. Without node and npm,
or when the registry cannot be reached for that install, the test prints
"skipped" and why, and exits 0.

1. Every file tinspect writes (`convert -o OUT.gguf` from a safetensors file
   made here and from the torch zip fixtures/resnet18_small.pt, as it is,
   with --dtype float16, bfloat16, float32 and with --quantize q8_0) and the
   fixtures of fixtures/gguf/ are read by both: tensor names in order, ggml
   types, shapes (tinspect's are PyTorch's: the parser's ne reversed), data
   offsets, the data section's start, and every metadata value (scalars
   exactly; arrays by length and their first elements).
2. Values: each written file converted back to safetensors by tinspect must
   hold the source's values as the output type has them: float32 bit for
   bit, float16 and bfloat16 rounded to nearest even (computed here, pure
   Python), Q8_0 as ggml's quantize_row_q8_0_ref then dequantize give them.

Standard library only; exits 1 on the first disagreement of any case, after
listing them all.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PKG = os.path.join(ROOT, "tests", "conformance", "gguf")
CACHE = os.path.join(ROOT, "build", "conformance-gguf")

failures = []


def fail(case, msg):
    failures.append("%s: %s" % (case, msg))


def skip(why):
    print("gguf_conformance: skipped: %s" % why)
    sys.exit(0)


# ---- the independent parser ----

def install():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        skip("no node/npm (apt-get install nodejs npm)")
    os.makedirs(CACHE, exist_ok=True)
    stamp = os.path.join(CACHE, "installed-lock.json")
    lock = open(os.path.join(PKG, "package-lock.json")).read()
    if os.path.exists(stamp) and open(stamp).read() == lock and \
            os.path.isdir(os.path.join(CACHE, "node_modules", "@huggingface", "gguf")):
        return node
    for f in ("package.json", "package-lock.json", "dump.mjs"):
        shutil.copy(os.path.join(PKG, f), CACHE)
    r = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=CACHE,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode:
        skip("npm ci of @huggingface/gguf failed (registry unreachable?): %s" % r.stdout.strip().splitlines()[-1:])
    with open(stamp, "w") as f:
        f.write(lock)
    return node


def parse(node, path):
    shutil.copy(os.path.join(PKG, "dump.mjs"), CACHE)
    r = subprocess.run([node, os.path.join(CACHE, "dump.mjs"), os.path.abspath(path)], cwd=CACHE,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if r.returncode:
        raise RuntimeError("@huggingface/gguf cannot read %s: %s" % (path, r.stderr.strip()[-400:]))
    return json.loads(r.stdout)


def tinspect_json(tinspect, path):
    r = subprocess.run([tinspect, path, "--json", "--raw"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    if r.returncode:
        raise RuntimeError("tinspect cannot read %s: %s" % (path, r.stderr.strip()))
    return json.loads(r.stdout)


# ---- metadata: tinspect's text of a value ----

def scalar_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return None  # floats: compared as numbers below
    return str(v)


def compare_metadata(case, theirs, ours):
    skipped = {"version", "tensor_count", "kv_count"}  # the parser's own header fields
    keys = [k for k in theirs if k not in skipped]
    if sorted(keys) != sorted(ours):
        fail(case, "metadata keys differ: %s vs %s" % (sorted(keys), sorted(ours)))
        return
    for k in keys:
        v, text = theirs[k], ours[k]
        if isinstance(v, list):
            if not text.startswith("[%d x " % len(v)):
                fail(case, "metadata %s: %d elements, tinspect says %r" % (k, len(v), text[:60]))
            first = [x for x in v[:8] if isinstance(x, str)]
            for s in first:
                if json.dumps(s)[1:-1] not in text.replace('\\"', '"') and s not in text:
                    fail(case, "metadata %s: element %r missing from %r" % (k, s, text[:80]))
                    break
        elif isinstance(v, float):
            if not math.isclose(float(text), v, rel_tol=1e-7, abs_tol=0):
                fail(case, "metadata %s: %r vs %r" % (k, v, text))
        elif scalar_text(v) != text:
            fail(case, "metadata %s: %r vs %r" % (k, scalar_text(v), text))


def compare_file(case, node, tinspect, path):
    theirs = parse(node, path)
    ours = tinspect_json(tinspect, path)
    if ours.get("format") != "gguf":
        fail(case, "tinspect calls it %r" % ours.get("format"))
    ts, os_ = theirs["tensors"], ours["tensors"]
    if [t["name"] for t in ts] != [t["name"] for t in os_]:
        fail(case, "tensor names differ")
        return theirs, ours
    for t, o in zip(ts, os_):
        name = t["name"]
        if [int(d) for d in reversed(t["ne"])] != o["shape"]:
            fail(case, "%s: ne %s, tinspect shape %s" % (name, t["ne"], o["shape"]))
        if t["type"] != o.get("ggml_type"):
            fail(case, "%s: type %s, tinspect %s" % (name, t["type"], o.get("ggml_type")))
        if int(t["offset"]) != o.get("data_offset"):
            fail(case, "%s: offset %s, tinspect %s" % (name, t["offset"], o.get("data_offset")))
    compare_metadata(case, theirs["metadata"], ours["metadata"])
    return theirs, ours


# ---- safetensors, by hand ----

def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, raw bytes)]"""
    header, offset, blobs = {}, 0, []
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], t["shape"], data[8 + n + b:8 + n + e])
    return out


def f32(raw):
    return list(struct.unpack("<%df" % (len(raw) // 4), raw))


def to_f16(xs):
    return b"".join(struct.pack("<e", x) for x in xs)  # round half to even (PyFloat_Pack2)


def to_bf16(xs):
    out = b""
    for x in xs:
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even (finite values here)
        out += struct.pack("<H", (bits >> 16) & 0xFFFF)
    return out


def q8_0_values(xs, row):
    """ggml: per block of 32, d = max|x|/127 as fp16, q = round(x/d); value d*q."""
    out = []
    for b in range(0, len(xs), 32):
        blk = [struct.unpack("<f", struct.pack("<f", x))[0] for x in xs[b:b + 32]]
        amax = max(abs(x) for x in blk)
        d = struct.unpack("<f", struct.pack("<f", amax / 127))[0]
        idv = struct.unpack("<f", struct.pack("<f", 1 / d))[0] if d else 0.0
        dh = struct.unpack("<e", struct.pack("<e", d))[0]
        for x in blk:
            p = struct.unpack("<f", struct.pack("<f", x * idv))[0]
            q = math.floor(abs(p) + 0.5) * (1 if p >= 0 else -1)  # roundf: half away from zero
            out.append(struct.unpack("<f", struct.pack("<f", dh * q))[0])
    return out


def source_tensors():
    def vals(n, seed):
        return [struct.unpack("<f", struct.pack("<f", math.sin(i * 0.37 + seed) * (1 + i % 7)))[0] for i in range(n)]
    return [
        ("embed.weight", "F32", [16, 64], struct.pack("<1024f", *vals(1024, 1))),
        ("layer.0.weight", "F32", [32, 96], struct.pack("<3072f", *vals(3072, 2))),
        ("layer.0.bias", "F32", [32], struct.pack("<32f", *vals(32, 3))),
        ("layer.0.odd", "F32", [3, 5], struct.pack("<15f", *vals(15, 4))),
        ("half.weight", "F16", [4, 32], to_f16(vals(128, 5))),
        ("brain.weight", "BF16", [2, 64], to_bf16(vals(128, 6))),
        ("conv.weight", "F32", [4, 2, 3, 32], struct.pack("<768f", *vals(768, 7))),
        ("steps", "I64", [2], struct.pack("<2q", 7, -9)),
        ("mask", "I32", [5], struct.pack("<5i", 1, 0, 1, 0, 1)),
    ]


def expected(dtype, shape, raw, mode):
    """What tensor (dtype, raw) becomes through convert MODE and back: (dtype, bytes or float list)."""
    floating = dtype in ("F32", "F16", "BF16")
    if not floating:
        return dtype, raw
    xs = f32(raw) if dtype == "F32" else [struct.unpack("<e", raw[i:i + 2])[0] for i in range(0, len(raw), 2)] \
        if dtype == "F16" else [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    if mode == "q8_0" and len(shape) >= 2 and shape[-1] % 32 == 0:
        return "F32", q8_0_values(xs, shape[-1])
    if mode == "float16":
        return "F16", to_f16(xs)
    if mode == "bfloat16":
        return "BF16", to_bf16(xs)
    if mode == "float32":
        return "F32", struct.pack("<%df" % len(xs), *xs)
    return dtype, raw


def run(cmd, case):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode:
        fail(case, "%s: exit %d: %s" % (" ".join(cmd[1:]), r.returncode, r.stderr.strip()))
        return False
    return True


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: gguf_conformance.py TINSPECT\n")
        return 2
    tinspect = os.path.abspath(sys.argv[1])
    node = install()
    cases = 0
    with tempfile.TemporaryDirectory(prefix="tinspect-gguf-") as tmp:
        src = os.path.join(tmp, "source.safetensors")
        tensors = source_tensors()
        write_safetensors(src, tensors)
        # 1 and 2: what tinspect writes, from safetensors
        for mode in ("as-is", "float16", "bfloat16", "float32", "q8_0"):
            case = "safetensors -> gguf (%s)" % mode
            out = os.path.join(tmp, "out-%s.gguf" % mode)
            extra = [] if mode == "as-is" else ["--quantize", "q8_0"] if mode == "q8_0" else ["--dtype", mode]
            cases += 1
            if not run([tinspect, "convert", src, "-o", out, "-q", "-f"] + extra, case):
                continue
            try:
                theirs, ours = compare_file(case, node, tinspect, out)
            except RuntimeError as e:
                fail(case, str(e))
                continue
            name = theirs["metadata"].get("general.name")
            if name != "source":
                fail(case, "general.name %r, want 'source' (the input's name)" % name)
            back = os.path.join(tmp, "back-%s.safetensors" % mode)
            if not run([tinspect, "convert", out, "-o", back, "-q", "-f"], case):
                continue
            got = read_safetensors(back)
            for name, dtype, shape, raw in tensors:
                want_dtype, want = expected(dtype, shape, raw, mode)
                g = got.get(name)
                if not g:
                    fail(case, "%s missing after the round trip" % name)
                    continue
                if g[0] != want_dtype or g[1] != shape:
                    fail(case, "%s: %s%s back, want %s%s" % (name, g[0], g[1], want_dtype, shape))
                elif isinstance(want, list):
                    have = f32(g[2])
                    bad = [i for i, (a, b) in enumerate(zip(have, want)) if a != b]
                    if bad:
                        i = bad[0]
                        fail(case, "%s: %d values differ from ggml's Q8_0, first [%d] %r vs %r" %
                             (name, len(bad), i, have[i], want[i]))
                elif g[2] != want:
                    fail(case, "%s: bytes differ" % name)
        # 1: from a torch zip (4-d convolutions, int64 counters)
        case = "torch zip -> gguf"
        cases += 1
        out = os.path.join(tmp, "resnet.gguf")
        if run([tinspect, "convert", os.path.join(ROOT, "fixtures", "resnet18_small.pt"), "-o", out, "-q"], case):
            try:
                compare_file(case, node, tinspect, out)
            except RuntimeError as e:
                fail(case, str(e))
        # 1: the reader on the hand-written fixtures
        for f in sorted(os.listdir(os.path.join(ROOT, "fixtures", "gguf"))):
            if f.endswith(".gguf"):
                cases += 1
                try:
                    compare_file("fixtures/gguf/" + f, node, tinspect, os.path.join(ROOT, "fixtures", "gguf", f))
                except RuntimeError as e:
                    fail("fixtures/gguf/" + f, str(e))
    for f in failures:
        print("FAIL " + f)
    print("gguf_conformance: %d cases, %d disagreements (@huggingface/gguf %s)" %
          (cases, len(failures), json.load(open(os.path.join(PKG, "package.json")))["dependencies"]["@huggingface/gguf"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
