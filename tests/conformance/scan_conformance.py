#!/usr/bin/python3
"""
Conformance test: `tinspect scan` verdicts against torch.load(weights_only=True).

Usage:  /usr/bin/python3 tests/conformance/scan_conformance.py [./tinspect] [-v]

Takes every .pt/.pth file in fixtures/ (and fixtures/training_args.bin),
fixtures/broken/ and, of
fixtures/malicious/, the torch zips and legacy torch.save files (not the bare
pickles, which torch.load does not take).  For each file it runs
`tinspect scan FILE`. It also runs, in a child process of its own,
torch.load(FILE, map_location='cpu', weights_only=True) (never a plain
torch.load). Then it compares the two:

  safe        torch must load it.  A refusal on security grounds (a global or
              call outside the allow-list) is a disagreement.
  dangerous   torch must refuse it, for whatever reason.
  unknown     torch must refuse it: a global tinspect does not allow, torch
              should not allow either.
  suspicious, unreadable
              no requirement on torch; reported as skipped.

Not held against tinspect (reported as skipped, with the reason):
  - torch fails for a reason that is not security: a corrupt file, a missing
    record, or one of the fixtures/broken/ files that are broken on purpose;
  - torch 1.13 limitations: a global that PyTorch 2.x allows but 1.13 does not
    (bfloat16, _rebuild_qtensor, _codecs.encode, _rebuild_tensor_v3, ...), and
    opcodes the 1.13 weights_only unpickler lacks (BINFLOAT, protocol 3+).
    1.13 also hands TorchScript archives to torch.jit.load, whatever
    weights_only says (2.x refuses them), so those are not loaded at all;
  - a dangerous archive whose payload torch never reads (a pickle in a record
    it does not open): fixtures/gen_malicious.py's TORCH_NEVER_READS.

Also checks that tinspect's exit status matches the verdict (0 safe; 1
unknown, suspicious, dangerous; 3 unreadable), and that /tmp/tinspect_pwned,
which every payload in fixtures/ would create, is absent before and after.
Prints one line per file and "N agreed, M disagreed, K skipped"; exits 1 on
any disagreement.  Prints "skipped" and exits 0 when torch is not importable.
"""
import concurrent.futures
import glob
import json
import os
import pickletools
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "fixtures")
sys.path.insert(0, FIXTURES)
import gen_broken  # noqa: E402  (docstrings: why each broken file fails)
import gen_malicious  # noqa: E402  (TORCH_NEVER_READS)

PWNED = gen_malicious.PWNED
LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
EXIT_FOR = {"safe": 0, "unknown": 1, "suspicious": 1, "dangerous": 1, "unreadable": 3, "not-a-model": 0}

# fixtures/broken/ files that torch refuses for security reasons; the others
# are broken on purpose, and torch failing on them says nothing about safety.
BROKEN_FOR_SECURITY = {"os_system.pt", "unsupported_global.pt"}

LOAD_CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import torch
try:
    torch.load(sys.argv[1], map_location="cpu", weights_only=True)
    print(json.dumps({"loaded": True}))
except BaseException as e:
    text = " ".join(str(e).split())
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1].strip()
    print(json.dumps({"loaded": False, "error": type(e).__name__ + ": " + text[:300]}))
"""

# Refusals that are torch's allow-list at work (1.13 and 2.x wording).
SECURITY_REFUSALS = (
    "Unsupported class", "Unsupported global", "Trying to instantiate unsupported class",
    "Trying to call reduce for unrecognized function", "Can only build", "Can only append",
    "Can only extend", "Only persistent_load of storage", "persistent_load id must be",
    "is blocked", "weights_only=True`` with TorchScript",
)

# Globals PyTorch 2.x's weights_only allow-list has and 1.13's lacks
# (torch/_weights_only_unpickler.py _get_allowed_globals; see
# shared/reference/torch-formats.md section 4).  1.13 already allows every
# typed storage class (torch.FloatStorage, ...); dtypes are matched by name
# below.
ALLOWED_SINCE_2 = {
    "collections.Counter", "_codecs.encode", "builtins.bytearray", "builtins.set", "builtins.complex",
    "torch.device", "torch.UntypedStorage", "torch._tensor._rebuild_from_type_v2",
    "torch._utils._rebuild_qtensor", "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_tensor_v3", "torch._utils._rebuild_nested_tensor",
    "torch._utils._rebuild_wrapper_subclass", "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_xla_tensor", "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch.per_tensor_affine", "torch.per_channel_affine", "torch.per_tensor_symmetric",
    "torch.per_channel_symmetric", "torch.per_channel_affine_float_qparams",
}
DTYPE_NAME = re.compile(r"^torch\.(bool|u?int(8|16|32|64|[1-7])|bfloat16|float(16|32|64)|complex(32|64|128)|"
                        r"q(u?int8|int32|uint4x2|uint2x4)|float8_\w+|float4_\w+|bits\w+)$")
OPCODE_NAMES = {op.code: op.name for op in pickletools.opcodes}


def allowed_since_2(name):
    return name in ALLOWED_SINCE_2 or bool(DTYPE_NAME.match(name))


def classify_refusal(error):
    """('security' | 'limitation' | 'other', reason) for torch's error text."""
    m = re.search(r"Unsupported operand (\d+)", error)
    if m:
        code = chr(int(m.group(1)))
        return "limitation", f"the 1.13 weights_only unpickler has no opcode {OPCODE_NAMES.get(code, repr(code))}"
    m = (re.search(r"Unsupported class (\S+)", error)
         or re.search(r"Trying to instantiate unsupported class <class '([^']+)'>", error))
    if m and allowed_since_2(m.group(1)):
        return "limitation", f"{m.group(1)} is allowed since PyTorch 2.x, not by 1.13"
    if any(s in error for s in SECURITY_REFUSALS):
        return "security", error
    return "other", error


def candidates():
    """(path relative to the repo root, group) for every file to compare."""
    files = []
    for pattern in ("*.pt", "*.pth"):
        files += [(p, "fixtures") for p in glob.glob(os.path.join(FIXTURES, pattern))]
        files += [(p, "broken") for p in glob.glob(os.path.join(FIXTURES, "broken", pattern))]
        for p in glob.glob(os.path.join(FIXTURES, "malicious", pattern)):
            with open(p, "rb") as f:
                head = f.read(len(LEGACY_MAGIC))
            if head.startswith(b"PK\x03\x04") or head == LEGACY_MAGIC:
                files.append((p, "malicious"))
    # a Hugging Face training_args.bin: Enum members by value, unknown (they need transformers)
    files.append((os.path.join(FIXTURES, "training_args.bin"), "fixtures"))
    # the same as Python 3.11+ writes it: Enum members by name, getattr(cls, 'NAME'), unknown too
    files.append((os.path.join(FIXTURES, "training_args_py311.bin"), "fixtures"))
    return sorted((os.path.relpath(p, ROOT), group) for p, group in files)


def is_torchscript(path):
    """What 1.13's _is_torchscript_zip sees: a zip with a constants.pkl record."""
    with open(path, "rb") as f:
        data = f.read()
    return data.startswith(b"PK\x03\x04") and b"/constants.pkl" in data


def scan(binary, path):
    """(verdict or None, problem or None) from `tinspect scan PATH`."""
    p = subprocess.run([binary, "scan", path], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                       env=dict(os.environ, LC_ALL="C"), timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    line = re.compile(re.escape(path) + r": verdict: ([\w-]+) \(\d+ findings?\)")
    verdicts = [m.group(1) for m in map(line.fullmatch, out.splitlines()) if m]
    if not verdicts:
        err = p.stderr.decode("utf-8", "replace").strip()
        return None, f"no '{path}: verdict: ...' line (exit {p.returncode}{': ' + err if err else ''})"
    verdict = verdicts[-1]
    if EXIT_FOR.get(verdict) != p.returncode:
        return verdict, f"exit status {p.returncode} for verdict {verdict}, want {EXIT_FOR.get(verdict)}"
    return verdict, None


def torch_load(path):
    """{'loaded': bool, 'error': text} from a child process."""
    try:
        p = subprocess.run([sys.executable, "-c", LOAD_CHILD, path], cwd=ROOT, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=180,
                           env=dict(os.environ, TORCH_FORCE_WEIGHTS_ONLY_LOAD="1", OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return {"loaded": False, "error": "timeout: torch.load took over 180 s"}
    lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
    if lines:
        try:
            return json.loads(lines[-1])
        except ValueError:
            pass
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    return {"loaded": False, "error": f"child exited {p.returncode}: {err[-1] if err else 'no output'}"}


BROKEN_WHY = {name: build.__doc__.splitlines()[0] for name, build in gen_broken.FILES}


def compare(binary, path, group):
    """(outcome, verdict, what torch did, reason): outcome is agree, disagree or skip."""
    name = os.path.basename(path)
    verdict, problem = scan(binary, path)
    if problem:
        return "disagree", verdict or "-", "-", problem
    if is_torchscript(path):
        return "skip", verdict, "not loaded", ("1.13 hands TorchScript archives to torch.jit.load whatever "
                                               "weights_only says (2.x refuses them)")
    result = torch_load(path)
    if verdict == "not-a-model":  # text: torch.load must fail on it too, for whatever reason
        return ("disagree" if result["loaded"] else "agree"), verdict, \
            ("loaded" if result["loaded"] else "refused"), "tinspect says it is no model file"
    if result["loaded"]:
        if verdict in ("safe", "suspicious", "unreadable"):
            return ("agree" if verdict == "safe" else "skip"), verdict, "loaded", (
                "" if verdict == "safe" else f"no requirement on torch.load for {verdict}")
        if verdict == "dangerous" and group == "malicious" and name in gen_malicious.TORCH_NEVER_READS:
            return "skip", verdict, "loaded", gen_malicious.TORCH_NEVER_READS[name]
        return "disagree", verdict, "loaded", f"tinspect says {verdict}, yet torch.load(weights_only=True) loads it"
    kind, reason = classify_refusal(result["error"])
    if verdict == "dangerous":
        return "agree", verdict, "refused", reason
    if verdict in ("suspicious", "unreadable"):
        return "skip", verdict, "refused", f"no requirement on torch.load for {verdict} ({reason})"
    if kind == "limitation":
        return "skip", verdict, "refused", "torch 1.13 limitation: " + reason
    if kind == "other":
        if group == "broken" and name not in BROKEN_FOR_SECURITY:
            reason = f"broken on purpose ({BROKEN_WHY.get(name, '?')}): {reason}"
        return "skip", verdict, "refused", "not a security refusal: " + reason
    if verdict == "unknown":
        return "agree", verdict, "refused", reason
    return "disagree", verdict, "refused", f"tinspect says safe, torch refuses on security grounds: {reason}"


def main(argv):
    args = [a for a in argv[1:] if a != "-v"]
    verbose = "-v" in argv[1:]
    binary = os.path.abspath(args[0] if args else os.path.join(ROOT, "tinspect"))
    if not os.access(binary, os.X_OK):
        print(f"scan conformance: '{binary}' is not an executable", file=sys.stderr)
        return 2
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:
        print(f"scan conformance: skipped (torch is not importable with {sys.executable})")
        return 0
    if os.path.exists(PWNED):
        print(f"scan conformance: {PWNED} exists before the run; remove it first", file=sys.stderr)
        return 1

    files = candidates()
    counts = {"agree": 0, "disagree": 0, "skip": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2)) as pool:
        results = pool.map(lambda f: compare(binary, *f), files)
        for (path, _), (outcome, verdict, loaded, reason) in zip(files, results):
            counts[outcome] += 1
            if outcome == "agree" and not verbose:
                reason = ""
            print(f"{outcome:9} {verdict:10} {loaded:10} {path}" + (f"\n          {reason}" if reason else ""))

    if os.path.exists(PWNED):
        counts["disagree"] += 1
        print(f"disagree  {PWNED} exists: a payload ran during the run (tinspect or torch executed a pickle)")
    print(f"{counts['agree']} agreed, {counts['disagree']} disagreed, {counts['skip']} skipped")
    return 1 if counts["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
