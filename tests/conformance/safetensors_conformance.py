#!/usr/bin/python3
"""
Conformance test: the safetensors fixtures against PyTorch's own bytes.

Usage:  /usr/bin/python3 tests/conformance/safetensors_conformance.py [FIXTURE_DIR]

FIXTURE_DIR defaults to fixtures/safetensors. The unit tests show that
tinspect's reader and writer agree byte for byte with gen_safetensors.py,
and the generator checks itself against the byte vectors of the official
Rust tests. This script closes the loop on the data: for every tensor of
the valid fixtures whose dtype PyTorch 1.13 has, the bytes in the file must
equal torch.tensor(values, dtype).numpy().tobytes() (little-endian,
row-major: what safetensors.torch.save_file writes), with the values the
generator documents. It also checks, with an independent reader written
here in a few lines, the properties the official reader requires: header
size, '{' first, 8-byte alignment, exact tiling, each tensor's bytes as
numel * bits / 8 (the sub-byte F4 and F6 included), and the weight_map of
the sharded checkpoint against its shards; and the F4 fixture's values,
which torch 1.13 cannot read, by the OCP E2M1 table.

Needs Debian's python3-torch (1.13); prints "skipped" and exits 0 without it.
Exits 1 on any mismatch.
"""

import json
import os
import struct
import sys

try:
    import torch
except ImportError:  # pragma: no cover
    print("safetensors conformance: skipped (python3-torch is not installed)")
    sys.exit(0)

# The safetensors dtype names that torch 1.13 has (the Python binding's mapping).
TORCH = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool, "C64": torch.complex64,
}

# gen_safetensors.py multi_dtype(), with_metadata() and the shards, as torch values.
VALUES = {
    "multi_dtype.safetensors": {
        "f32.matrix": ([[-1, -0.5, 0], [0.5, 1, 1.5]], "F32"),
        "f64.vector": ([0.0, 0.25, 0.5, 0.75], "F64"),
        "f16": ([1.0, -2.0, 0.5], "F16"),
        "bf16": ([[1.0, -1.5], [256.0, 0.125]], "BF16"),
        "i64": ([-2**40, 0, 7], "I64"),
        "i32": ([[-1, 2], [-3, 4]], "I32"),
        "i16": ([-5, -4, -3, -2, -1], "I16"),
        "i8": ([-128, -1, 0, 127], "I8"),
        "u8": ([0, 128, 255], "U8"),
        "bool": ([True, False, False, True], "BOOL"),
        "c64": ([1 + 2j, -3 - 4j], "C64"),
        "scalar": (3.5, "F32"),
        "empty": (torch.empty(0, 3), "F32"),
        "empty_i64": (torch.empty(2, 0, dtype=torch.int64), "I64"),
    },
    "with_metadata.safetensors": {
        "weight": ([[1, 2], [3, 4]], "F32"),
        "bias": ([0.5, -0.5], "F32"),
        "caf\u00e9.\"odd\"\tname": ([42], "U8"),
    },
    "hf/model-00001-of-00002.safetensors": {
        "embed.weight": ([[0, 1], [2, 3], [4, 5], [6, 7]], "F32"),
        "layers.0.weight": ([[1, 0], [0, 1]], "F32"),
    },
    "hf/model-00002-of-00002.safetensors": {
        "layers.1.weight": ([[2, 0], [0, 2]], "F32"),
        "head.weight": ([[1, 2], [3, 4], [5, 6]], "F16"),
        "head.bias": ([0, 0, 1], "F16"),
    },
}

# Bits per element, tensor.rs Dtype::bitsize: what each tensor's data_offsets
# must span (numel * bits / 8, a whole number of bytes: MisalignedSlice).
BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8,
    "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16,
    "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64,
    "U64": 64,
}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def torch_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)  # numpy has no bfloat16; same bits
    return t.numpy().tobytes()


def read(path):
    """An independent reader of the layout: returns (header dict, data bytes)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    text = blob[8:8 + n]
    if not text.lstrip(b" \t\r\n").startswith(b"{"):
        fail("%s: header does not start with '{'" % path)
    header = json.loads(text.decode("utf-8"))
    data = blob[8 + n:]
    if (8 + n) % 8:
        fail("%s: data starts at %d, not 8-aligned" % (path, 8 + n))
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k)
                   for k, v in header.items() if k != "__metadata__")
    at = 0
    for begin, end, name in spans:
        if begin != at:
            fail("%s: '%s' starts at %d, want %d" % (path, name, begin, at))
        at = end
        entry = header[name]
        numel = 1
        for d in entry["shape"]:
            numel *= d
        bits = numel * BITS.get(entry["dtype"], 0)
        if bits % 8 or bits // 8 != end - begin:
            fail("%s: '%s' is %d elements of %s in %d bytes" % (path, name, numel, entry["dtype"], end - begin))
    if at != len(data):
        fail("%s: tensors end at %d, the data at %d" % (path, at, len(data)))
    return header, data


def check_values(directory):
    for file, tensors in VALUES.items():
        path = os.path.join(directory, file)
        header, data = read(path)
        for name, (values, dtype) in tensors.items():
            entry = header.get(name)
            if entry is None:
                fail("%s: no tensor '%s'" % (file, name))
                continue
            want = values if isinstance(values, torch.Tensor) else torch.tensor(values, dtype=TORCH[dtype])
            if entry["dtype"] != dtype:
                fail("%s: '%s' dtype %s, want %s" % (file, name, entry["dtype"], dtype))
            if list(want.shape) != entry["shape"]:
                fail("%s: '%s' shape %s, torch says %s" % (file, name, entry["shape"], list(want.shape)))
            begin, end = entry["data_offsets"]
            if data[begin:end] != torch_bytes(want):
                fail("%s: bytes of '%s' differ from torch's" % (file, name))
            # And back: the file's bytes, read as torch would, are the values.
            if end > begin:
                got = torch.frombuffer(bytearray(data[begin:end]), dtype=TORCH[dtype]).reshape(want.shape)
                if not torch.equal(got, want):
                    fail("%s: '%s' reads back as %s" % (file, name, got))


def check_index(directory):
    hf = os.path.join(directory, "hf")
    with open(os.path.join(hf, "model.safetensors.index.json")) as f:
        index = json.load(f)
    total = 0
    held = {}
    for shard in sorted(set(index["weight_map"].values())):
        header, data = read(os.path.join(hf, shard))
        total += len(data)
        for name in header:
            if name != "__metadata__":
                held[name] = shard
    if held != index["weight_map"]:
        fail("hf: the weight_map does not match the shards")
    if index["metadata"]["total_size"] != total:
        fail("hf: total_size %d, the shards hold %d" % (index["metadata"]["total_size"], total))


# OCP MX v1.0 FP4 (E2M1): the 8 magnitudes of codes 0..7; bit 3 is the sign.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def check_e2m1(directory):
    """torch 1.13 has no float4: decode subbyte.safetensors' mx.f4 by the OCP
    table, two elements a byte, the low nibble first, and compare with the
    values gen_safetensors.py documents (0 ... 6, then -0 ... -6)."""
    header, data = read(os.path.join(directory, "subbyte.safetensors"))
    begin, end = header["mx.f4"]["data_offsets"]
    got = []
    for byte in data[begin:end]:
        for code in (byte & 0xF, byte >> 4):
            got.append(-E2M1[code & 7] if code & 8 else E2M1[code])
    want = E2M1 + [-v for v in E2M1]
    if got != want or header["mx.f4"]["shape"] != [4, 4]:
        fail("subbyte.safetensors: mx.f4 decodes to %s" % got)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "fixtures/safetensors"
    check_values(directory)
    check_index(directory)
    layout_only = ("rust_vector", "unsorted", "leading_space", "empty", "multi_dtype", "subbyte",
                   "subbyte_changed", "subbyte_small")
    for name in layout_only:
        read(os.path.join(directory, name + ".safetensors"))
    check_e2m1(directory)
    if failures:
        print("safetensors conformance: %d failures" % len(failures))
        sys.exit(1)
    files = set(VALUES) | {name + ".safetensors" for name in layout_only}
    print("safetensors conformance: ok (%d files)" % len(files))


if __name__ == "__main__":
    main()
