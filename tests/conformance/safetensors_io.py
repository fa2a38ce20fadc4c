"""A safetensors writer and reader for the fixture generators and conformance tests:
8-byte little-endian header length, the JSON header {name: {dtype, shape,
data_offsets}} (optional __metadata__ first), padded with spaces to a
multiple of 8, then each tensor's bytes (contiguous, in the given order).
Written from the specification so that tests need no safetensors package."""
import json
import struct

import torch

DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
          torch.uint8: "U8", torch.bool: "BOOL"}


def save_safetensors(tensors, path, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_safetensors(path, ties=False):
    """The file back as a plain dict (the header's order), as PyTorch sees it; with ties, also
    each name the metadata writes only as a tie ("tie.NAME": the name whose data it shares)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        raw = f.read()
    inverse = {v: k for k, v in DTYPES.items()}
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        dt = inverse[h["dtype"]]
        buf = bytearray(raw[a:b])
        t = torch.frombuffer(buf, dtype=dt) if buf else torch.empty(0, dtype=dt)
        out[name] = t.reshape(h["shape"]).clone()
    assert base > 0
    for k, v in (header.get("__metadata__", {}).items() if ties else ()):
        if k.startswith("tie."):
            out[k[4:]] = out[v]
    return out
