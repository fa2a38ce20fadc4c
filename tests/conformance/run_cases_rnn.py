"""
run_cases_rnn.py - run_conformance.py's cases for the recurrent modules
(RNN, LSTM, GRU) and the attention family (scaled_dot_product_attention,
MultiheadAttention, the Transformer layers and stacks).
"""
from run_cases import module_case, graph_case, GEMM


def rnn(kind, **kw):
    spec = {"type": kind, "input_size": 5, "hidden_size": 6}
    spec.update(kw)
    return spec


def rnn_graph(name, spec, shapes, args, outs):
    """A recurrent module with its outputs named: tuples flatten, (h_n, c_n) included."""
    return graph_case(name, [{"out": outs, "call": "m", "args": args}], [o for o in outs if o != "_"], GEMM,
                      shapes, modules={"m": spec})


CASES = [
    rnn_graph("RNN tanh", rnn("RNN"), {"x": [4, 3, 5]}, ["x"], ["y", "h"]),
    rnn_graph("RNN relu 2 layers bidirectional", rnn("RNN", nonlinearity="relu", num_layers=2, bidirectional=True),
              {"x": [4, 3, 5]}, ["x"], ["y", "h"]),
    rnn_graph("RNN no bias batch_first h0", rnn("RNN", bias=False, batch_first=True), {"x": [3, 4, 5], "h0": [1, 3, 6]},
              ["x", "h0"], ["y", "h"]),
    rnn_graph("RNN unbatched", rnn("RNN", num_layers=2), {"x": [4, 5]}, ["x"], ["y", "h"]),
    rnn_graph("LSTM", rnn("LSTM"), {"x": [4, 3, 5]}, ["x"], ["y", "hc"]),
    rnn_graph("LSTM 2 layers bidirectional batch_first", rnn("LSTM", num_layers=2, bidirectional=True,
                                                              batch_first=True, dropout=0.3),
              {"x": [3, 4, 5]}, ["x"], ["y", "hc"]),
    rnn_graph("LSTM proj_size h0 c0", rnn("LSTM", proj_size=3, num_layers=2, bidirectional=True),
              {"x": [4, 2, 5], "h0": [4, 2, 3], "c0": [4, 2, 6]}, ["x", ["h0", "c0"]], ["y", "hc"]),
    rnn_graph("LSTM unbatched no bias", rnn("LSTM", bias=False), {"x": [6, 5]}, ["x"], ["y", "hc"]),
    rnn_graph("LSTM unbatched h0 c0", rnn("LSTM", bidirectional=True), {"x": [6, 5], "h0": [2, 6], "c0": [2, 6]},
              ["x", ["h0", "c0"]], ["y", "hc"]),
    rnn_graph("GRU", rnn("GRU"), {"x": [4, 3, 5]}, ["x"], ["y", "h"]),
    rnn_graph("GRU 3 layers bidirectional h0", rnn("GRU", num_layers=3, bidirectional=True),
              {"x": [5, 2, 5], "h0": [6, 2, 6]}, ["x", "h0"], ["y", "h"]),
    rnn_graph("GRU batch_first unbatched", rnn("GRU", batch_first=True), {"x": [7, 5]}, ["x"], ["y", "h"]),
    graph_case("GRU strided input", [{"out": "t", "op": "transpose", "args": ["x", 0, 1]},
                                     {"out": ["y", "h"], "call": "m", "args": ["t"]}], ["y", "h"], GEMM,
               {"x": [3, 4, 5]}, modules={"m": rnn("GRU", batch_first=True)}),
]
