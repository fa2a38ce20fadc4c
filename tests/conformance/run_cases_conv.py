"""
run_cases_conv.py - run_conformance.py's cases of the conv family: conv1d/2d/3d,
conv_transpose1d/2d/3d, bilinear (src/run/kernels/conv.c), the pools
(pool.c) and the norms (norm.c), as operators and as the modules that run
through them.
"""
from run_cases import op_case, module_case, graph_case, GEMM, ELEMENTWISE, EXACT


def conv(name, type_, shape, **kw):
    return module_case(name, dict(type=type_, **kw), GEMM, {"x": shape})


CONV = [
    conv("Conv3d", "Conv3d", [2, 3, 6, 7, 5], in_channels=3, out_channels=4, kernel_size=3, stride=[1, 2, 1],
         padding=1),
    conv("Conv3d groups dilation no bias", "Conv3d", [1, 4, 7, 6, 8], in_channels=4, out_channels=6,
         kernel_size=[2, 3, 3], groups=2, dilation=[1, 2, 1], padding=[0, 2, 1], bias=False),
    conv("Conv3d 1x1x1 unbatched", "Conv3d", [3, 4, 5, 2], in_channels=3, out_channels=2, kernel_size=1),
    conv("Conv3d same", "Conv3d", [1, 2, 5, 6, 4], in_channels=2, out_channels=3, kernel_size=[2, 3, 4],
         padding="same"),
    conv("Conv1d unbatched dilation", "Conv1d", [3, 13], in_channels=3, out_channels=4, kernel_size=3, dilation=3,
         padding=2),
    conv("Conv1d valid groups", "Conv1d", [2, 6, 9], in_channels=6, out_channels=9, kernel_size=2, groups=3,
         padding="valid"),
    conv("ConvTranspose1d", "ConvTranspose1d", [2, 3, 7], in_channels=3, out_channels=5, kernel_size=3, stride=2),
    conv("ConvTranspose1d unbatched padding", "ConvTranspose1d", [4, 6], in_channels=4, out_channels=2,
         kernel_size=4, stride=3, padding=1, output_padding=2, bias=False),
    conv("ConvTranspose2d", "ConvTranspose2d", [2, 4, 5, 6], in_channels=4, out_channels=3, kernel_size=3, stride=2,
         padding=1, output_padding=1),
    conv("ConvTranspose2d groups dilation", "ConvTranspose2d", [1, 6, 4, 5], in_channels=6, out_channels=4,
         kernel_size=[3, 2], stride=[1, 2], padding=[2, 0], groups=2, dilation=[2, 3]),
    conv("ConvTranspose2d stride 1", "ConvTranspose2d", [2, 3, 4, 4], in_channels=3, out_channels=3, kernel_size=1),
    conv("ConvTranspose3d", "ConvTranspose3d", [2, 3, 3, 4, 5], in_channels=3, out_channels=2, kernel_size=[2, 3, 2],
         stride=2, padding=[0, 1, 1], output_padding=[1, 0, 1]),
    conv("ConvTranspose3d groups unbatched", "ConvTranspose3d", [4, 3, 3, 3], in_channels=4, out_channels=6,
         kernel_size=2, groups=2, dilation=2, bias=False),
    module_case("ConvTranspose2d output_size", {"type": "ConvTranspose2d", "in_channels": 2, "out_channels": 3,
                                                "kernel_size": 3, "stride": 2}, GEMM, {"x": [1, 2, 4, 5]},
                output_size=[10, 12]),
    op_case("conv3d op", "conv3d", ["x", "w", "b"], GEMM, {"x": [2, 2, 4, 5, 6], "w": [4, 2, 2, 2, 3], "b": [4]},
            stride=[2, 1, 2], padding=[1, 0, 1]),
    op_case("conv_transpose2d op", "conv_transpose2d", ["x", "w", "b"], GEMM,
            {"x": [2, 4, 3, 5], "w": [4, 3, 2, 3], "b": [6]}, stride=2, groups=2, output_padding=1, dilation=1),
    graph_case("conv2d on a permuted input", [{"out": "p", "op": "permute", "args": ["x", [0, 3, 1, 2]]},
                                              {"out": "y", "op": "conv2d", "args": ["p", "w"], "padding": 1}],
               ["y"], GEMM, {"x": [2, 6, 5, 3], "w": [4, 3, 3, 3]}),
    graph_case("conv_transpose1d on a transposed weight",
               [{"out": "t", "op": "transpose", "args": ["w", 0, 1]},
                {"out": "y", "op": "conv_transpose1d", "args": ["x", "t"], "stride": 2}],
               ["y"], GEMM, {"x": [2, 3, 6], "w": [5, 3, 3]}),
    module_case("Bilinear", {"type": "Bilinear", "in1_features": 5, "in2_features": 4, "out_features": 3}, GEMM,
                {"x": [2, 3, 5], "z": [2, 3, 4]}, args=("x", "z")),
    module_case("Bilinear no bias", {"type": "Bilinear", "in1_features": 3, "in2_features": 6, "out_features": 2,
                                     "bias": False}, GEMM, {"x": [7, 3], "z": [7, 6]}, args=("x", "z")),
    graph_case("bilinear on a transposed input", [{"out": "t", "op": "transpose", "args": ["x", 0, 1]},
                                                  {"out": "y", "op": "bilinear", "args": ["t", "z", "w"]}],
               ["y"], GEMM, {"x": [4, 5], "z": [5, 3], "w": [2, 4, 3]}),
]

CASES = CONV
