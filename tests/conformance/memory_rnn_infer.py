#!/usr/bin/env python3
"""memory_rnn_infer.py - recurrent layers in inference, on configurations the rule was not fitted to.

tinspect's inference rule for nn.RNN/LSTM/GRU (src/memory/expand_rnn.c) is read from PyTorch
1.13's CPU code (FullLayer, FullBidirectionalLayer, apply_layer_stack in
aten/src/ATen/native/RNN.cpp): the previous layer's output, linear_ih over the sequence, the
list of step outputs and their stack, and for two directions the second linear_ih while the
first is held and the cat. This script measures layers of every kind, one and two directions,
one to three layers, sequence- and batch-first, at sizes none of the corpus uses, as
memory_conformance.py measures (eval + no_grad, one thread, LD_PRELOAD memshim), and fails
when an estimate is more than 5 % from PyTorch's peak.

usage: memory_rnn_infer.py [TINSPECT]
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
    print("memory rnn inference: skipped (python3-torch is not installed)")
    sys.exit(0)

import memory_conformance as mc  # noqa: E402

TOLERANCE = 0.05

# (name, module type, input size, hidden, layers, bidirectional, batch_first, bindings)
CASES = [
    ("lstm_1layer_batch_first_h1024", "LSTM", 256, 1024, 1, False, True, {"N": 8, "T": 64}),
    ("lstm_2layers_seq_first_h512", "LSTM", 256, 512, 2, False, False, {"N": 8, "T": 64}),
    ("lstm_3layers_bidir_h256", "LSTM", 128, 256, 3, True, False, {"N": 16, "T": 50}),
    ("gru_2layers_bidir_batch_first_h256", "GRU", 96, 256, 2, True, True, {"N": 8, "T": 96}),
    ("gru_1layer_seq_first_h384", "GRU", 200, 384, 1, False, False, {"N": 12, "T": 40}),
    ("rnn_2layers_bidir_h512", "RNN", 64, 512, 2, True, False, {"N": 16, "T": 64}),
    ("rnn_3layers_batch_first_h300", "RNN", 150, 300, 3, False, True, {"N": 10, "T": 70}),
]


def description(kind, size, hidden, layers, bidir, batch_first):
    shape = ["N", "T", size] if batch_first else ["T", "N", size]
    return {"inputs": {"x": {"shape": shape}},
            "modules": {"rnn": {"type": kind, "input_size": size, "hidden_size": hidden, "num_layers": layers,
                                "bidirectional": bidir, "batch_first": batch_first}},
            "graph": [{"out": ["y", "h"], "call": "rnn", "args": ["x"]}],
            "outputs": ["y"]}


def main(argv):
    binary = argv[1] if len(argv) > 1 else os.path.join(HERE, "..", "..", "tinspect")
    tmp = tempfile.mkdtemp(prefix="memory-rnn-")
    so = mc.build_memshim(tmp)
    failed = 0
    for name, kind, size, hidden, layers, bidir, bf, bind in CASES:
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(description(kind, size, hidden, layers, bidir, bf), f)
        res = mc.measure(so, path, bind, "infer", None)
        doc = mc.run_tinspect(binary, path, bind, "infer", None)
        doc = doc[0] if isinstance(doc, (list, tuple)) else doc
        err = (doc["peak"] - res["peak"]) / float(res["peak"])
        ok = abs(err) <= TOLERANCE
        failed += not ok
        print("%-6s %-36s torch %7.1f MiB  tinspect %7.1f MiB  %+5.1f %%" % (
            "ok" if ok else "FAIL", name, res["peak"] / mc.MIB, doc["peak"] / mc.MIB, 100 * err))
    print("memory rnn inference: %d of %d within %d %% of PyTorch's peak" % (
        len(CASES) - failed, len(CASES), round(100 * TOLERANCE)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
