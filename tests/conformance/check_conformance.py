#!/usr/bin/python3
"""
`tinspect check MODEL.json CHECKPOINT` must say what
`model.load_state_dict(sd, strict=...)` says for the same model and file.

Usage:  /usr/bin/python3 tests/conformance/check_conformance.py ./tinspect

Each model is built in real PyTorch (a small CNN with BatchNorm, a model
with a tied weight, one with a non-persistent buffer, torchvision's
resnet18 with weights=None) and described with the exporter's API
(tinspect_export.export) in a temporary folder. For each case a checkpoint
is written (torch.save, or a safetensors file from the small writer below),
PyTorch loads that same file into the model, and:

  - PyTorch raises:  tinspect's stdout starts with exactly str(e), exit 1;
  - PyTorch returns: tinspect's stdout starts with repr(result) --
    "<All keys matched successfully>", or "_IncompatibleKeys(...)" under
    --no-strict -- exit 0;

and, after an error, every stdout line after those starts with "note:"
or "ties: " (a tie the file breaks)
(after a success tinspect may say more). A case that needs
tinspect to find the state dict itself (nested under a key, a DDP
"module." or torch.compile "_orig_mod." prefix) must print a note naming
the key or prefix (its name without the dot: a flat "module."-prefixed
file and one nested under "module" have the same tensor names); PyTorch's
side is given the unwrapped state dict.

The cases: exact match; missing keys; unexpected keys (at the root and
inside a module); a size mismatch; several problems at once, in a file
whose keys are in reverse order (missing + unexpected in three modules + two
size mismatches in different modules: PyTorch orders each list by the
model, not the file); nested under each of "state_dict", "model",
"model_state_dict", "module", "ema" and "net"; the
"module." and "_orig_mod." prefixes (also with a missing key, and nested
and prefixed at once); a float16 checkpoint (PyTorch casts); --no-strict
with missing + unexpected keys, with none, and with a size mismatch (which
still raises); safetensors, exact and with problems; and model-specific
ones: a tied weight missing (a note says the tie would fill it), saved as
two tensors (it loads, and the note names the name whose values stay, which
PyTorch is asserted to keep), and as two tensors of different shapes (a
"ties:" line besides PyTorch's size mismatch), and as a safetensors file
holding the second name only as a "tie." in __metadata__, as tinspect
convert writes it (load_file does not return it: missing, with a note); a storage the file shares
between two names the model keeps apart (resnet18); a non-persistent buffer present in the file
(unexpected), a BatchNorm num_batches_tracked missing from a plain dict
(PyTorch fills it in: no _metadata means version 1) and from a state dict
that keeps _metadata (missing), a 1-element num_batches_tracked (PyTorch
takes element 0), and a description without "class" (named "Model").

Prints one line per case (ok NAME, or FAIL NAME with both texts), a
summary; exits 1 on any mismatch or when no case ran.
Needs python3-torch (1.13) and torchvision; prints "skipped" without them.
"""

import collections
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn as nn
    import torchvision
except ImportError:  # pragma: no cover
    print("check conformance: skipped (python3-torch or torchvision is not installed)")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
from tinspect_export import export  # noqa: E402
from safetensors_io import load_safetensors, save_safetensors  # noqa: E402

NESTING_KEYS = ("state_dict", "model", "model_state_dict", "module", "ema", "net")
PREFIXES = ("module.", "_orig_mod.")


# ---- models -------------------------------------------------------------

class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class TiedLM(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, idx):
        return self.lm_head(torch.tanh(self.proj(self.embed(idx))))


class ScaledMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.register_buffer("scale", torch.full((16,), 0.5), persistent=False)
        self.register_buffer("offset", torch.zeros(4))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)) * self.scale) + self.offset


def models():
    """[(name, model, exporter inputs)]"""
    torch.manual_seed(0)
    return [("cnn", SmallCNN().eval(), {"x": "N,3,16,16"}),
            ("tied", TiedLM().eval(), {"idx": ("N,T", "int64")}),
            ("nonpersistent", ScaledMLP().eval(), {"x": "N,8"}),
            ("resnet18", torchvision.models.resnet18(weights=None).eval(), {"x": "N,3,224,224"})]


# ---- safetensors --------------------------------------------------------

# ---- checkpoints ----------------------------------------------------------

def copy_sd(sd, items=None):
    """An OrderedDict of items (default sd's), keeping sd's _metadata, as a
    state dict edited in Python and saved again keeps it."""
    out = collections.OrderedDict(sd.items() if items is None else items)
    meta = getattr(sd, "_metadata", None)
    if meta is not None:
        out._metadata = meta
    return out


def plain(sd):
    """A plain dict: no _metadata (as a checkpoint built by hand)."""
    return {k: v for k, v in sd.items()}


def strip(sd, prefix):
    """What PyTorch's consume_prefix_in_state_dict_if_present leaves."""
    out = copy_sd(sd)
    torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(out, prefix)
    return out


def grown(t):
    """t with its first dimension one larger."""
    shape = list(t.shape)
    shape[0] += 1
    return torch.zeros(shape, dtype=t.dtype)


def owner(key):
    return key.rsplit(".", 1)[0] if "." in key else ""


def cases(name, model):
    """[(case, checkpoint object to save, how: "torch"/"safetensors",
    flags, unwrap: checkpoint -> what PyTorch loads, strict, note words)]"""
    sd = model.state_dict()
    keys = list(sd)
    weights = [k for k in keys if sd[k].dim() >= 1]
    first_w, last_w = weights[0], weights[-1]
    # two tensors of different modules, for the ordering of size mismatches
    second_w = next(k for k in reversed(weights) if owner(k) != owner(first_w))
    mid = keys[len(keys) // 2]
    inner = next(owner(k) for k in keys if owner(k))  # the first submodule with a tensor
    deep = owner(mid) or inner
    out = []

    def add(case, obj, how="torch", flags=(), unwrap=None, strict=True, note=None):
        out.append(("%s/%s" % (name, case), obj, how, list(flags), unwrap or (lambda c: c), strict, note))

    add("exact", copy_sd(sd))
    add("missing", copy_sd(sd, [(k, v) for k, v in sd.items() if k not in (keys[0], keys[-1])]))
    # in the file the inner module's key comes first; PyTorch lists the root's first
    unexp = copy_sd(sd)
    unexp[inner + ".extra_bias"] = torch.zeros(3)
    unexp["zzz_extra.weight"] = torch.zeros(2)
    add("unexpected", unexp)
    size = copy_sd(sd)
    size[first_w] = grown(sd[first_w])
    add("size_mismatch", size)

    items = [(k, v) for k, v in sd.items() if k != mid]
    items = [(k, grown(v) if k in (first_w, second_w) else v) for k, v in items]
    items += [("zzz_extra.weight", torch.zeros(2)), (inner + ".extra_bias", torch.zeros(3)),
              (deep + ".extra_scale", torch.zeros(1))]
    several = copy_sd(sd, list(reversed(items)))
    add("several_reversed", several)

    for key in NESTING_KEYS:
        add("nested_" + key, {key: copy_sd(sd), "epoch": 3}, unwrap=lambda c, key=key: c[key], note=key)
    for prefix in PREFIXES:
        tag = prefix.strip("._")
        add("prefix_" + tag, copy_sd(sd, [(prefix + k, v) for k, v in sd.items()]),
            unwrap=lambda c, p=prefix: strip(c, p), note=prefix[:-1])
        add("prefix_%s_missing" % tag, copy_sd(sd, [(prefix + k, v) for k, v in sd.items() if k != mid]),
            unwrap=lambda c, p=prefix: strip(c, p), note=prefix[:-1])
    add("nested_model_prefix_module", {"model": copy_sd(sd, [("module." + k, v) for k, v in sd.items()])},
        unwrap=lambda c: strip(c["model"], "module."), note="module.")
    add("float16", copy_sd(sd, [(k, v.half() if v.is_floating_point() else v) for k, v in sd.items()]))

    nostrict = copy_sd(sd, [(k, v) for k, v in sd.items() if k != mid])
    nostrict["zzz_extra.weight"] = torch.zeros(2)
    add("no_strict_missing_unexpected", nostrict, flags=["--no-strict"], strict=False)
    add("no_strict_exact", copy_sd(sd), flags=["--no-strict"], strict=False)
    add("no_strict_size_mismatch", size, flags=["--no-strict"], strict=False)

    add("safetensors_exact", plain(sd), how="safetensors")
    st = plain({k: (grown(v) if k == last_w else v) for k, v in sd.items() if k != keys[0]})
    st["zzz_extra.weight"] = torch.zeros(2)
    add("safetensors_problems", st, how="safetensors")

    if name == "tied":
        add("tied_missing", copy_sd(sd, [(k, v) for k, v in sd.items() if k != "lm_head.weight"]),
            note="'lm_head.weight' is tied to 'embed.weight', which the checkpoint holds")
        # saved untied: two tensors of one shape load, the later name's values staying in the one
        two = copy_sd(sd, [(k, v.clone() + (1 if k == "lm_head.weight" else 0)) for k, v in sd.items()])
        probe = TiedLM()
        probe.load_state_dict(two)
        assert torch.equal(probe.embed.weight, two["lm_head.weight"]), "PyTorch kept the earlier name's values"
        add("tied_two_tensors", two, note="and 'lm_head.weight''s values stay")
        apart = copy_sd(sd)
        apart["lm_head.weight"] = grown(sd["lm_head.weight"])
        add("tied_apart", apart, note="ties: 'lm_head.weight' is tied to 'embed.weight' in the model, but the "
            "checkpoint holds two tensors of different shapes")
        # what tinspect convert writes for a tie: the second name only in __metadata__, which
        # safetensors' load_file does not return: missing for a strict load_state_dict
        add("tied_safetensors_metadata_only", plain({k: v for k, v in sd.items() if k != "lm_head.weight"}),
            how="safetensors-tie", note="'lm_head.weight' is in the file only as a tie to 'embed.weight'")
    if name == "resnet18":  # a storage the file shares between two names the model keeps apart
        shared = copy_sd(sd)
        shared["layer1.0.conv2.weight"] = shared["layer1.0.conv1.weight"]
        add("shared_storage", shared)
    if name == "nonpersistent":
        extra = copy_sd(sd)
        extra["scale"] = model.scale.clone()
        add("nonpersistent_in_file", extra)
    if name == "cnn":
        nbt = "bn1.num_batches_tracked"
        add("bn_count_missing_plain_dict", plain({k: v for k, v in sd.items() if k != nbt}))
        add("bn_count_missing_metadata", copy_sd(sd, [(k, v) for k, v in sd.items() if k != nbt]))
        add("bn_count_1d", copy_sd(sd, [(k, v.reshape(1) if k == nbt else v) for k, v in sd.items()]))
    return out


# ---- running --------------------------------------------------------------

def expected(model, sd, strict):
    """(text, exit code) as PyTorch: str(e) of its RuntimeError, or the
    repr of what load_state_dict returns."""
    try:
        result = model.load_state_dict(sd, strict=strict)
    except RuntimeError as e:
        return str(e), 1
    return repr(result), 0


def compare(want, want_rc, got, rc, note):
    """None when tinspect's stdout agrees, else why not."""
    lines = got.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    want_lines = want.split("\n")
    if lines[:len(want_lines)] != want_lines:
        return "the first lines differ"
    rest = lines[len(want_lines):]
    bad = [ln for ln in rest if not ln.startswith(("note:", "ties: "))]
    if bad and want_rc:  # after a success tinspect may go on (its own summary)
        return "a line after PyTorch's text is not a note: %r" % bad[0]
    if note and not any(note in ln for ln in rest):
        return "no note line names %r" % note
    if rc != want_rc:
        return "exit %d, PyTorch's outcome means %d" % (rc, want_rc)
    return None


def description_mismatch(binary, path, model):
    """None when `tinspect params --json` lists model.state_dict()'s names and
    shapes, in order (non-persistent buffers left out), else why not."""
    p = subprocess.run([binary, "params", path, "--json"], capture_output=True, text=True, timeout=120)
    if p.returncode:
        return "tinspect params failed: %s" % p.stderr.strip()
    got = [(e["name"], e["shape"]) for e in json.loads(p.stdout)["parameters"] if e.get("persistent", True)]
    want = [(k, list(v.shape)) for k, v in model.state_dict().items()]
    if got != want:
        return "tinspect params lists %r, the model's state_dict %r" % (got, want)
    return None


def main(argv):
    binary = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(ROOT, "tinspect"))
    ran = failed = 0
    with tempfile.TemporaryDirectory(prefix="tinspect-check-") as tmp:
        for name, model, inputs in models():
            desc_path = os.path.join(tmp, name + ".json")
            export(model, inputs, desc_path)
            pristine = {k: v.clone() for k, v in model.state_dict().items()}
            # the description's state dict (tinspect params) must be the model's, or the
            # cases below test the exporter instead
            why = description_mismatch(binary, desc_path, model)
            ran += 1
            if why:
                failed += 1
                print("FAIL %s/description: %s" % (name, why))
            else:
                print("ok %s/description" % name)
            variants = [(desc_path, None)]
            if name == "cnn":  # a description without "class": the model is "Model"
                with open(desc_path) as f:
                    desc = json.load(f)
                if "class" not in desc:
                    print("FAIL %s: the exporter wrote no \"class\"" % name)
                    failed += 1
                desc.pop("class", None)
                anon = os.path.join(tmp, name + "-noclass.json")
                with open(anon, "w") as f:
                    json.dump(desc, f, indent=1)
                variants.append((anon, "Model"))
            for case, obj, how, flags, unwrap, strict, note in cases(name, model):
                ckpt = os.path.join(tmp, "ckpt" + (".safetensors" if how.startswith("safetensors") else ".pt"))
                if how.startswith("safetensors"):
                    save_safetensors(obj, ckpt, {"tie.lm_head.weight": "embed.weight"} if how == "safetensors-tie"
                                     else None)
                    loaded = load_safetensors(ckpt)
                else:
                    torch.save(obj, ckpt)
                    loaded = torch.load(ckpt)
                want, want_rc = expected(model, unwrap(loaded), strict)
                model.load_state_dict(pristine)
                for path, cls in variants:
                    if cls is not None and case.split("/")[1] not in ("exact", "several_reversed"):
                        continue
                    label = case + ("(no class)" if cls else "")
                    w = want.replace("for %s:" % type(model).__name__, "for %s:" % cls, 1) if cls else want
                    cmd = [binary, "check", path, ckpt] + flags
                    try:
                        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                        got, rc, err = p.stdout, p.returncode, p.stderr
                    except subprocess.TimeoutExpired:
                        got, rc, err = "", -1, "timed out after 120 s"
                    ran += 1
                    why = compare(w, want_rc, got, rc, note)
                    if why is None:
                        print("ok %s" % label)
                        continue
                    failed += 1
                    print("FAIL %s: %s" % (label, why))
                    print("  command: tinspect check %s %s %s" % (os.path.basename(path), os.path.basename(ckpt),
                                                                 " ".join(flags)))
                    print("  PyTorch (exit %d):\n%s" % (want_rc, "\n".join("    " + repr(x) for x in w.split("\n"))))
                    print("  tinspect (exit %d):\n%s" % (rc, "\n".join("    " + repr(x) for x in got.split("\n"))))
                    if err.strip():
                        print("  tinspect stderr: %s" % err.strip()[:500])
    if ran == 0:
        print("check conformance: FAILED: no case ran")
        return 1
    print("check conformance: %d of %d cases agree with load_state_dict%s"
          % (ran - failed, ran, "" if not failed else "; %d FAIL" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
