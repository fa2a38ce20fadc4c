#!/usr/bin/env python3
"""memory_rnn.py - recurrent layers, in inference and training, on configurations no rule was fitted to.

tinspect's rules for nn.RNN/LSTM/GRU (src/memory/expand_rnn.c) are read from PyTorch 1.13's
CPU code: in inference FullLayer, FullBidirectionalLayer and apply_layer_stack in
aten/src/ATen/native/RNN.cpp (the previous layer's output, linear_ih over the sequence, the
list of step outputs and their stack, and for two directions the second linear_ih while the
first is held and the cat); in training what each step's cell saves and the backward walked
as the autograd engine runs it (weight_hh's per-step gradients added out of place, the gate
gradients stacked for linear_ih's backward, the input's gradient). This script measures
layers of every kind, one and two directions, one to three layers, sequence- and
batch-first, with and without an input that wants a gradient (an Embedding in front), at
sizes none of the corpus uses, plus --random K configurations drawn with --seed S, as
memory_conformance.py measures (inference: eval + no_grad; training: SGD with momentum; one
thread, LD_PRELOAD memshim), and fails when an estimate is more than 5 % and more than 64 KiB
from PyTorch's peak.

usage: memory_rnn.py [TINSPECT] [--random K] [--seed S]
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover
    print("memory rnn: skipped (python3-torch is not installed)")
    sys.exit(0)

import memory_conformance as mc  # noqa: E402

TOLERANCE = 0.05
SLACK = 64 * 1024  # below this many bytes a miss is not counted (a model of a few hundred KiB: allocator scale)

# (name, module type, input size, hidden, layers, bidirectional, batch_first, embedded, bindings)
CASES = [
    ("lstm_1layer_batch_first_h1024", "LSTM", 256, 1024, 1, False, True, False, {"N": 8, "T": 64}),
    ("lstm_2layers_seq_first_h512", "LSTM", 256, 512, 2, False, False, False, {"N": 8, "T": 64}),
    ("lstm_3layers_bidir_h256", "LSTM", 128, 256, 3, True, False, False, {"N": 16, "T": 50}),
    ("lstm_tagger_embedded_bidir_h384", "LSTM", 200, 384, 2, True, True, True, {"N": 12, "T": 48}),
    ("gru_2layers_bidir_batch_first_h256", "GRU", 96, 256, 2, True, True, False, {"N": 8, "T": 96}),
    ("gru_1layer_seq_first_h384", "GRU", 200, 384, 1, False, False, False, {"N": 12, "T": 40}),
    ("gru_embedded_h640", "GRU", 128, 640, 1, False, True, True, {"N": 6, "T": 80}),
    ("rnn_2layers_bidir_h512", "RNN", 64, 512, 2, True, False, False, {"N": 16, "T": 64}),
    ("rnn_3layers_batch_first_h300", "RNN", 150, 300, 3, False, True, False, {"N": 10, "T": 70}),
]
MODES = [("infer", None), ("train", "momentum")]
VOCAB = 1000


def random_cases(k, seed):
    import random
    rng = random.Random(seed)
    out = []
    for i in range(k):
        kind = rng.choice(["LSTM", "GRU", "RNN"])
        size, hidden = rng.randrange(16, 400), rng.randrange(16, 900)
        layers, bidir, bf, emb = rng.randint(1, 3), rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.3
        bind = {"N": rng.randint(1, 24), "T": rng.randint(1, 120)}
        while bind["N"] * hidden < 1024:  # memshim measures allocations of 4 KiB and more: keep a step's above
            bind["N"] *= 2
        out.append(("random%d_%s_l%d%s_h%d" % (i, kind.lower(), layers, "_bi" if bidir else "", hidden),
                    kind, size, hidden, layers, bidir, bf, emb, bind))
    return out


def description(kind, size, hidden, layers, bidir, batch_first, embedded):
    shape = ["N", "T", size] if batch_first else ["T", "N", size]
    desc = {"inputs": {"x": {"shape": shape}},
            "modules": {"rnn": {"type": kind, "input_size": size, "hidden_size": hidden, "num_layers": layers,
                                "bidirectional": bidir, "batch_first": batch_first}},
            "graph": [{"out": ["y", "h"], "call": "rnn", "args": ["x"]}],
            "outputs": ["y"]}
    if embedded:  # token ids through an Embedding: the recurrent layer's input wants a gradient
        desc["inputs"]["x"] = {"shape": shape[:2], "dtype": "int64"}
        desc["modules"]["emb"] = {"type": "Embedding", "num_embeddings": VOCAB, "embedding_dim": size}
        desc["graph"] = [{"out": "e", "call": "emb", "args": ["x"]},
                         {"out": ["y", "h"], "call": "rnn", "args": ["e"]}]
    return desc


def main(argv):
    args = argv[1:]
    k, seed = 6, 1
    if "--random" in args:
        i = args.index("--random")
        k = int(args[i + 1])
        del args[i:i + 2]
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    binary = args[0] if args else os.path.join(HERE, "..", "..", "tinspect")
    tmp = tempfile.mkdtemp(prefix="memory-rnn-")
    so = mc.build_memshim(tmp)
    failed = total = 0
    runs = []  # (name, path, bind, mode, optimizer)
    for name, kind, size, hidden, layers, bidir, bf, emb, bind in CASES + random_cases(k, seed):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(description(kind, size, hidden, layers, bidir, bf, emb), f)
        runs += [(name, path, bind, mode, opt) for mode, opt in MODES]
    measurements = mc.measure_many(so, [r[1:] for r in runs])
    for (name, path, bind, mode, opt), res in zip(runs, measurements):
        res = mc.measured(res)
        doc = mc.run_tinspect(binary, path, bind, mode, opt)
        doc = doc[0] if isinstance(doc, (list, tuple)) else doc
        err = (doc["peak"] - res["peak"]) / float(res["peak"])
        ok = abs(err) <= TOLERANCE or abs(doc["peak"] - res["peak"]) <= SLACK
        failed += not ok
        total += 1
        print("%-6s %-36s %-6s %-12s torch %7.1f MiB  tinspect %7.1f MiB  %+5.1f %%" % (
            "ok" if ok else "FAIL", name, mode, ",".join("%s=%d" % kv for kv in bind.items()),
            res["peak"] / mc.MIB, doc["peak"] / mc.MIB, 100 * err), flush=True)
    print("memory rnn: %d of %d within %d %% (or 64 KiB) of PyTorch's peak (random seed %d)" % (
        total - failed, total, round(100 * TOLERANCE), seed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
