"""
run_cases_rnn.py - run_conformance.py's cases for the recurrent modules
(RNN, LSTM, GRU) and the attention family (scaled_dot_product_attention,
MultiheadAttention, the Transformer layers and stacks).
"""
import torch
import torch.nn as nn

import shapes_conformance as sc
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


# ---- attention ----

def _build_stacks(self, spec, what, _plain=sc.Interpreter.build):
    """tinspect's TransformerEncoder/Decoder take a layer's arguments and num_layers (norm=True: a final LayerNorm);
    torch's take the layer module: built here as state_dict_conformance.py builds them."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind not in ("TransformerEncoder", "TransformerDecoder"):
        return _plain(self, spec, what)
    args = {k: v for k, v in spec.items()
            if k not in ("type", "num_layers", "norm", "enable_nested_tensor", "mask_check")}
    layer = (nn.TransformerEncoderLayer if kind == "TransformerEncoder" else nn.TransformerDecoderLayer)(**args)
    norm = nn.LayerNorm(args["d_model"]) if spec.get("norm") else None
    extra = {k: spec[k] for k in ("enable_nested_tensor",) if k in spec}
    return getattr(nn, kind)(layer, spec["num_layers"], norm=norm, **extra)


sc.Interpreter.build = _build_stacks

MHA = {"type": "MultiheadAttention", "embed_dim": 8, "num_heads": 2}


def mha(**kw):
    spec = dict(MHA)
    spec.update(kw)
    return spec


def mha_case(name, spec, shapes, args, graph_before=(), outs=("y", "w"), **kw):
    step = {"out": list(outs), "call": "m", "args": list(args)}
    step.update(kw)
    return graph_case(name, list(graph_before) + [step], [o for o in outs], GEMM, shapes, modules={"m": spec})


# a bool mask from a float input: True where w > 1 (about one in six)
BOOL_MASK = [{"out": "bm", "op": "gt", "args": ["w", 1.0]}]
# padding at the end of each row: none in row 0, keys 3 and 4 of 5 in row 1 (so PyTorch 1.13's nested
# tensor pads back to the full length)
END_PADDING = [{"out": "pos", "op": "arange", "args": [5]}, {"out": "row", "op": "arange", "args": [2]},
               {"out": "r2", "op": "mul", "args": ["row", -2]}, {"out": "thr", "op": "add", "args": ["r2", 4]},
               {"out": "col", "op": "unsqueeze", "args": ["thr", 1]},
               {"out": "pad", "op": "gt", "args": ["pos", "col"]}]
TX = {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0}


def tx(kind, **kw):
    spec = {"type": kind}
    spec.update(TX)
    spec.update(kw)
    return spec


CASES += [
    mha_case("MultiheadAttention float mask 2d", mha(), {"x": [4, 2, 8], "w": [4, 4]}, ["x", "x", "x"],
             attn_mask="w"),
    mha_case("MultiheadAttention bool mask 3d", mha(), {"x": [4, 2, 8], "w": [4, 4, 4]}, ["x", "x", "x"],
             BOOL_MASK, attn_mask="bm"),
    mha_case("MultiheadAttention key_padding_mask", mha(batch_first=True), {"x": [2, 5, 8], "w": [2, 5]},
             ["x", "x", "x"], BOOL_MASK, key_padding_mask="bm"),
    mha_case("MultiheadAttention key_padding_mask and float mask", mha(), {"x": [5, 2, 8], "w": [2, 5], "m": [5, 5]},
             ["x", "x", "x"], BOOL_MASK, key_padding_mask="bm", attn_mask="m"),
    mha_case("MultiheadAttention per-head weights", mha(), {"x": [4, 2, 8]}, ["x", "x", "x"],
             average_attn_weights=False),
    mha_case("MultiheadAttention cross kdim vdim", mha(kdim=5, vdim=3), {"q": [4, 2, 8], "k": [6, 2, 5], "v": [6, 2, 3]},
             ["q", "k", "v"]),
    mha_case("MultiheadAttention bias_kv zero_attn", mha(add_bias_kv=True, add_zero_attn=True),
             {"x": [4, 2, 8], "w": [2, 4]}, ["x", "x", "x"], BOOL_MASK, key_padding_mask="bm",
             average_attn_weights=False),
    mha_case("MultiheadAttention unbatched no bias", mha(bias=False), {"x": [4, 8], "w": [2, 4, 4]}, ["x", "x", "x"],
             attn_mask="w", average_attn_weights=False),
    mha_case("MultiheadAttention no weights strided", mha(batch_first=True), {"x": [5, 2, 8]}, ["t", "t", "t"],
             [{"out": "t", "op": "transpose", "args": ["x", 0, 1]}], outs=("y", "_"), need_weights=False),
    module_case("TransformerEncoderLayer key padding", tx("TransformerEncoderLayer", batch_first=True), GEMM,
                {"x": [2, 5, 8], "w": [2, 5]}, args=("x",)),
    graph_case("TransformerEncoderLayer src_mask and padding",
               BOOL_MASK + [{"out": "y", "call": "m", "args": ["x"], "src_mask": "f", "src_key_padding_mask": "bm"}],
               ["y"], GEMM, {"x": [5, 2, 8], "w": [2, 5], "f": [5, 5]},
               modules={"m": tx("TransformerEncoderLayer", activation="gelu")}),
    graph_case("TransformerDecoderLayer masks",
               BOOL_MASK + [{"out": "y", "call": "m", "args": ["x", "mem"], "tgt_mask": "f", "memory_mask": "g",
                             "memory_key_padding_mask": "bm"}],
               ["y"], GEMM, {"x": [4, 2, 8], "mem": [6, 2, 8], "w": [2, 6], "f": [4, 4], "g": [4, 6]},
               modules={"m": tx("TransformerDecoderLayer")}),
    graph_case("TransformerDecoderLayer norm_first batch_first",
               BOOL_MASK + [{"out": "y", "call": "m", "args": ["x", "mem"], "tgt_key_padding_mask": "bm"}],
               ["y"], GEMM, {"x": [2, 4, 8], "mem": [2, 3, 8], "w": [2, 4]},
               modules={"m": tx("TransformerDecoderLayer", norm_first=True, batch_first=True, activation="gelu")}),
    graph_case("TransformerDecoderLayer unbatched", [{"out": "y", "call": "m", "args": ["x", "mem"]}], ["y"], GEMM,
               {"x": [4, 8], "mem": [3, 8]}, modules={"m": tx("TransformerDecoderLayer")}),
    graph_case("TransformerEncoder norm mask", [{"out": "y", "call": "m", "args": ["x"], "mask": "f"}], ["y"], GEMM,
               {"x": [5, 2, 8], "f": [5, 5]}, modules={"m": tx("TransformerEncoder", num_layers=2, norm=True)}),
    graph_case("TransformerEncoder nested padding",
               END_PADDING + [{"out": "y", "call": "m", "args": ["x"], "src_key_padding_mask": "pad"}], ["y"], GEMM,
               {"x": [2, 5, 8]}, modules={"m": tx("TransformerEncoder", num_layers=2, norm=True, batch_first=True)}),
    graph_case("TransformerEncoder padding not nested",
               END_PADDING + [{"out": "y", "call": "m", "args": ["x"], "src_key_padding_mask": "pad"}], ["y"], GEMM,
               {"x": [2, 5, 8]}, modules={"m": tx("TransformerEncoder", num_layers=2, batch_first=True,
                                                   enable_nested_tensor=False)}),
    graph_case("TransformerDecoder", BOOL_MASK + [{"out": "y", "call": "m", "args": ["x", "mem"], "tgt_mask": "f",
                                                    "tgt_key_padding_mask": "bm"}],
               ["y"], GEMM, {"x": [4, 2, 8], "mem": [6, 2, 8], "f": [4, 4], "w": [2, 4]},
               modules={"m": tx("TransformerDecoder", num_layers=2, norm=True)}),
    graph_case("Transformer", [{"out": "y", "call": "m", "args": ["s", "x"], "tgt_mask": "f"}], ["y"], GEMM,
               {"s": [6, 2, 8], "x": [4, 2, 8], "f": [4, 4]},
               modules={"m": tx("Transformer", num_encoder_layers=2, num_decoder_layers=1)}),
    graph_case("Transformer batch_first padding",
               END_PADDING + [{"out": "y", "call": "m", "args": ["s", "x"], "src_key_padding_mask": "pad",
                               "memory_key_padding_mask": "pad"}], ["y"], GEMM,
               {"s": [2, 5, 8], "x": [2, 3, 8]},
               modules={"m": tx("Transformer", num_encoder_layers=1, num_decoder_layers=2, batch_first=True)}),
]


def sdpa_reference(q, k, v, mask=None, causal=False, scale=None):
    """F.scaled_dot_product_attention as PyTorch 2 defines it (torch 1.13 has none): a bool mask attends where True."""
    scores = q @ k.transpose(-2, -1) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    return torch.softmax(scores, dim=-1) @ v


SDPA_SHAPES = {"q": [2, 3, 4, 8], "k": [2, 3, 5, 8], "v": [2, 3, 5, 6]}
CASES += [
    graph_case("scaled_dot_product_attention float mask broadcast",
               [{"out": "y", "op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "attn_mask": "m"}], ["y"],
               GEMM, dict(SDPA_SHAPES, m=[3, 1, 5])),
    graph_case("scaled_dot_product_attention bool mask scale",
               [{"out": "bm", "op": "gt", "args": ["m", -1.0]},
                {"out": "y", "op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "attn_mask": "bm",
                 "scale": 0.5}], ["y"], GEMM, dict(SDPA_SHAPES, m=[2, 1, 4, 5])),
    graph_case("scaled_dot_product_attention causal 3d strided",
               [{"out": "t", "op": "transpose", "args": ["x", 0, 1]},
                {"out": "y", "op": "scaled_dot_product_attention", "args": ["t", "t", "t"], "is_causal": True}],
               ["y"], GEMM, {"x": [5, 2, 8]}),
]
REFERENCES = {
    "scaled_dot_product_attention float mask broadcast":
        lambda env: [sdpa_reference(env["q"], env["k"], env["v"], env["m"])],
    "scaled_dot_product_attention bool mask scale":
        lambda env: [sdpa_reference(env["q"], env["k"], env["v"], env["m"] > -1.0, scale=0.5)],
    "scaled_dot_product_attention causal 3d strided":
        lambda env: [sdpa_reference(*[env["x"].transpose(0, 1)] * 3, causal=True)],
}
