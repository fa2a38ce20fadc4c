#!/usr/bin/python3
"""
inspect gives one document whatever the format: a torch checkpoint and the
safetensors file convert makes of it must list the same keys, and the
safetensors listing must be exactly the tensors of its header.

Usage:  /usr/bin/python3 tests/conformance/inspect_formats.py ./tinspect

Standard library only (no torch): the header is read here, independently,
in a few lines. For each torch fixture, `tinspect convert` writes a
safetensors file; then
  - the top-level, summary and tensor keys of `inspect --json` on both
    agree, less what only a torch zip records (its version, byteorder,
    root folder, pickle protocol and size);
  - the safetensors document lists exactly the header's tensors, in the
    header, none of the "tie.NAME" names of __metadata__, and each tie as a
    "ties" name of its target;
  - its summary counts them: tensors and storages are the header's count,
    unique_nbytes the bytes of the data, shared_storages the tied targets,
    values 0.
And for safetensors files that no torch fixture gives (the sub-byte F4,
F6_E2M3 and F6_E3M2): the listing is the header, each tensor's nbytes its
data_offsets' span, and convert to safetensors copies the file unchanged.
Prints one line per fixture and 'N passed, M failed'; exits 1 on failure.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = ["tied.pt", "tied_keepvars.pt", "views.pt", "shared_views.pt", "dtypes.pt", "training_ckpt.pt",
            "resnet18_small.pt", "root_tensor.pt", "int_keys.pt"]
CONVERT_ARGS = {"dtypes.pt": ["--exclude", "complex128"]}  # safetensors has no complex128
TORCH_ONLY = {"version", "byteorder", "root", "pickle_protocol", "pickle_nbytes", "format_version",
              "storage_alignment"}
DTYPE_SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
              "BOOL": 1, "C64": 8, "C128": 16, "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def inspect(binary, path):
    p = subprocess.run([binary, "--json", path], cwd=ROOT, capture_output=True, timeout=120)
    if p.returncode:
        raise AssertionError("inspect %s exited %d: %s" % (path, p.returncode, p.stderr.decode().strip()))
    return json.loads(p.stdout)


def check(binary, fixture, scratch):
    src = os.path.join(ROOT, "fixtures", fixture)
    out = os.path.join(scratch, fixture + ".safetensors")
    p = subprocess.run([binary, "convert", src, "-o", out, "-q"] + CONVERT_ARGS.get(fixture, []), cwd=ROOT, capture_output=True, timeout=120)
    if p.returncode:
        raise AssertionError("convert exited %d: %s" % (p.returncode, p.stderr.decode().strip()))
    torch_doc, st_doc, head = inspect(binary, src), inspect(binary, out), header(out)

    want = set(torch_doc) - TORCH_ONLY
    if set(st_doc) != want:
        raise AssertionError("top-level keys differ: torch %s, safetensors %s" % (sorted(want), sorted(st_doc)))
    if set(st_doc["summary"]) != set(torch_doc["summary"]):
        raise AssertionError("summary keys differ: %s vs %s" % (sorted(torch_doc["summary"]), sorted(st_doc["summary"])))
    plain = set()
    for t in torch_doc["tensors"]:
        plain |= set(t) - {"conj", "neg", "quantization", "components", "coalesced", "subclass"}
    for t in st_doc["tensors"]:
        if set(t) - {"ties"} != plain:
            raise AssertionError("tensor keys differ for %r: %s vs %s" % (t["name"], sorted(plain), sorted(t)))

    meta = head.pop("__metadata__", {})
    names = [t["name"] for t in st_doc["tensors"]]
    if sorted(names) != sorted(head):
        raise AssertionError("listed %s, the header holds %s" % (sorted(names), sorted(head)))
    ties = {k[4:]: v for k, v in meta.items() if k.startswith("tie.")}
    listed_ties = {tie: t["name"] for t in st_doc["tensors"] for tie in t.get("ties", [])}
    if listed_ties != ties:
        raise AssertionError("ties %s, __metadata__ says %s" % (listed_ties, ties))
    s = st_doc["summary"]
    data = sum(h["data_offsets"][1] - h["data_offsets"][0] for h in head.values())
    tied_targets = len(set(ties.values()))
    got = (s["tensors"], s["storages"], s["unique_nbytes"], s["shared_storages"], s["values"])
    want = (len(head), len(head), data, tied_targets, 0)
    if got != want:
        raise AssertionError("summary (tensors, storages, unique_nbytes, shared_storages, values) = %s, want %s"
                             % (got, want))
    return "%d tensors, %d tie(s)" % (len(head), len(ties))


# safetensors files no torch fixture converts to: the sub-byte F4, F6_E2M3, F6_E3M2 (numel * bits / 8 bytes)
SAFETENSORS_FIXTURES = ["safetensors/subbyte.safetensors", "safetensors/multi_dtype.safetensors"]


def check_safetensors(binary, fixture, scratch):
    """inspect lists exactly the header, each tensor with its data_offsets' bytes; convert copies it unchanged."""
    src = os.path.join(ROOT, "fixtures", fixture)
    head, doc = header(src), inspect(binary, src)
    head.pop("__metadata__", None)
    for t in doc["tensors"]:
        h = head.get(t["name"])
        if h is None or t["shape"] != h["shape"]:
            raise AssertionError("%r: listed with shape %s, the header says %s" % (t["name"], t["shape"], h))
        if t["nbytes"] != h["data_offsets"][1] - h["data_offsets"][0]:
            raise AssertionError("%r (%s): nbytes %d, the header's offsets %s" % (t["name"], h["dtype"], t["nbytes"],
                                                                                  h["data_offsets"]))
    if len(doc["tensors"]) != len(head):
        raise AssertionError("listed %d tensors, the header holds %d" % (len(doc["tensors"]), len(head)))
    out = os.path.join(scratch, os.path.basename(fixture))
    p = subprocess.run([binary, "convert", src, "-o", out, "-q"], cwd=ROOT, capture_output=True, timeout=120)
    if p.returncode:
        raise AssertionError("convert exited %d: %s" % (p.returncode, p.stderr.decode().strip()))
    with open(src, "rb") as a, open(out, "rb") as b:
        if a.read() != b.read():
            raise AssertionError("convert to safetensors changed the file")
    return "%d tensors, copied byte for byte" % len(head)


def main(argv):
    binary = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(ROOT, "tinspect"))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for fixture in FIXTURES:
            try:
                note = check(binary, fixture, scratch)
                print("ok   inspect-formats:%-22s %s" % (fixture, note))
                passed += 1
            except (AssertionError, ValueError, OSError, subprocess.TimeoutExpired) as e:
                print("FAIL inspect-formats:%-22s %s" % (fixture, e))
                failed += 1
        for fixture in SAFETENSORS_FIXTURES:
            try:
                note = check_safetensors(binary, fixture, scratch)
                print("ok   inspect-formats:%-22s %s" % (fixture, note))
                passed += 1
            except (AssertionError, ValueError, OSError, subprocess.TimeoutExpired) as e:
                print("FAIL inspect-formats:%-22s %s" % (fixture, e))
                failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
