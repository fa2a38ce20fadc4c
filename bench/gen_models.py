#!/usr/bin/env python3
"""
Writes the model descriptions that the `tinspect shapes` benchmark reads into a
cache directory (idempotent: a file whose bytes are already right is left
alone), and optionally checks them against PyTorch.

    python3 bench/gen_models.py CACHE_DIR                 # standard library only
    /usr/bin/python3 bench/gen_models.py --verify [--tinspect BIN] CACHE_DIR

  resnet50.json  torchvision.models.resnet50(), input ["N", 3, 224, 224]. A
                 description cannot pass arguments to a type of its own, so
                 there is one defs entry per distinct Bottleneck configuration
                 (Bottleneck_<inplanes>_<width>_<out>_s<stride>; 7 of them),
                 each with torchvision's children in torchvision's order
                 (conv1 bn1 conv2 bn2 conv3 bn3 relu [downsample]) and its
                 forward as a graph, so the parameter names are the state_dict's
                 own: layer1.0.conv1.weight, layer1.0.downsample.0.weight, ...,
                 fc.weight.
  mlp100.json    for `tinspect memory`: 100 blocks of Linear(256, 256), LayerNorm,
                 GELU and a residual add (a def, Block, in a Sequential repeated
                 100 times), input ["N", 16, 256]; built and trained in PyTorch
                 by bench/measure_memory.py with the conformance interpreter.
  chain1k.json   1,000-step graph on x: [N, 64], then 10,000 steps in
  chain10k.json  chain10k.json: a cycle of 4 steps, repeated (steps/4 times):
                     h = layers.<i>(x)     (ModuleList of Linear(64, 64))
                     h = relu(h)
                     h = mul(h, 0.5)
                     x = add(x, h)
                 so parameters, steps and names all grow with the graph; the
                 pair shows per-step cost and whether memory is linear.

Writing needs only the standard library and gives the same bytes every time,
so the tinspect side of the benchmark runs without torch. A file is written to
NAME.tmp and renamed, so an interrupted run never leaves half a file behind.

--verify needs torch 1.13 and torchvision 0.14 (/usr/bin/python3): it builds
resnet50.json with the interpreter in tests/conformance/shapes_conformance.py
and checks that its state_dict has exactly torchvision's names, shapes, dtypes
and order and that the output is [1, 1000]; with --tinspect, also that
`tinspect params resnet50.json --json` lists the same entries, and that
`tinspect shapes` gives the same output shape. Exits 1 on any failure.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def conv(cin, cout, k, stride=1, padding=0):
    m = {"type": "Conv2d", "in_channels": cin, "out_channels": cout, "kernel_size": k}
    if stride != 1:
        m["stride"] = stride
    if padding:
        m["padding"] = padding
    m["bias"] = False                     # torchvision's conv1x1/conv3x3: bias=False
    return m


def bn(c):
    return {"type": "BatchNorm2d", "num_features": c}


def call(out, path, args):
    return {"out": out, "call": path, "args": args}


def op(out, name, args, **kw):
    return dict({"out": out, "op": name, "args": args}, **kw)


# --------------------------------------------------------------------------
# resnet50.json: torchvision.models.resnet.ResNet(Bottleneck, [3, 4, 6, 3])
# --------------------------------------------------------------------------
def resnet50():
    expansion = 4
    defs = {}

    def bottleneck(inplanes, planes, stride):
        width = planes                    # groups 1, base_width 64
        out = planes * expansion
        name = "Bottleneck_%d_%d_%d_s%d" % (inplanes, width, out, stride)
        if name in defs:
            return name
        # torchvision's Bottleneck.__init__ order; the stride is on conv2 (V1.5)
        mods = {
            "conv1": conv(inplanes, width, 1),
            "bn1": bn(width),
            "conv2": conv(width, width, 3, stride, 1),
            "bn2": bn(width),
            "conv3": conv(width, out, 1),
            "bn3": bn(out),
            "relu": {"type": "ReLU", "inplace": True},
        }
        graph = [
            call("out", "conv1", ["x"]), call("out", "bn1", ["out"]), call("out", "relu", ["out"]),
            call("out", "conv2", ["out"]), call("out", "bn2", ["out"]), call("out", "relu", ["out"]),
            call("out", "conv3", ["out"]), call("out", "bn3", ["out"]),
        ]
        identity = "x"
        if stride != 1 or inplanes != out:
            mods["downsample"] = {"type": "Sequential", "modules": [
                conv(inplanes, out, 1, stride), bn(out)]}
            graph.append(call("identity", "downsample", ["x"]))
            identity = "identity"
        graph += [op("out", "add", ["out", identity]), call("out", "relu", ["out"])]
        defs[name] = {"inputs": ["x"], "modules": mods, "graph": graph, "outputs": ["out"]}
        return name

    modules = {
        "conv1": conv(3, 64, 7, 2, 3),
        "bn1": bn(64),
        "relu": {"type": "ReLU", "inplace": True},
        "maxpool": {"type": "MaxPool2d", "kernel_size": 3, "stride": 2, "padding": 1},
    }
    inplanes = 64
    for i, (planes, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2),
                                                  (512, 3, 2)]):
        layer = [{"type": bottleneck(inplanes, planes, stride)}]
        inplanes = planes * expansion
        layer += [{"type": bottleneck(inplanes, planes, 1)} for _ in range(1, blocks)]
        modules["layer%d" % (i + 1)] = {"type": "Sequential", "modules": layer}
    modules["avgpool"] = {"type": "AdaptiveAvgPool2d", "output_size": [1, 1]}
    modules["fc"] = {"type": "Linear", "in_features": 512 * expansion, "out_features": 1000}
    graph = [call("h", n, ["x" if n == "conv1" else "h"])
             for n in ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4",
                       "avgpool"]]
    graph += [op("h", "flatten", ["h", 1]), call("y", "fc", ["h"])]
    return {"inputs": {"x": {"shape": ["N", 3, 224, 224], "dtype": "float32"}},
            "defs": defs, "modules": modules, "graph": graph, "outputs": ["y"]}


# --------------------------------------------------------------------------
# chainNk.json: a long flat graph
# --------------------------------------------------------------------------
def chain(steps, width=64):
    assert steps % 4 == 0
    cycles = steps // 4
    graph = []
    for i in range(cycles):
        graph += [call("h", "layers.%d" % i, ["x"]),
                  op("h", "relu", ["h"]),
                  op("h", "mul", ["h", 0.5]),
                  op("x", "add", ["x", "h"])]
    return {"inputs": {"x": {"shape": ["N", width], "dtype": "float32"}},
            "modules": {"layers": {"type": "ModuleList", "repeat": cycles, "module": {
                "type": "Linear", "in_features": width, "out_features": width}}},
            "graph": graph, "outputs": ["x"]}


# --------------------------------------------------------------------------
# mlp100.json: 100 residual blocks of Linear + LayerNorm + GELU, for `memory`
# --------------------------------------------------------------------------
def mlp100(blocks=100, width=256, tokens=16):
    """100 residual blocks x = x + gelu(layer_norm(linear(x))) on [N, 16, 256]: 6.6 M
    parameters, 802 points on the training timeline. The width is kept modest because the
    PyTorch side of the benchmark runs a real training step on the CPU, best of RUNS
    (Debian's torch 1.13 uses the reference BLAS: 5 s a step at N=16); tinspect's time
    depends on the number of steps, not on their sizes."""
    block = {"inputs": ["x"],
             "modules": {"fc": {"type": "Linear", "in_features": width, "out_features": width},
                         "norm": {"type": "LayerNorm", "normalized_shape": width},
                         "act": {"type": "GELU"}},
             "graph": [call("h", "fc", ["x"]), call("h", "norm", ["h"]), call("h", "act", ["h"]),
                       op("x", "add", ["x", "h"])],
             "outputs": ["x"]}
    return {"inputs": {"x": {"shape": ["N", tokens, width], "dtype": "float32"}},
            "defs": {"Block": block},
            "modules": {"blocks": {"type": "Sequential", "repeat": blocks,
                                   "module": {"type": "Block"}}},
            "graph": [call("y", "blocks", ["x"])], "outputs": ["y"]}


MODELS = {
    "resnet50.json": resnet50,
    "mlp100.json": mlp100,
    "chain1k.json": lambda: chain(1000),
    "chain10k.json": lambda: chain(10000),
}


# --------------------------------------------------------------------------
# --verify
# --------------------------------------------------------------------------
def verify(d, tinspect):
    sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
    import shapes_conformance as sc
    import torch
    import torchvision

    bad = 0

    def check(ok, what):
        nonlocal bad
        print("%s  %s" % ("ok  " if ok else "FAIL", what))
        if not ok:
            bad += 1

    def first_difference(want, got):
        for i, (w, g) in enumerate(zip(want, got)):
            if w != g:
                return "entry %d: torchvision %s, other %s" % (i, w, g)
        return "lengths %d and %d" % (len(want), len(got))

    path = os.path.join(d, "resnet50.json")
    with open(path) as f:
        desc = json.load(f)
    tv = torchvision.models.resnet50()
    want = [(k, list(v.shape), str(v.dtype).replace("torch.", ""))
            for k, v in tv.state_dict().items()]
    kind, res = sc.torch_outcome(desc, {"N": 1})
    if kind != "ok":
        check(False, "resnet50.json runs in torch on meta: %s" % res)
        return 1
    got = [(k, list(v.shape), str(v.dtype).replace("torch.", ""))
           for k, v in res["model"].state_dict().items()]
    check(want == got, "resnet50.json: state_dict equals torchvision's (%d entries)%s"
          % (len(want), "" if want == got else ": " + first_difference(want, got)))
    out = [list(t.shape) for t in res["outputs"]]
    check(out == [[1, 1000]], "resnet50.json: output %s on meta with N=1" % out)

    for name in ("chain1k.json", "chain10k.json"):
        with open(os.path.join(d, name)) as f:
            c = json.load(f)
        kind, res = sc.torch_outcome(c, {"N": 2})
        check(kind == "ok" and [list(t.shape) for t in res["outputs"]] == [[2, 64]],
              "%s: %d steps run in torch on meta" % (name, len(c["graph"])))

    if tinspect:
        p = subprocess.run([tinspect, "params", path, "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        if p.returncode != 0:
            check(False, "tinspect params resnet50.json: exit %d: %s"
                  % (p.returncode, p.stderr.decode(errors="replace").strip()))
        else:
            ps = json.loads(p.stdout)["parameters"]
            mine = [(e["name"], e["shape"], e["dtype"]) for e in ps]
            check(want == mine, "tinspect params resnet50.json --json equals torchvision's "
                  "state_dict (%d entries)%s" % (len(want), "" if want == mine else ": "
                                                 + first_difference(want, mine)))
        p = subprocess.run([tinspect, "shapes", path, "--json", "--bind", "N=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            check(False, "tinspect shapes resnet50.json: exit %d: %s"
                  % (p.returncode, p.stderr.decode(errors="replace").strip()))
        else:
            doc = json.loads(p.stdout)
            shp = [o["shape"] for o in doc["outputs"].values()]
            total = doc["totals"]["params"]
            uniq = sum(v.numel() for v in tv.parameters())
            check(shp == [[1, 1000]] and total == uniq,
                  "tinspect shapes resnet50.json: output %s, %s parameters (torchvision %d)"
                  % (shp, total, uniq))
    return 1 if bad else 0


def main(argv):
    args = argv[1:]
    tinspect = None
    do_verify = False
    while args and args[0].startswith("--"):
        if args[0] == "--verify":
            do_verify = True
            args = args[1:]
        elif args[0] == "--tinspect" and len(args) > 1:
            tinspect = args[1]
            args = args[2:]
        else:
            print("usage: gen_models.py [--verify [--tinspect BIN]] CACHE_DIR", file=sys.stderr)
            return 2
    cache = args[0] if args else os.path.join(HERE, ".cache")
    if do_verify:
        return verify(cache, tinspect)
    os.makedirs(cache, exist_ok=True)
    for name, make in MODELS.items():
        path = os.path.join(cache, name)
        text = json.dumps(make(), indent=1) + "\n"
        try:
            with open(path) as f:
                same = f.read() == text
        except OSError:
            same = False
        # cheap to make, so always compared: a stale cache after an edit here is rewritten
        if not same:
            write_atomic(path, text)
        print("%s %s (%.1f kB, %d steps)" % ("cached    " if same else "generated ", path,
                                             len(text) / 1e3, len(make()["graph"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
