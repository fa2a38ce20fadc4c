"""
run_cases_index.py - the index family's cases for run_conformance.py: pad and
the padding modules, interpolate and the upsampling modules, pixel shuffles,
flip, roll, repeat, tile, repeat_interleave, index_select, gather,
take_along_dim, getitem, the view ops (expand_as, broadcast_to, movedim,
swapaxes), clone, dot, mv, outer, einsum.

Index inputs are int64 values in [0, 10) (run_conformance.py's make_input),
so the dims they index have at least 10 entries. getitem has no torch
function the interpreter can call: its references index the inputs in Python.
"""
import torch

from run_cases import op_case, module_case, graph_case, GEMM, ELEMENTWISE, EXACT

X4 = [2, 3, 6, 5]
X3 = [2, 3, 7]
X5 = [1, 2, 3, 4, 5]
IDX = "int64"


def strided(name, op, args, tol, shapes, **kw):
    """op on x after a transpose of its last two dims (a strided view)."""
    step = {"out": "y", "op": op, "args": ["t"] + list(args)}
    step.update(kw)
    return graph_case(name, [{"out": "t", "op": "transpose", "args": ["x", -1, -2]}, step], ["y"], tol, shapes)


def interp(name, shape, tol=ELEMENTWISE, **kw):
    return op_case("interpolate " + name, "interpolate", ["x"], tol, {"x": shape}, **kw)


CASES = [
    # ---- pad ----
    op_case("pad constant value", "pad", ["x", [1, 2]], EXACT, {"x": X3}, value=0.5),
    op_case("pad constant 3 dims", "pad", ["x", [1, 1, 2, 0, 1, 3]], EXACT, {"x": X4}),
    op_case("pad constant negative crops", "pad", ["x", [-1, 2, 0, -2]], EXACT, {"x": X4}),
    op_case("pad constant all dims", "pad", ["x", [1, 0, 0, 1, 2, 1, 1, 1]], EXACT, {"x": X4}, value=-3.0),
    op_case("pad reflect 1d", "pad", ["x", [3, 2]], EXACT, {"x": X3}, mode="reflect"),
    op_case("pad reflect 2d", "pad", ["x", [2, 4, 3, 1]], EXACT, {"x": X4}, mode="reflect"),
    op_case("pad reflect 3d", "pad", ["x", [1, 2, 2, 1, 1, 2]], EXACT, {"x": X5}, mode="reflect"),
    op_case("pad reflect no batch", "pad", ["x", [2, 1, 1, 2]], EXACT, {"x": [3, 6, 5]}, mode="reflect"),
    op_case("pad reflect negative", "pad", ["x", [-1, 3]], EXACT, {"x": X3}, mode="reflect"),
    op_case("pad replicate 1d", "pad", ["x", [4, 1]], EXACT, {"x": X3}, mode="replicate"),
    op_case("pad replicate 2d", "pad", ["x", [3, 0, 2, 5]], EXACT, {"x": X4}, mode="replicate"),
    op_case("pad replicate 3d", "pad", ["x", [2, 1, 0, 3, 1, 1]], EXACT, {"x": X5}, mode="replicate"),
    op_case("pad circular 1d", "pad", ["x", [3, 2]], EXACT, {"x": X3}, mode="circular"),
    op_case("pad circular 2d", "pad", ["x", [2, 5, 3, 1]], EXACT, {"x": X4}, mode="circular"),
    op_case("pad circular 3d", "pad", ["x", [1, 2, 3, 0, 2, 1]], EXACT, {"x": X5}, mode="circular"),
    op_case("pad circular negative", "pad", ["x", [-2, 3, 1, -1]], EXACT, {"x": X4}, mode="circular"),
    op_case("pad circular negative other side", "pad", ["x", [2, -1, -1, 2]], EXACT, {"x": X4}, mode="circular"),
    strided("pad reflect strided", "pad", [[2, 1, 1, 3]], EXACT, {"x": X4}, mode="reflect"),
    strided("pad constant strided", "pad", [[1, 1, 2, 2]], EXACT, {"x": X4}, value=1.0),
    module_case("ZeroPad2d", {"type": "ZeroPad2d", "padding": [1, 2, 0, 3]}, EXACT, {"x": X4}),
    module_case("ConstantPad1d", {"type": "ConstantPad1d", "padding": 2, "value": 3.5}, EXACT, {"x": X3}),
    module_case("ConstantPad3d", {"type": "ConstantPad3d", "padding": [1, 0, 2, 1, 0, 1], "value": -1.0}, EXACT,
                {"x": X5}),
    module_case("ReflectionPad1d", {"type": "ReflectionPad1d", "padding": [2, 3]}, EXACT, {"x": X3}),
    module_case("ReflectionPad2d", {"type": "ReflectionPad2d", "padding": 2}, EXACT, {"x": X4}),
    module_case("ReflectionPad3d", {"type": "ReflectionPad3d", "padding": 1}, EXACT, {"x": X5}),
    module_case("ReplicationPad1d", {"type": "ReplicationPad1d", "padding": [3, 1]}, EXACT, {"x": X3}),
    module_case("ReplicationPad2d", {"type": "ReplicationPad2d", "padding": [1, 2, 3, 4]}, EXACT, {"x": X4}),
    module_case("ReplicationPad3d", {"type": "ReplicationPad3d", "padding": 2}, EXACT, {"x": X5}),

    # ---- interpolate ----
    interp("nearest scale 2", X4, EXACT, scale_factor=2.0),
    interp("nearest scale 1.5", X4, EXACT, scale_factor=1.5),
    interp("nearest scale 0.6", [1, 2, 11, 9], EXACT, scale_factor=0.6),
    interp("nearest scale per dim", X4, EXACT, scale_factor=[1.7, 2.3]),
    interp("nearest size", X4, EXACT, size=[7, 13]),
    interp("nearest size down", [1, 2, 13, 11], EXACT, size=[5, 4]),
    interp("nearest 1d", X3, EXACT, scale_factor=2.6),
    interp("nearest 3d", X5, EXACT, size=[5, 7, 3]),
    interp("nearest recompute", X4, EXACT, scale_factor=1.7, recompute_scale_factor=True),
    interp("nearest-exact scale", X4, EXACT, scale_factor=1.7, mode="nearest-exact"),
    interp("nearest-exact size", [1, 2, 13, 11], EXACT, size=[5, 17], mode="nearest-exact"),
    interp("nearest-exact 1d", X3, EXACT, size=11, mode="nearest-exact"),
    interp("nearest-exact 3d", X5, EXACT, scale_factor=0.7, mode="nearest-exact"),
    interp("linear", X3, size=12, mode="linear"),
    interp("linear align_corners", X3, size=12, mode="linear", align_corners=True),
    interp("linear scale", X3, scale_factor=1.37, mode="linear"),
    interp("linear down", [2, 3, 17], size=6, mode="linear"),
    interp("bilinear", X4, size=[9, 11], mode="bilinear"),
    interp("bilinear align_corners", X4, size=[9, 11], mode="bilinear", align_corners=True),
    interp("bilinear scale", X4, scale_factor=1.37, mode="bilinear"),
    interp("bilinear scale per dim", X4, scale_factor=[0.5, 2.25], mode="bilinear"),
    interp("bilinear recompute", X4, scale_factor=1.37, mode="bilinear", recompute_scale_factor=True),
    interp("bilinear down", [1, 2, 13, 11], size=[5, 4], mode="bilinear"),
    interp("bilinear same height", X4, size=[6, 9], mode="bilinear"),
    interp("bilinear align_corners to one", X4, size=[1, 4], mode="bilinear", align_corners=True),
    interp("bicubic", X4, size=[9, 11], mode="bicubic"),
    interp("bicubic align_corners", X4, size=[9, 11], mode="bicubic", align_corners=True),
    interp("bicubic scale", X4, scale_factor=2.3, mode="bicubic"),
    interp("bicubic down", [1, 2, 13, 11], size=[5, 4], mode="bicubic"),
    interp("trilinear", X5, size=[4, 6, 9], mode="trilinear"),
    interp("trilinear align_corners", X5, size=[5, 3, 8], mode="trilinear", align_corners=True),
    interp("trilinear scale", X5, scale_factor=1.5, mode="trilinear"),
    interp("area", [2, 3, 11, 9], size=[4, 5], mode="area"),
    interp("area up", X4, size=[8, 7], mode="area"),
    interp("area scale", [2, 3, 11, 9], scale_factor=0.5, mode="area"),
    interp("area 1d", [2, 3, 13], size=5, mode="area"),
    interp("area 3d", [1, 2, 5, 7, 6], size=[2, 3, 4], mode="area"),
    strided("interpolate bilinear strided", "interpolate", [], ELEMENTWISE, {"x": X4}, size=[7, 8],
            mode="bilinear"),
    strided("interpolate nearest strided", "interpolate", [], EXACT, {"x": X4}, scale_factor=2.0),
    graph_case("interpolate bilinear channels_last", [
        {"out": "t", "op": "permute", "args": ["x", [0, 3, 1, 2]]},
        {"out": "y", "op": "interpolate", "args": ["t"], "size": [9, 4], "mode": "bilinear"}], ["y"], ELEMENTWISE,
        {"x": [2, 6, 5, 3]}),
    op_case("upsample", "upsample", ["x"], ELEMENTWISE, {"x": X4}, scale_factor=2.0, mode="bilinear"),
    op_case("upsample_nearest", "upsample_nearest", ["x"], EXACT, {"x": X4}, size=[9, 7]),
    op_case("upsample_bilinear", "upsample_bilinear", ["x"], ELEMENTWISE, {"x": X4}, scale_factor=1.5),
    module_case("Upsample nearest", {"type": "Upsample", "scale_factor": 2.0}, EXACT, {"x": X4}),
    module_case("Upsample bilinear", {"type": "Upsample", "scale_factor": 1.5, "mode": "bilinear",
                                      "align_corners": False}, ELEMENTWISE, {"x": X4}),
    module_case("Upsample bicubic size", {"type": "Upsample", "size": [10, 8], "mode": "bicubic",
                                          "align_corners": True}, ELEMENTWISE, {"x": X4}),
    module_case("Upsample trilinear", {"type": "Upsample", "scale_factor": 2.0, "mode": "trilinear"}, ELEMENTWISE,
                {"x": X5}),
    module_case("UpsamplingNearest2d", {"type": "UpsamplingNearest2d", "scale_factor": 3.0}, EXACT, {"x": X4}),
    module_case("UpsamplingBilinear2d", {"type": "UpsamplingBilinear2d", "size": [9, 13]}, ELEMENTWISE, {"x": X4}),

    # ---- pixel shuffles ----
    op_case("pixel_shuffle", "pixel_shuffle", ["x", 2], EXACT, {"x": [2, 8, 3, 4]}),
    op_case("pixel_shuffle 5d", "pixel_shuffle", ["x", 3], EXACT, {"x": [2, 2, 9, 2, 3]}),
    op_case("pixel_unshuffle", "pixel_unshuffle", ["x", 2], EXACT, {"x": [2, 3, 6, 4]}),
    strided("pixel_unshuffle strided", "pixel_unshuffle", [2], EXACT, {"x": [2, 3, 4, 6]}),
    module_case("PixelShuffle", {"type": "PixelShuffle", "upscale_factor": 2}, EXACT, {"x": [1, 12, 3, 5]}),
    module_case("PixelUnshuffle", {"type": "PixelUnshuffle", "downscale_factor": 3}, EXACT, {"x": [1, 2, 6, 9]}),

    # ---- flip, roll, repeat, tile, repeat_interleave ----
    op_case("flip", "flip", ["x", [0, 2]], EXACT, {"x": X4}),
    op_case("flip last", "flip", ["x", [-1]], EXACT, {"x": X4}),
    strided("flip strided", "flip", [[1, -1]], EXACT, {"x": X4}),
    op_case("roll flattened", "roll", ["x", 7], EXACT, {"x": X4}),
    op_case("roll dims", "roll", ["x", [2, -3]], EXACT, {"x": X4}, dims=[1, 3]),
    op_case("roll one dim", "roll", ["x", -8], EXACT, {"x": X4}, dims=2),
    op_case("roll same dim twice", "roll", ["x", [1, 2]], EXACT, {"x": X4}, dims=[3, 3]),
    strided("roll strided flattened", "roll", [4], EXACT, {"x": X4}),
    op_case("repeat", "repeat", ["x", 2, 1, 3], EXACT, {"x": [3, 4, 5]}),
    op_case("repeat new dims", "repeat", ["x", 2, 3, 1, 2], EXACT, {"x": [4, 5]}),
    strided("repeat strided", "repeat", [1, 2, 2], EXACT, {"x": [2, 3, 4]}),
    op_case("tile", "tile", ["x", [2, 3]], EXACT, {"x": [3, 4, 5]}),
    op_case("tile more dims", "tile", ["x", [2, 1, 1, 2]], EXACT, {"x": [3, 4, 5]}),
    op_case("repeat_interleave", "repeat_interleave", ["x", 3], EXACT, {"x": [2, 3, 4]}),
    op_case("repeat_interleave dim", "repeat_interleave", ["x", 2], EXACT, {"x": [2, 3, 4]}, dim=1),
    strided("repeat_interleave strided", "repeat_interleave", [3], EXACT, {"x": [2, 3, 4]}, dim=-1),

    # ---- index_select, gather, take_along_dim ----
    op_case("index_select", "index_select", ["x", 1, "i"], EXACT, {"x": [3, 10, 4], "i": ([6], IDX)}),
    op_case("index_select last", "index_select", ["x", -1, "i"], EXACT, {"x": [3, 4, 10], "i": ([12], IDX)}),
    strided("index_select strided", "index_select", [1, "i"], EXACT, {"x": [3, 4, 10], "i": ([5], IDX)}),
    op_case("index_select int", "index_select", ["x", 0, "i"], EXACT,
            {"x": ([10, 3], IDX), "i": ([4], IDX)}),
    op_case("gather", "gather", ["x", 1, "i"], EXACT, {"x": [3, 10, 4], "i": ([3, 6, 2], IDX)}),
    op_case("gather last", "gather", ["x", -1, "i"], EXACT, {"x": [3, 4, 10], "i": ([2, 4, 15], IDX)}),
    strided("gather strided", "gather", [1, "i"], EXACT, {"x": [3, 4, 10], "i": ([3, 7, 4], IDX)}),
    op_case("take_along_dim", "take_along_dim", ["x", "i"], EXACT, {"x": [3, 10, 4], "i": ([3, 5, 4], IDX)},
            dim=1),
    op_case("take_along_dim broadcast", "take_along_dim", ["x", "i"], EXACT,
            {"x": [3, 10, 1], "i": ([1, 5, 4], IDX)}, dim=1),
    op_case("take_along_dim flat", "take_along_dim", ["x", "i"], EXACT, {"x": [2, 5], "i": ([3, 4], IDX)}),

    # ---- getitem (references below) ----
    op_case("getitem int", "getitem", ["x", 1], EXACT, {"x": X4}),
    op_case("getitem slices", "getitem", ["x", [{"slice": [None, None, None]}, {"slice": [1, 5, 2]}]], EXACT,
            {"x": X4}),
    op_case("getitem negative", "getitem", ["x", [-1, {"slice": [-4, None, None]}, -2]], EXACT, {"x": X4}),
    op_case("getitem ellipsis none", "getitem", ["x", ["...", None, {"slice": [None, -1, 3]}]], EXACT, {"x": X4}),
    op_case("getitem none first", "getitem", ["x", [None, 0, "...", 2]], EXACT, {"x": X4}),
    op_case("getitem clamped", "getitem", ["x", [{"slice": [1, 100, None]}, {"slice": [-100, 2, None]}]], EXACT,
            {"x": X4}),
    op_case("getitem tensor", "getitem", ["x", "i"], EXACT, {"x": [10, 3], "i": ([2, 3], IDX)}),
    op_case("getitem tensor middle", "getitem", ["x", [{"slice": [None, None, 2]}, "i", 1]], EXACT,
            {"x": [3, 10, 4], "i": ([5], IDX)}),
    graph_case("getitem strided", [{"out": "t", "op": "transpose", "args": ["x", 0, 2]},
                                   {"out": "y", "op": "getitem", "args": ["t", [1, {"slice": [None, None, 2]}]]}],
               ["y"], EXACT, {"x": X4}),

    # ---- views and copies ----
    op_case("expand_as", "expand_as", ["x", "w"], EXACT, {"x": [3, 1, 5], "w": [2, 3, 4, 5]}),
    op_case("broadcast_to", "broadcast_to", ["x", [2, 3, 4, 5]], EXACT, {"x": [4, 1]}),
    op_case("movedim", "movedim", ["x", 1, -1], EXACT, {"x": X4}),
    op_case("movedim lists", "movedim", ["x", [0, 3], [2, 0]], EXACT, {"x": X4}),
    op_case("moveaxis", "moveaxis", ["x", -1, 0], EXACT, {"x": X4}),
    op_case("swapaxes", "swapaxes", ["x", 0, -1], EXACT, {"x": X4}),
    op_case("swapdims", "swapdims", ["x", 1, 2], EXACT, {"x": X4}),
    strided("clone strided", "clone", [], EXACT, {"x": X4}),
    op_case("clone", "clone", ["x"], EXACT, {"x": X4}),

    # ---- products ----
    op_case("dot", "dot", ["x", "w"], GEMM, {"x": [17], "w": [17]}),
    op_case("mv", "mv", ["x", "w"], GEMM, {"x": [5, 7], "w": [7]}),
    strided("mv strided", "mv", ["w"], GEMM, {"x": [7, 5], "w": [7]}),
    op_case("outer", "outer", ["x", "w"], EXACT, {"x": [5], "w": [7]}),
    op_case("ger", "ger", ["x", "w"], EXACT, {"x": [4], "w": [3]}),
    op_case("einsum matmul", "einsum", ["ij,jk->ik", "x", "w"], GEMM, {"x": [4, 5], "w": [5, 3]}),
    op_case("einsum implicit", "einsum", ["ij,jk", "x", "w"], GEMM, {"x": [4, 5], "w": [5, 3]}),
    op_case("einsum implicit order", "einsum", ["kj,ji", "x", "w"], GEMM, {"x": [4, 5], "w": [5, 3]}),
    op_case("einsum bmm", "einsum", ["bij,bjk->bik", "x", "w"], GEMM, {"x": [2, 4, 5], "w": [2, 5, 3]}),
    op_case("einsum attention", "einsum", ["bhqd,bhkd->bhqk", "x", "w"], GEMM,
            {"x": [2, 3, 4, 8], "w": [2, 3, 5, 8]}),
    op_case("einsum transpose", "einsum", ["ij->ji", "x"], GEMM, {"x": [4, 5]}),
    op_case("einsum diagonal", "einsum", ["ii->i", "x"], GEMM, {"x": [5, 5]}),
    op_case("einsum trace", "einsum", ["ii", "x"], GEMM, {"x": [5, 5]}),
    op_case("einsum sum all", "einsum", ["ijk->", "x"], GEMM, {"x": [3, 4, 5]}),
    op_case("einsum sum one", "einsum", ["ijk->ki", "x"], GEMM, {"x": [3, 4, 5]}),
    op_case("einsum inner", "einsum", ["i,i->", "x", "w"], GEMM, {"x": [7], "w": [7]}),
    op_case("einsum outer", "einsum", ["i,j->ij", "x", "w"], GEMM, {"x": [4], "w": [3]}),
    op_case("einsum outer 4d", "einsum", ["ab,cd->acbd", "x", "w"], GEMM, {"x": [2, 3], "w": [4, 5]}),
    op_case("einsum batch diagonal", "einsum", ["bii,bi->bi", "x", "w"], GEMM, {"x": [2, 4, 4], "w": [2, 4]}),
    op_case("einsum ellipsis", "einsum", ["...ij,...jk->...ik", "x", "w"], GEMM,
            {"x": [2, 3, 4, 5], "w": [3, 5, 6]}),
    op_case("einsum ellipsis broadcast", "einsum", ["...ij,...jk->...ik", "x", "w"], GEMM,
            {"x": [2, 1, 4, 5], "w": [3, 5, 6]}),
    op_case("einsum ellipsis summed", "einsum", ["...i,...i", "x", "w"], GEMM, {"x": [2, 3, 4], "w": [3, 4]}),
    op_case("einsum ellipsis middle", "einsum", ["b...d->d...b", "x"], GEMM, {"x": [2, 3, 4, 5]}),
    op_case("einsum label broadcast", "einsum", ["bij,bjk->bik", "x", "w"], GEMM, {"x": [1, 4, 5], "w": [3, 5, 2]}),
    op_case("einsum three operands", "einsum", ["bn,anm,bm->ba", "x", "w", "q"], GEMM,
            {"x": [2, 4], "w": [3, 4, 5], "q": [2, 5]}),
    op_case("einsum sums one-sided", "einsum", ["ij,kl->ik", "x", "w"], GEMM, {"x": [3, 4], "w": [5, 2]}),
    op_case("einsum capitals", "einsum", ["Ab,bC", "x", "w"], GEMM, {"x": [3, 4], "w": [4, 2]}),
    graph_case("einsum strided", [{"out": "t", "op": "transpose", "args": ["x", 1, 2]},
                                  {"out": "y", "op": "einsum", "args": ["bij,bkj->bik", "t", "w"]}], ["y"], GEMM,
               {"x": [2, 5, 4], "w": [2, 3, 5]}),
]


def _slice(a, b, c):
    return slice(a, b, c)


REFERENCES = {
    "getitem int": lambda env: [env["x"][1]],
    "getitem slices": lambda env: [env["x"][:, 1:5:2]],
    "getitem negative": lambda env: [env["x"][-1, -4:, -2]],
    "getitem ellipsis none": lambda env: [env["x"][..., None, :-1:3]],
    "getitem none first": lambda env: [env["x"][None, 0, ..., 2]],
    "getitem clamped": lambda env: [env["x"][1:100, -100:2]],
    "getitem tensor": lambda env: [env["x"][env["i"]]],
    "getitem tensor middle": lambda env: [env["x"][::2, env["i"], 1]],
    "getitem strided": lambda env: [env["x"].transpose(0, 2)[1, ::2]],
}
