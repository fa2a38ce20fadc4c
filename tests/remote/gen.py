#!/usr/bin/env python3
"""tests/remote/gen.py DIR - the files the remote test serves, written with the standard library alone.

big.safetensors: 24 float32 tensors of 256 KiB (6 MiB of data), with __metadata__;
sharded/: the same tensors in two shards and their model.safetensors.index.json;
big.gguf: GGUF v3, a few metadata keys and 8 float32 tensors of 256 KiB;
many.safetensors: 20,000 tensors of 4 float32 (a 1.6 MB header, as bench's small20k.pt has a big directory).
(The torch zip and the .npy are made from big.safetensors by tinspect convert.)
"""
import json
import os
import struct
import sys

N = 24
ELEMS = 65536


def tensors(first, count):
    out = []
    for i in range(first, first + count):
        data = struct.pack("<%df" % ELEMS, *[float(i + (j % 7)) for j in range(ELEMS)]) if i < 2 else \
            (struct.pack("<f", float(i)) * ELEMS)
        out.append(("layers.%d.weight" % i, [256, 256], data))
    return out


def write_safetensors(path, items, metadata):
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, shape, data in items:
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, data in items:
            f.write(data)


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, items):
    kv = [("general.architecture", 8, gguf_string("llama")), ("general.name", 8, gguf_string("remote-test")),
          ("general.alignment", 4, struct.pack("<I", 32))]
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(items), len(kv)))
    for key, kind, value in kv:
        out += gguf_string(key) + struct.pack("<I", kind) + value
    offset = 0
    for name, shape, data in items:
        out += gguf_string(name) + struct.pack("<I", len(shape))
        for d in reversed(shape):
            out += struct.pack("<Q", d)
        out += struct.pack("<IQ", 0, offset)
        offset += len(data) + (-len(data) % 32)
    out += b"\0" * (-len(out) % 32)
    for _, _, data in items:
        out += data + b"\0" * (-len(data) % 32)
    with open(path, "wb") as f:
        f.write(out)


def main():
    d = sys.argv[1]
    os.makedirs(os.path.join(d, "sharded"), exist_ok=True)
    items = tensors(0, N)
    write_safetensors(os.path.join(d, "big.safetensors"), items, {"format": "pt", "origin": "tests/remote"})
    half = N // 2
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    write_safetensors(os.path.join(d, "sharded", names[0]), items[:half], {"format": "pt"})
    write_safetensors(os.path.join(d, "sharded", names[1]), items[half:], {"format": "pt"})
    index = {"metadata": {"total_size": sum(len(x[2]) for x in items)},
             "weight_map": {x[0]: names[0 if i < half else 1] for i, x in enumerate(items)}}
    with open(os.path.join(d, "sharded", "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    write_gguf(os.path.join(d, "big.gguf"), tensors(0, 8))
    many = [("blocks.%d.layer.%d.weight" % (i // 100, i % 100), [4], struct.pack("<4f", i, i, i, i))
            for i in range(20000)]
    write_safetensors(os.path.join(d, "many.safetensors"), many, None)


main()
