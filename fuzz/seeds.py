#!/usr/bin/python3
"""seeds.py - the fuzzing corpora and dictionaries, made from the fixtures.

usage: python3 fuzz/seeds.py OUT        (make fuzz passes build/fuzz)

Writes, from the repository the script lives in:

  OUT/corpus/pickle/       the data.pkl of every fixture that is a zip, and
                           pickles of assorted Python values, protocols 0-5
  OUT/corpus/checkpoint/   fixtures/*.pt and fixtures/broken/*, and a copy of
                           training_ckpt.pt with deflated records (libzip)
  OUT/corpus/safetensors/  every file under fixtures/safetensors/ but the
                           generator and the README (shard indexes included)
  OUT/corpus/gguf/         fixtures/gguf/**/*.gguf (the damaged ones too)
  OUT/corpus/model/        fixtures/models/*.json, tests/cli/models/*.json,
                           and one small description per operator and module
                           signature found in src/ops/ and src/nn/
  OUT/corpus/dcp/         the .metadata of fixtures/dcp*/ and fixtures/dcp_broken/*/
  OUT/dict/HARNESS.dict    libFuzzer dictionaries: pickle globals in both
                           GLOBAL and STACK_GLOBAL spelling, zip signatures
                           and record names, safetensors and index keys and
                           dtypes, description keys, operator, module and
                           argument names

Seeds are written under stable names and rewritten each time; inputs that
libFuzzer added to a corpus folder are left alone, so the corpus keeps
growing across local runs. Needs only the standard library.
"""

import collections
import glob
import io
import json
import os
import pickle
import re
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)


def rel(pattern):
    return sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))


def seed_name(path):
    """fixtures/broken/bad_opcode.pt -> broken-bad_opcode.pt"""
    r = os.path.relpath(path, ROOT).replace(os.sep, "-")
    return r[len("fixtures-"):] if r.startswith("fixtures-") else r


# ---- pickle ----------------------------------------------------------------


class Point:
    """A class of this module: pickles name it with GLOBAL/STACK_GLOBAL, then BUILD."""

    def __init__(self, x, y):
        self.x, self.y = x, y


class Slots:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a, self.b = 1, [2]


def python_values():
    shared = [1, 2, 3]
    cyclic = [0]
    cyclic.append(cyclic)
    return {
        "none": None,
        "bools": (True, False),
        "ints": [0, 1, -1, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)],
        "bigints": [2**64, -(2**64) - 1, 2**200, -(2**521)],
        "floats": [0.0, -0.0, 1.5, 1e308, float("inf"), float("-inf"), float("nan")],
        "complex": complex(1.5, -2.0),
        "strs": ["", "a", "é", "日本", "x" * 300, "tab\tnl\n"],
        "bytes": [b"", b"\x00\xff", b"y" * 300],
        "bytearray": bytearray(b"ab\x00"),
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
        "dict": {"k": 1, 2: "v", (1, 2): None},
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
        "sets": [set(), {1, 2}, frozenset({"x"})],
        "shared": [shared, shared],
        "cyclic": cyclic,
        "object": Point(1, [2.5]),
        "slots": Slots(),
        "nested": [[[[[[[[[[1]]]]]]]]]],
        "big_list": list(range(1100)),
        "big_dict": {str(i): i for i in range(1100)},
    }


def pickle_seeds(out):
    seeds = {}
    for path in rel("fixtures/*.pt") + rel("fixtures/broken/*"):
        try:
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if info.filename.endswith("data.pkl"):
                        seeds["data-" + os.path.basename(path) + ".pkl"] = z.read(info)
        except (zipfile.BadZipFile, OSError, ValueError):
            pass  # not a zip: nothing to take out
    values = python_values()
    for proto in range(0, pickle.HIGHEST_PROTOCOL + 1):
        picklable = {}
        for key, value in values.items():
            try:
                seeds["py-%s-p%d.pkl" % (key, proto)] = pickle.dumps(value, protocol=proto)
                picklable[key] = value
            except TypeError:
                pass  # __slots__ without __getstate__ needs protocol 2
        seeds["py-all-p%d.pkl" % proto] = pickle.dumps(picklable, protocol=proto)
    if pickle.HIGHEST_PROTOCOL >= 5:
        seeds["py-picklebuffer-p5.pkl"] = pickle.dumps(pickle.PickleBuffer(bytearray(b"buf")), protocol=5)
    for name, data in seeds.items():
        write(os.path.join(out, "corpus", "pickle", name), data)
    return len(seeds)


# Globals torch.save writes (torch/_utils.py, torch/serialization.py), and a
# few it must never call: the dictionary names them in both spellings.
PICKLE_GLOBALS = [
    ("torch._utils", "_rebuild_tensor"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_tensor_v3"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch._utils", "_rebuild_parameter_with_state"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"),
    ("torch._utils", "_rebuild_qtensor"),
    ("torch._utils", "_rebuild_sparse_tensor"),
    ("torch._utils", "_rebuild_sparse_csr_tensor"),
    ("torch._tensor", "_rebuild_from_type_v2"),
    ("torch.serialization", "_get_layout"),
    ("_codecs", "encode"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("builtins", "bytes"),
    ("__builtin__", "set"),
    ("torch", "Size"),
    ("torch", "device"),
    ("torch", "Tensor"),
    ("torch.nn.parameter", "Parameter"),
    ("torch", "FloatStorage"),
    ("torch", "HalfStorage"),
    ("torch", "BFloat16Storage"),
    ("torch", "LongStorage"),
    ("torch", "BoolStorage"),
    ("torch", "QInt8Storage"),
    ("torch", "UntypedStorage"),
    ("torch", "float32"),
    ("torch", "float8_e4m3fn"),
    ("torch", "bits8"),
    ("torch", "per_tensor_affine"),
    ("torch", "per_channel_affine"),
    ("torch", "sparse_coo"),
    ("torch", "sparse_csr"),
    ("torch", "sparse_bsc"),
    ("argparse", "Namespace"),
    ("os", "system"),
]
PICKLE_WORDS = ["storage", "cpu", "cuda:0", "meta", "little", "0", "1", "_metadata", "version"]


def dict_line(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return '"' + "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else "\\x%02X" % b for b in data) + '"'


def short_str(s):
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b  # SHORT_BINUNICODE


def pickle_dict():
    lines = []
    for mod, name in PICKLE_GLOBALS:
        lines.append(dict_line("c%s\n%s\n" % (mod, name)))  # GLOBAL
        lines.append(dict_line(short_str(mod) + b"\x94" + short_str(name) + b"\x94\x93"))  # STACK_GLOBAL
        lines.append(dict_line(name))
    for w in PICKLE_WORDS:
        lines.append(dict_line(short_str(w)))
        lines.append(dict_line("X" + chr(len(w)) + "\0\0\0" + w))  # BINUNICODE
    # persistent id tuple, as torch writes it: MARK 'storage' ... TUPLE BINPERSID
    lines.append(dict_line(b"(" + short_str("storage") + b"ctorch\nFloatStorage\n" + short_str("0") + short_str("cpu") + b"K\x04tQ"))
    return lines


# ---- checkpoint ------------------------------------------------------------


def checkpoint_seeds(out):
    n = 0
    for path in rel("fixtures/*.pt") + rel("fixtures/*.ckpt") + rel("fixtures/broken/*"):
        with open(path, "rb") as f:
            write(os.path.join(out, "corpus", "checkpoint", seed_name(path)), f.read())
        n += 1
    # The same archive with deflated records: torch.save never writes them, others do.
    buf = io.BytesIO()
    with zipfile.ZipFile(os.path.join(ROOT, "fixtures", "training_ckpt.pt")) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    write(os.path.join(out, "corpus", "checkpoint", "deflated-training_ckpt.pt"), buf.getvalue())
    # A TorchScript archive with its code stored, not deflated: mutations then reach the class declarations.
    buf = io.BytesIO()
    with zipfile.ZipFile(os.path.join(ROOT, "fixtures", "jit_tied_scripted.pt")) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    write(os.path.join(out, "corpus", "checkpoint", "stored-jit_tied_scripted.pt"), buf.getvalue())
    return n + 2


ZIP_WORDS = [b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07",
             b"\x01\x00\x18\x00", b"\xff\xff\xff\xff", b"\xff\xff", b"FB"]
RECORD_WORDS = ["archive/", "data.pkl", "version", ".data/version", "byteorder", ".format_version",
                ".storage_alignment", ".data/serialization_id", "constants.pkl", "data/0", "data/",
                "little", "big", "3\n", "64",
                "code/__torch__.py", "class ", "(Module):", "__parameters__ = [", "__buffers__ = [",
                "__annotations__[\"", " : Tensor", " : Final[int] = ", "constants/0"]
# The legacy stream (fixtures/legacy_*.pt): its magic number pickle, protocol 1001,
# persistent-id tags and an int64 element count.
LEGACY_WORDS = [b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", b"\x80\x02M\xe9\x03.",
                b"Xstorage", b"Xmodule", b"little_endian", b"\x18\x00\x00\x00\x00\x00\x00\x00"]


def scan_seeds(out):
    n = 0
    for path in rel("fixtures/*.pt") + rel("fixtures/*.ckpt") + rel("fixtures/broken/*") + rel("fixtures/malicious/*"):
        with open(path, "rb") as f:
            write(os.path.join(out, "corpus", "scan", seed_name(path)), f.read())
        n += 1
    return n


def checkpoint_dict():
    return [dict_line(w) for w in ZIP_WORDS + RECORD_WORDS + LEGACY_WORDS] + pickle_dict()


# ---- safetensors -----------------------------------------------------------


def safetensors_seeds(out):
    n = 0
    for path in rel("fixtures/safetensors/**/*"):
        if os.path.isdir(path) or path.endswith((".py", ".md")):
            continue
        with open(path, "rb") as f:
            write(os.path.join(out, "corpus", "safetensors", seed_name(path)), f.read())
        n += 1
    return n


ST_DTYPES = ["BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64", "F16", "BF16", "F32", "F64", "C64",
             "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"]
ST_WORDS = ['"dtype"', '"shape"', '"data_offsets"', '"__metadata__"', '"weight_map"', '"metadata"',
            '"total_size"', '"format"', '"pt"', '"model.safetensors"', '".safetensors"', '".bin"', '".pth"',
            '"tie.', "\\u0000", "\\ud800", "[]", "{}", "null", "9007199254740993", "1e3", "-1", "  "]


def safetensors_dict():
    return [dict_line('"%s"' % d) for d in ST_DTYPES] + [dict_line(w) for w in ST_WORDS]


# ---- GGUF ------------------------------------------------------------------


def gguf_seeds(out):
    n = 0
    for path in rel("fixtures/gguf/**/*.gguf"):
        with open(path, "rb") as f:
            write(os.path.join(out, "corpus", "gguf", seed_name(path)), f.read())
        n += 1
    return n


# ---- HTTP answers, .netrc, cache files (fuzz_http.c) ---------------------

HTTP_SEEDS = {
    "range": b"\x80HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/100\r\nContent-Length: 10\r\n"
             b"ETag: \"6b0bf184-64\"\r\n\r\n\x090123456789",
    "redirect": b"\x40HTTP/1.1 302 Found\r\nLocation: http://cdn.example/x?sig=1\r\nETag: \"a\"\r\n\r\n"
                b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n\x03abcd",
    "not-modified": b"\x10HTTP/1.1 304 Not Modified\r\nETag: W/\"x\"\r\n"
                    b"Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n",
    "netrc": b"machine example.com login me password \"two words\"\nmacdef m\nx\n\ndefault login a password b\n",
    "head": b"tinspect cache 1\nurl http://h/a\nvalidator \"1\"\nsize 10\ncheck 0000000000000000\n",
}
HTTP_WORDS = ["HTTP/1.1 ", "HTTP/2 ", " 206 ", " 200 ", " 304 ", " 416 ", "\\x0D\\x0A", "Content-Range: bytes ",
              "Content-Length: ", "ETag: ", "Last-Modified: ", "X-Error-Code: ", "bytes */0", "machine", "login",
              "password", "default", "macdef", "tinspect cache 1\\x0A", "validator ", "TICACHE1",
              "18446744073709551615", "-1"]


def http_seeds(out):
    for name, data in HTTP_SEEDS.items():
        write(os.path.join(out, "corpus", "http", name), data)
    return len(HTTP_SEEDS)


def http_dict():
    return ['"%s"' % w for w in HTTP_WORDS]


# ---- NumPy -----------------------------------------------------------------


def npy_seeds(out):
    n = 0
    for path in rel("fixtures/npy/*.np?") + rel("fixtures/npy/broken/*"):
        with open(path, "rb") as f:
            write(os.path.join(out, "corpus", "npy", seed_name(path)), f.read())
        n += 1
    return n


def gguf_dict():
    words = ["GGUF", "general.alignment", "general.architecture", "tokenizer.ggml.tokens"]
    ints = [b"\x03\x00\x00\x00", b"\x02\x00\x00\x00", b"\x09\x00\x00\x00", b"\x08\x00\x00\x00",
            b"\xff\xff\xff\xff\xff\xff\xff\x7f", b"\x00\x00\x00\x00\x00\x00\x00\x80", b"\x20\x00\x00\x00"]
    return [dict_line(w) for w in words] + [dict_line(b) for b in ints]


NPY_WORDS = [b"\x93NUMPY", "'descr'", "'fortran_order'", "'shape'", "True", "False", "'<f4'", "'>f8'", "'|b1'",
             "'|O'", "'<c16'", "'|V2'", "'<U3'", "[('x', '<f4')]", "()", "(0,)", "(3, 4)", "9223372036854775807",
             ".npy", "L,"]


def npy_dict():
    return [dict_line(w) for w in NPY_WORDS] + [dict_line(w) for w in ZIP_WORDS]


# ---- model descriptions ----------------------------------------------------


def signatures(pattern, first):
    """'name(params)' strings from the operator or module tables."""
    sigs = {}
    for path in rel(pattern):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r'"(' + first + r'[A-Za-z0-9_]*)\(([^"]*)\)"', text):
            sigs.setdefault(m.group(1), m.group(2))
    return sigs


def split_params(text):
    params, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur.strip())
    out = []
    for p in params:
        if p == "*":
            continue
        decl = p.split("=", 1)[0].strip().rsplit(" ", 1)
        if len(decl) == 2:
            out.append((decl[0], decl[1], "=" in p))
    return out


def value_for(typ, inputs):
    """A plausible value for a required argument, by its declared type."""
    base = typ.rstrip("?")
    if base.startswith("Tensor[]"):
        return [inputs[0], inputs[1]]
    if base.startswith("Tensor"):
        return inputs.pop(0) if len(inputs) > 2 else inputs[0]
    if "[]" in base:
        return [2]
    if base.startswith("int") or base == "Scalar":
        return 1
    if base.startswith("float"):
        return 0.5
    if base == "bool":
        return False
    if base == "str":
        return "none"
    if base == "ScalarType":
        return "float32"
    return None


def op_descriptions(ops):
    for name, params in sorted(ops.items()):
        for rank, shape in (("r4", ["N", 4, 8, 8]), ("r2", [4, 8])):
            inputs = ["x", "y", "z", "x"]
            args, kwargs = [], {}
            for typ, pname, has_default in split_params(params):
                if has_default:
                    continue
                v = value_for(typ, inputs)
                if v is None:
                    break
                args.append(v)
            desc = {
                "inputs": {n: {"shape": shape} for n in ("x", "y", "z")},
                "graph": [dict({"out": "out", "op": name, "args": args}, **kwargs)],
                "outputs": ["out"],
            }
            yield "op-%s-%s.json" % (name, rank), desc


# Modules whose signatures the tables build with macros, so the scan misses them.
MODULE_TEMPLATES = {
    "Conv2d": {"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": 1},
    "Conv1d": {"in_channels": 4, "out_channels": 6, "kernel_size": 3},
    "ConvTranspose2d": {"in_channels": 4, "out_channels": 6, "kernel_size": 2, "stride": 2},
    "BatchNorm2d": {"num_features": 4},
    "LayerNorm": {"normalized_shape": [8]},
    "GroupNorm": {"num_groups": 2, "num_channels": 4},
    "MaxPool2d": {"kernel_size": 2},
    "AvgPool2d": {"kernel_size": 2, "ceil_mode": True},
    "Embedding": {"num_embeddings": 10, "embedding_dim": 8},
    "LSTM": {"input_size": 8, "hidden_size": 6, "num_layers": 2, "batch_first": True, "bidirectional": True},
    "GRU": {"input_size": 8, "hidden_size": 6},
    "MultiheadAttention": {"embed_dim": 8, "num_heads": 2, "batch_first": True},
    "TransformerEncoderLayer": {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "batch_first": True},
    "Dropout": {"p": 0.1},
    "Upsample": {"scale_factor": 2, "mode": "nearest"},
}


def module_descriptions(modules):
    specs = dict(MODULE_TEMPLATES)
    for name, params in modules.items():
        if name in specs:
            continue
        ctor = {}
        for typ, pname, has_default in split_params(params):
            if not has_default:
                v = value_for(typ, ["x", "x", "x"])
                ctor[pname] = 4 if v == 1 else v
        specs[name] = ctor
    for name, ctor in sorted(specs.items()):
        shape = [2, 4, 8] if name in ("Embedding",) else [2, 4, 8, 8]
        if name in ("LSTM", "GRU", "MultiheadAttention", "TransformerEncoderLayer", "LayerNorm", "Linear"):
            shape = [2, 3, 8]
        if name == "Embedding":
            inputs = {"x": {"shape": shape, "dtype": "int64"}}
        else:
            inputs = {"x": {"shape": shape}}
        args = ["x", "x", "x"] if name == "MultiheadAttention" else ["x"]
        desc = {
            "inputs": inputs,
            "modules": {"m": dict({"type": name}, **ctor)},
            "graph": [{"out": "out", "call": "m", "args": args}],
        }
        yield "module-%s.json" % name, desc
    # containers, defs, config arithmetic and ties, which the fixtures use little
    yield "module-containers.json", {
        "config": {"d": 4, "h": "$d*2"},
        "inputs": {"x": {"shape": ["N", "$d"]}},
        "defs": {"Block": {"inputs": ["t"], "modules": {"fc": {"type": "Linear", "in_features": "$d", "out_features": "$d"}},
                           "graph": [{"out": "u", "call": "fc", "args": ["t"]}, {"out": "u", "op": "add", "args": ["u", "t"]}],
                           "outputs": ["u"]}},
        "modules": {"seq": {"type": "Sequential", "repeat": 2, "module": {"type": "Block"}},
                    "list": {"type": "ModuleList", "modules": [{"type": "Linear", "in_features": 4, "out_features": "$h"}]},
                    "dict": {"type": "ModuleDict", "modules": {"a": {"type": "ReLU"}}},
                    "head": {"type": "Linear", "in_features": 4, "out_features": 4, "bias": False}},
        "tied": {"head.weight": "seq.0.fc.weight"},
        "graph": [{"out": "h", "call": "seq", "args": ["x"]}, {"out": "g", "call": "list.0", "args": ["h"]},
                  {"out": "g", "call": "dict.a", "args": ["g"]}, {"out": "y", "call": "head", "args": ["h"]},
                  {"out": ["p", "q"], "op": "chunk", "args": ["g", 2], "dim": -1}],
        "outputs": ["y", "p"],
    }


def model_seeds(out):
    n = 0
    for path in rel("fixtures/models/*.json") + rel("tests/cli/models/*.json"):
        with open(path, "rb") as f:
            write(os.path.join(out, "corpus", "model", seed_name(path)), f.read())
        n += 1
    ops = signatures("src/ops/*.c", "[a-z_]")
    modules = signatures("src/nn/*.c", "[A-Z]")
    for name, desc in list(op_descriptions(ops)) + list(module_descriptions(modules)):
        write(os.path.join(out, "corpus", "model", name), json.dumps(desc, separators=(",", ":")) + "\n")
        n += 1
    return n, ops, modules


MODEL_KEYS = ["inputs", "modules", "graph", "outputs", "defs", "config", "tied", "type", "shape", "dtype",
              "out", "call", "op", "args", "repeat", "module", "Sequential", "ModuleList", "ModuleDict",
              "float16", "bfloat16", "int64", "bool", "N", "T", "$", "$(", ")//2", "*4", "%", "null", "true", "-1"]


def model_dict(ops, modules):
    words = set(MODEL_KEYS) | set(ops) | set(modules) | set(MODULE_TEMPLATES)
    for params in list(ops.values()) + list(modules.values()):
        for _, pname, _ in split_params(params):
            words.add(pname)
    return [dict_line('"%s"' % w) for w in sorted(words)]


# ---- DCP .metadata ---------------------------------------------------------


def dcp_seeds(out):
    n = 0
    for path in rel("fixtures/dcp*/.metadata") + rel("fixtures/dcp_broken/*/.metadata"):
        with open(path, "rb") as f:
            name = os.path.basename(os.path.dirname(path))
            write(os.path.join(out, "corpus", "dcp", "dcp-" + name + ".metadata"), f.read())
        n += 1
    return n


DCP_GLOBALS = [("torch.distributed.checkpoint.metadata", n) for n in (
    "Metadata", "TensorStorageMetadata", "ChunkStorageMetadata", "BytesStorageMetadata", "MetadataIndex",
    "TensorProperties", "_MEM_FORMAT_ENCODING", "StorageMeta")] + [
    ("torch.distributed._shard.sharded_tensor.metadata", "TensorProperties"),
    ("torch.distributed._shard.sharded_tensor.metadata", "MEM_FORMAT_ENCODING"),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"), ("torch", "Size"), ("torch", "float32"),
    ("torch.serialization", "_get_layout"), ("builtins", "getattr"), ("pathlib", "PosixPath")]
DCP_WORDS = ["state_dict_metadata", "storage_data", "planner_data", "storage_meta", "version", "properties",
             "size", "chunks", "offsets", "sizes", "fqn", "offset", "index", "relative_path", "length",
             "transform_descriptors", "__0_0.distcp", "__1_0.distcp", "torch.strided", "TORCH_CONTIGUOUS_FORMAT"]


def dcp_dict():
    lines = []
    for mod, name in DCP_GLOBALS:
        lines.append(dict_line("c%s\n%s\n" % (mod, name)))
        lines.append(dict_line(short_str(mod) + b"\x94" + short_str(name) + b"\x94\x93"))
    lines += [dict_line(short_str(w)) for w in DCP_WORDS]
    return lines + pickle_dict()


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python3 fuzz/seeds.py OUT\n")
        return 2
    out = sys.argv[1]
    counts = {
        "pickle": pickle_seeds(out),
        "checkpoint": checkpoint_seeds(out),
        "safetensors": safetensors_seeds(out),
        "scan": scan_seeds(out),
        "gguf": gguf_seeds(out),
        "npy": npy_seeds(out),
        "http": http_seeds(out),
    }
    counts["model"], ops, modules = model_seeds(out)
    counts["dcp"] = dcp_seeds(out)
    dicts = {
        "pickle": pickle_dict(),
        "checkpoint": checkpoint_dict(),
        "safetensors": safetensors_dict(),
        "model": model_dict(ops, modules),
        "scan": checkpoint_dict(),
        "dcp": dcp_dict(),
        "gguf": gguf_dict(),
        "npy": npy_dict(),
        "http": http_dict(),
    }
    for name, lines in dicts.items():
        write(os.path.join(out, "dict", name + ".dict"), "\n".join(lines) + "\n")
    print("seeds: " + ", ".join("%s %d" % (k, v) for k, v in counts.items()) +
          " (%d operator and %d module signatures)" % (len(ops), len(modules)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
