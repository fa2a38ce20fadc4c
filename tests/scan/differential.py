#!/usr/bin/python3
"""
Differential test: every global CPython's C unpickler asks for, tinspect scan names.

usage: python3 tests/scan/differential.py TINSPECT [--mutations N] [--seed S]
                                          [--corpus DIR]... [--keep DIR] [-v]

torch.load unpickles a checkpoint's data.pkl with CPython's C unpickler
(Modules/_pickle.c), reading an io.BytesIO: that reader, not pickletools,
decides what a file runs. This test runs each input through it with a
find_class that records the (module, name) it is asked for and returns an
inert stand-in class (nothing is imported, nothing runs), and through
`tinspect scan --json`, and fails when tinspect's findings miss a global the
C unpickler asked for, or when tinspect crashes or hangs.

Inputs:
  - every pickle the fixtures hold: data.pkl and every *.pkl record of each
    zip under fixtures/, each pickle of a legacy torch.save file and of a bare
    pickle file, fixtures/differential/* (inputs that once diverged, kept);
  - pickles of assorted Python values, protocols 0 to 5 (fuzz/seeds.py's);
  - the fuzz corpora given with --corpus (make fuzz passes build/fuzz/corpus/
    pickle and scan), each file taken as one pickle;
  - N mutations of those (default 3000, --seed fixes them): FRAMEs inserted
    with lengths that end inside an opcode, existing FRAME and counted
    lengths moved, memo indices changed, truncations, bytes flipped, and a
    GLOBAL/REDUCE spliced in at an opcode boundary, so that mutants name
    globals to be found.
Each input is scanned as torch.load reads it: as archive/data.pkl of a zip.
Python 2 names are compared both as written and as fix_imports maps them
(__builtin__.eval is builtins.eval).

Prints one line per divergence, then 'N inputs, K globals asked for, D
divergences'; exits 1 on any. --keep DIR writes each diverging input there
(default build/differential/). Standard library only; no torch.
"""
import argparse
import io
import json
import multiprocessing
import os
import pickle
import pickletools
import random
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import zipfile
import _compat_pickle

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "fuzz"))
import seeds  # noqa: E402  (python_values: the assorted values fuzz/seeds.py pickles)

LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
MAX_INPUT = 8 << 20  # bytes of one pickle taken as a seed
BATCH = 400  # files per tinspect run
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


# ---- the C unpickler, asked what it would import ----------------------------


class Inert:
    """What every global becomes: takes any call, state, item or persistent id, and does nothing."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return Inert()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, item):
        pass

    def extend(self, items):
        pass

    def add(self, item):
        pass


class Recorder(pickle.Unpickler):
    def __init__(self, f, asked):
        super().__init__(f)
        self.asked = asked

    def find_class(self, module, name):
        self.asked.append((module, name))
        return Inert

    def persistent_load(self, pid):
        return Inert()


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def child_init():
    """The C unpickler's worker: bounded memory, and an alarm for each input."""
    limit = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    devnull = os.open(os.devnull, os.O_WRONLY)  # what a half-built object prints as it is freed
    os.dup2(devnull, 2)
    signal.signal(signal.SIGALRM, on_alarm)


def ask_c_unpickler(data):
    """The (module, name) pairs the C unpickler's find_class is asked for, in order, and how the load ended."""
    asked = []
    signal.alarm(10)
    try:
        Recorder(io.BytesIO(data), asked).load()
        ended = "loaded"
    except Timeout:
        ended = "timed out"
    except RecursionError:
        ended = "raised RecursionError"
    except MemoryError:
        ended = "raised MemoryError"
    except Exception as e:  # noqa: BLE001  (every refusal is an answer)
        ended = "raised " + type(e).__name__
    finally:
        signal.alarm(0)
    return asked, ended


def fixed_imports(module, name):
    """What fix_imports makes of a Python 2 name (Lib/pickle.py find_class, protocol < 3)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


# ---- inputs ----------------------------------------------------------------


def pickles_of_stream(data):
    """The pickles one after another in data, as the legacy loader reads them (at most 8)."""
    out, f = [], io.BytesIO(data)
    while f.tell() < len(data) and len(out) < 8:
        start = f.tell()
        try:
            Recorder(f, []).load()
        except Exception:  # noqa: BLE001
            out.append(data[start:])
            break
        out.append(data[start:f.tell()])
    return out


def pickles_in_file(path, label, whole=False):
    """(name, bytes) for each pickle a file holds: a zip's *pkl records, a stream's pickles one after another
    (a legacy torch.save file's five), or, with whole, the file itself as one pickle."""
    with open(path, "rb") as f:
        head = f.read(16)
    try:
        if head.startswith(b"PK"):
            with zipfile.ZipFile(path) as z:
                return [(label + "!" + info.filename, z.read(info)) for info in z.infolist()
                        if info.filename.endswith("pkl") and info.file_size <= MAX_INPUT]
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError):
        pass  # a zip broken on purpose: its bytes are taken as they are
    with open(path, "rb") as f:
        data = f.read(MAX_INPUT)
    if whole:
        return [(label, data)]
    return [("%s#%d" % (label, k), p) for k, p in enumerate(pickles_of_stream(data))]


def fixture_pickles():
    """(name, bytes) for every pickle the fixtures hold."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "fixtures")):
        dirnames.sort()
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, ROOT)
            if os.path.getsize(path) > 64 << 20 or fn.endswith((".py", ".md", ".tsv", ".json", ".txt")):
                continue
            with open(path, "rb") as f:
                head = f.read(16)
            if head.startswith((b"PK", LEGACY_MAGIC)) or fn.endswith(".pkl") or "differential" in rel.split(os.sep):
                found += pickles_in_file(path, rel)
    return found


def value_pickles():
    out = []
    values = seeds.python_values()
    for proto in range(0, pickle.HIGHEST_PROTOCOL + 1):
        for key, value in values.items():
            try:
                out.append(("value:%s-p%d" % (key, proto), pickle.dumps(value, protocol=proto)))
            except TypeError:
                pass  # __slots__ without __getstate__ needs protocol 2
    return out


def corpus_pickles(folders):
    """Each file of each folder: a fuzz corpus's inputs are one pickle each; a peer's samples may be zips."""
    out = []
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        for fn in sorted(os.listdir(folder)):
            path = os.path.join(folder, fn)
            if os.path.isfile(path) and os.path.getsize(path) <= MAX_INPUT:
                with open(path, "rb") as f:
                    zipped = f.read(2) == b"PK"
                out += pickles_in_file(path, "corpus:" + fn, whole=not zipped)
    return out


# ---- mutations ---------------------------------------------------------------


COUNTED = {  # opcode: width of its length field (pickletools' argument descriptors)
    "BINUNICODE": 4, "SHORT_BINUNICODE": 1, "BINUNICODE8": 8, "BINBYTES": 4, "SHORT_BINBYTES": 1,
    "BINBYTES8": 8, "BYTEARRAY8": 8, "BINSTRING": 4, "SHORT_BINSTRING": 1, "LONG1": 1, "LONG4": 4,
}
MEMO = {"BINPUT": 1, "BINGET": 1, "LONG_BINPUT": 4, "LONG_BINGET": 4}
HIDDEN_CALLS = [
    b"cos\nsystem\nVid\n\x85R",
    b"cbuiltins\neval\nV1\n\x85R",
    b"\x8c\x08builtins\x8c\x04exec\x93\x8c\x011\x85R",
    b"c__builtin__\ngetattr\n",
    b"(Vx\nisubprocess\nPopen\n",
    b"\x8c\x05posix\x94\x8c\x06system\x94\x93",
]


def opcode_starts(data):
    """(offset, opcode name) of each opcode pickletools can read, up to where it cannot."""
    out = []
    try:
        for op, arg, pos in pickletools.genops(data):
            out.append((pos, op.name))
    except Exception:  # noqa: BLE001  (a broken seed still has a readable start)
        pass
    return out


def put_le(value, width):
    return (value % (1 << (8 * width))).to_bytes(width, "little")


def mutate(data, rng):
    """One mutant of data, and what was done."""
    ops = opcode_starts(data)
    kind = rng.choice(["frame", "frame", "frame", "frame_len", "counted", "memo", "truncate", "flip", "splice",
                       "splice_framed"])
    if not ops:
        kind = rng.choice(["truncate", "flip"])
    if kind in ("frame", "splice_framed"):
        at = rng.choice(ops)[0] if ops else 0
        if kind == "splice_framed":
            body = rng.choice(HIDDEN_CALLS)
            data = data[:at] + body + data[at:]
        # a frame that ends a few bytes before or after an opcode boundary, or on one
        later = [p for p, _ in ops if p > at] or [len(data)]
        end = rng.choice(later[:6]) + rng.choice([-3, -2, -1, -1, 0, 1, 2])
        length = max(0, end - at)
        return data[:at] + b"\x95" + struct.pack("<Q", length) + data[at:], "%s at %d, length %d" % (kind, at, length)
    if kind == "frame_len":
        frames = [p for p, n in ops if n == "FRAME"]
        if frames:
            at = rng.choice(frames)
            old = struct.unpack("<Q", data[at + 1:at + 9])[0]
            new = max(0, old + rng.choice([-5, -3, -2, -1, 1, 2, 3, 7]))
            return data[:at + 1] + struct.pack("<Q", new) + data[at + 9:], "FRAME at %d: %d -> %d" % (at, old, new)
        kind = "counted"
    if kind == "counted":
        counted = [(p, n) for p, n in ops if n in COUNTED]
        if counted:
            at, name = rng.choice(counted)
            w = COUNTED[name]
            old = int.from_bytes(data[at + 1:at + 1 + w], "little")
            new = max(0, old + rng.choice([-4, -2, -1, 1, 2, 5, 20]))
            return data[:at + 1] + put_le(new, w) + data[at + 1 + w:], "%s at %d: %d -> %d" % (name, at, old, new)
        kind = "memo"
    if kind == "memo":
        memo = [(p, n) for p, n in ops if n in MEMO]
        if memo:
            at, name = rng.choice(memo)
            w = MEMO[name]
            return data[:at + 1] + put_le(rng.randrange(0, 8), w) + data[at + 1 + w:], "%s at %d" % (name, at)
        kind = "splice"
    if kind == "splice":
        at = rng.choice(ops)[0]
        return data[:at] + rng.choice(HIDDEN_CALLS) + data[at:], "splice at %d" % at
    if kind == "truncate":
        cut = rng.randrange(0, max(1, len(data)))
        return data[:cut], "truncate at %d" % cut
    at = rng.randrange(0, max(1, len(data)))
    byte = rng.randrange(256)
    return data[:at] + bytes([byte]) + data[at + 1:], "byte %d = 0x%02x" % (at, byte)


# ---- tinspect ---------------------------------------------------------------


def as_torch_zip(data):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, body in (("archive/data.pkl", data), ("archive/version", b"3\n")):
            z.writestr(zipfile.ZipInfo(name, date_time=FIXED_TIME), body)
    return out.getvalue()


def tinspect_globals(tinspect, paths):
    """{path: set of (module, name) in its findings}, and failures (path: why); a batch that fails is run
    again file by file, so that one input's failure names that input alone."""
    named, failures = scan_batch(tinspect, paths)
    if failures and len(paths) > 1:
        named, failures = {}, {}
        for p in paths:
            n, f = scan_batch(tinspect, [p])
            named.update(n)
            failures.update(f)
    return named, failures


def scan_batch(tinspect, paths):
    named, failures = {}, {}
    try:
        run = subprocess.run([tinspect, "scan", "--json"] + paths, capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        return named, {p: "tinspect scan timed out on the batch" for p in paths}
    if run.returncode not in (0, 1, 3):
        why = "tinspect scan exited %d: %s" % (run.returncode, run.stderr.decode(errors="replace")[-300:])
        return named, {p: why for p in paths}
    try:
        doc = json.loads(run.stdout.decode("utf-8"))
    except ValueError as e:
        return named, {p: "tinspect scan --json printed no JSON (%s)" % str(e)[:80] for p in paths}
    for entry in doc.get("files", []):
        names = set()
        for f in entry.get("findings", []):
            if f.get("module") is not None and f.get("name") is not None:
                names.add((f["module"], f["name"]))
        named[entry["file"]] = names
    for p in paths:
        if p not in named:
            failures[p] = "tinspect scan --json has no entry for the file"
    return named, failures


def found(pair, names):
    """Whether tinspect named the global, as written or as fix_imports maps it; tinspect keeps a name up to
    its first NUL byte (no module or attribute name holds one)."""
    module, name = (part.split("\0")[0] for part in pair)
    return (module, name) in names or fixed_imports(module, name) in names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tinspect")
    ap.add_argument("--mutations", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--keep", default=os.path.join(ROOT, "build", "differential"))
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    tinspect = os.path.abspath(args.tinspect)

    base = fixture_pickles() + value_pickles() + corpus_pickles(args.corpus)
    rng = random.Random(args.seed)
    inputs = list(base)
    pool_for_mutation = [b for b in base if len(b[1]) <= 1 << 20]
    for i in range(args.mutations):
        name, data = rng.choice(pool_for_mutation)
        mutant, how = mutate(data, rng)
        inputs.append(("%s ~ %s" % (name, how), mutant))

    with multiprocessing.Pool(2, initializer=child_init) as pool:
        answers = pool.map(ask_c_unpickler, [d for _, d in inputs], chunksize=64)

    divergences, asked_total, ends = [], 0, {}
    with tempfile.TemporaryDirectory(prefix="tinspect-differential.") as work:
        paths = []
        for i, (_, data) in enumerate(inputs):
            path = os.path.join(work, "%06d.pt" % i)
            with open(path, "wb") as f:
                f.write(as_torch_zip(data))
            paths.append(path)
        for start in range(0, len(paths), BATCH):
            batch = paths[start:start + BATCH]
            named, failures = tinspect_globals(tinspect, batch)
            for k, path in enumerate(batch):
                i = start + k
                name, data = inputs[i]
                asked, ended = answers[i]
                asked_total += len(asked)
                ends[ended] = ends.get(ended, 0) + 1
                why = failures.get(path)
                missed = [] if why else [a for a in asked if not found(a, named.get(path, set()))]
                if why or missed:
                    divergences.append((name, data, why or "tinspect misses %s (the C unpickler %s)" % (
                        ", ".join("%s.%s" % m for m in missed), ended)))
                elif args.verbose:
                    print("ok    %s: %d globals (%s)" % (name, len(asked), ended))

    if divergences:
        os.makedirs(args.keep, exist_ok=True)
    for n, (name, data, why) in enumerate(divergences):
        kept = os.path.join(args.keep, "diverged-%04d.pkl" % n)
        with open(kept, "wb") as f:
            f.write(data)
        print("FAIL  %s: %s (input kept as %s)" % (name, why, os.path.relpath(kept, ROOT)))
    print("differential: %d inputs (%d from fixtures, values and corpora, %d mutations), %d globals asked for by "
          "the C unpickler, %d divergences; C unpickler: %s" % (
              len(inputs), len(base), len(inputs) - len(base), asked_total, len(divergences),
              ", ".join("%s %d" % kv for kv in sorted(ends.items()))))
    return 1 if divergences else 0


if __name__ == "__main__":
    sys.exit(main())
